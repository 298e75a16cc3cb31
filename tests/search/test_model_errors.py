"""A model call that fails ends its attempt, not the search: a request that timed out or
a server error after G's retries starts the next attempt (from a pristine copy, with
its own sampling), and the group record says why the attempt before ended. A key the
provider refuses ends the search: every attempt would meet it. Against the loopback
OpenAI-protocol server, through litellm over real HTTP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from four import regex_parse, save_trajectory
from four._outcomes import Accepted
from four.checks import command_check, verify
from four.execute import local_env
from four.invoke import litellm_invoke, retry_invoke
from four.search import Attempt, attempts, audit_group
from tests._server import Answer, LoopbackServer, chat, error, hang

JUNK = "```bash\necho junk > junk.txt && echo 5 > answer.txt\n```"
RIGHT = "```bash\ntest ! -e junk.txt && echo 4 > answer.txt\n```"
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def maker(server: LoopbackServer, runs: Path) -> Callable[[Attempt], Path]:
    check = verify(command_check("grep -qx 4 answer.txt"), retries_per_reason=1)

    def make(a: Attempt) -> Path:
        G = litellm_invoke("openai/m", api_base=server.url, api_key="k", timeout=1.0, **a.sampling)
        return a.run(
            retry_invoke(G, max_attempts=2, base_delay=0.01, max_delay=0.01),
            regex_parse(),
            local_env(cwd=a.cwd),
            save_trajectory(runs),
            max_steps=6,
            check=check,
        )

    return make


def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "mine.txt").write_text("the user's own file\n")
    return folder


def second_attempt(server: LoopbackServer, tmp_path: Path, *failures: Answer) -> None:
    """Attempt 1 writes a wrong answer, then its model call fails (twice: G's retry
    too); attempt 2 does the task in a pristine copy and is accepted."""
    server.push(chat(JUNK), *failures, chat(RIGHT), chat(SUBMIT))
    folder, runs = work(tmp_path), tmp_path / "runs"
    search = attempts(maker(server, runs), 3, task="2 + 2 into answer.txt", workspace=folder)
    first, second = search.members
    assert first.outcome.text.startswith("model_error: ")
    assert isinstance(second.outcome, Accepted) and search.ended == "accepted"
    assert second.link.after == first.outcome.text  # the next attempt's link says why
    assert sorted(p.name for p in folder.iterdir()) == ["answer.txt", "mine.txt"]
    assert (folder / "answer.txt").read_text() == "4\n"
    # The group record names both ends; the whole group audits valid.
    assert search.record is not None
    found = audit_group(search.record)
    assert found.valid, found.errors
    assert (found.members, found.result, found.accepted) == (2, 2, True)
    temperatures = [b.get("temperature") for b in server.bodies("/v1/chat/completions")]
    assert temperatures[-2:] == [0.7, 0.7]  # attempt 2 samples as its link says


def test_a_request_that_times_out_ends_the_attempt_and_the_next_one_starts(
    server: LoopbackServer, tmp_path: Path
) -> None:
    second_attempt(server, tmp_path, hang(), hang())


def test_a_server_error_after_g_s_retries_ends_the_attempt_and_the_next_one_starts(
    server: LoopbackServer, tmp_path: Path
) -> None:
    second_attempt(server, tmp_path, error(500, "boom"), error(500, "boom"))


def test_a_refused_key_ends_the_search(server: LoopbackServer, tmp_path: Path) -> None:
    server.push(chat(JUNK), error(401, "invalid api key", "invalid_request_error"))
    folder, runs = work(tmp_path), tmp_path / "runs"
    search = attempts(maker(server, runs), 3, task="2 + 2 into answer.txt", workspace=folder)
    assert len(search.members) == 1
    assert search.ended is not None
    assert search.ended.startswith("stopped: model_error: authentication")
    assert len(server.bodies("/v1/chat/completions")) == 2  # no attempt 2
