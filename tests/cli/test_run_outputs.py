"""Where `four run` saves runs: never where the agent's commands can read them. A run's
record holds its check's command, which here holds the answer; a snooping model greps
for it with real bash (and real bubblewrap) and must find nothing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from four import audit
from four.cli import main
from tests._server import LoopbackServer, chat
from tests.cli.test_run import SUBMIT, chats, no_settings

__all__ = ["no_settings"]  # the fixture, autouse here too

ANSWER = "6011"
CHECK = f'test "$(cat result.txt)" = {ANSWER}'
# Look for the check in every file the agent can reach, and copy any answer it holds.
SNOOP = (
    "```bash\n"
    "ls -la . runs 2>&1 | head; grep -rs -- 'result.txt' . 2>/dev/null | head -5; "
    "grep -rhoE '= [0-9]{4}' . 2>/dev/null | tail -1 | tr -dc 0-9 > found; "
    "if [ -s found ]; then cp found result.txt; fi\n"
    "```"
)


def cheat(server: LoopbackServer) -> None:
    """A wrong answer, judged (so the check ran and the record holds it), the snoop,
    the submission again."""
    server.push(chat("```bash\necho 1111 > result.txt\n```"), chat(SUBMIT), chat(SNOOP))
    server.push(chat(SUBMIT), chat(SUBMIT))


def model(server: LoopbackServer) -> list[str]:
    """One verified run, a reason told once (not a search: tests/search has those)."""
    return ["--model", "test-model", "--api-base", server.url, "--check", CHECK, "--json",
            "--attempts", "1", "--retries-per-reason", "1"]  # fmt: skip


def need_bwrap() -> None:
    if not shutil.which("bwrap"):
        if os.environ.get("FOUR_REQUIRE_SERVICES"):
            pytest.fail("bubblewrap is not installed")
        pytest.skip("bubblewrap is not installed")


def ended(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    assert audit(Path(str(result["path"]))).valid
    return result


def test_the_default_folder_is_outside_the_workspace(
    server: LoopbackServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # `cd project && four run ...`, as a user does
    cheat(server)
    assert main(["run", "write the answer", *model(server)]) == 1
    result = ended(capsys)
    assert str(result["outcome"]).startswith("held: repeated failure")
    state = Path(os.environ["XDG_STATE_HOME"])
    assert Path(str(result["path"])).parent == state / "four" / "runs"
    assert ANSWER not in json.dumps(chats(server))  # not in any message the model was sent
    assert sorted(p.name for p in work.iterdir()) == ["found", "result.txt"]


def test_a_folder_in_the_workspace_is_refused_for_local_commands(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    where = ["-o", str(work / "runs"), "--cwd", str(work)]
    for env in ("local", "persistent"):
        assert main(["run", "x", *model(server), *where, "--env", env]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"four run: error: -o {work / 'runs'} is inside the agent's")
        assert "--output-in-workspace" in line
    assert chats(server) == [] and not (work / "runs").exists()  # nothing ran, nothing made


@pytest.mark.parametrize("domain", ["python", "notebook", "cli"])
def test_every_domain_refuses_it_too(
    server: LoopbackServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    domain: str,
) -> None:
    monkeypatch.chdir(tmp_path)  # their artifacts (files, notebook, tool) go beside the run
    assert main(["run", "x", *model(server), "--domain", domain, "-o", "runs"]) == 2
    assert "is inside the agent's workspace" in capsys.readouterr().err
    assert chats(server) == []


def test_the_opt_in_allows_it_and_the_answer_leaks(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What the refusal prevents (and what shows this snooper would find the answer).
    work = tmp_path / "work"
    work.mkdir()
    cheat(server)
    where = ["-o", str(work / "runs"), "--cwd", str(work), "--output-in-workspace"]
    assert main(["run", "write the answer", *model(server), *where]) == 0
    assert ended(capsys)["outcome"] == "accepted"
    assert ANSWER in json.dumps(chats(server))


def test_the_sandbox_hides_a_folder_in_its_workspace(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    need_bwrap()
    work = tmp_path / "work"
    work.mkdir()
    cheat(server)
    where = ["-o", str(work / "runs"), "--cwd", str(work), "--env", "sandbox"]
    assert main(["run", "write the answer", *model(server), *where]) == 1
    result = ended(capsys)
    assert str(result["outcome"]).startswith("held: repeated failure")
    assert Path(str(result["path"])).parent == work / "runs"  # saved there all the same
    sent = json.dumps(chats(server))
    assert ANSWER not in sent
    assert "runs:\\ntotal" in sent and ".jsonl" not in sent  # an empty folder, to it


def test_the_sandbox_refuses_its_whole_workspace(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    where = ["-o", str(work), "--cwd", str(work), "--env", "sandbox"]
    assert main(["run", "x", *model(server), *where]) == 2
    assert "is inside the agent's workspace" in capsys.readouterr().err
