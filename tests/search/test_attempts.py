"""Attempts, with scripted models over real bash: each attempt starts from a pristine copy
of the workspace, the user's folder ends holding the result's work only, the budget
covers every attempt, Ctrl-C leaves every attempt sealed, and the group record links
them so that `audit_group` notices a member dropped, added or edited."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from four import (
    Assistant,
    Message,
    System,
    Usage,
    User,
    load_trajectory,
    regex_parse,
    save_trajectory,
)
from four._outcomes import Accepted, Interrupted, Outcome, Stopped
from four.checks import command_check, verify
from four.execute import local_env, note_repeats
from four.invoke import scripted_invoke
from four.search import Attempt, AttemptLink, Budget, Search, attempts, audit_group
from four.search._group import write_record
from four.search._link import link_of

WRONG = "```bash\necho junk > junk.txt && echo 5 > answer.txt\n```"
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
# Succeeds only in a pristine copy: an earlier attempt's files would make it fail.
RIGHT = "```bash\ntest ! -e junk.txt && test ! -e answer.txt && echo 4 > answer.txt\n```"
CHECK = "grep -qx 4 answer.txt"


def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "task.txt").write_text("2 + 2\n")
    (folder / "old.txt").write_text("the user's own file\n")
    return folder


def maker(
    scripts: Mapping[int, Sequence[object]], runs: Path, *, retries: int = 1, max_steps: int = 6
) -> Callable[[Attempt], Path]:
    check = verify(command_check(CHECK), retries_per_reason=retries)

    def make(a: Attempt) -> Path:
        return a.run(
            scripted_invoke(scripts[a.index]),  # type: ignore[arg-type]
            regex_parse(),
            local_env(cwd=a.cwd),
            save_trajectory(runs),
            max_steps=max_steps,
            check=check,
        )

    return make


def test_a_held_attempt_is_followed_by_one_from_a_pristine_copy(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    scripts = {1: [WRONG, SUBMIT, SUBMIT], 2: [RIGHT, SUBMIT]}
    search = attempts(maker(scripts, runs), 4, task="2 + 2 into answer.txt", workspace=work)
    assert search.ended == "accepted"
    first, second = search.members
    assert first.outcome.text.startswith("held: repeated failure")
    assert isinstance(second.outcome, Accepted)
    assert search.result is second
    # The user's folder holds attempt 2's work and nothing of attempt 1's.
    assert sorted(p.name for p in work.iterdir()) == ["answer.txt", "old.txt", "task.txt"]
    assert (work / "answer.txt").read_text() == "4\n"
    # Attempt 2 saw the pristine copy: its command found no junk and no answer.
    assert second.path is not None
    seen = load_trajectory(second.path).messages[3]
    assert isinstance(seen, User) and seen.returncode == 0
    # Each attempt its own sealed trajectory, linked.
    links = [AttemptLink.from_json(link_of(load_trajectory(m.path).info))
             for m in search.members if m.path]  # fmt: skip
    assert [(x.index, x.of, x.seed, x.temperature) for x in links] == [
        (1, 4, 0, 0.0),
        (2, 4, 1, 0.7),
    ]
    assert links[1].after == first.outcome.text
    assert links[0].group == links[1].group == search.group
    found = audit_group(search.record or "")
    assert found.valid, found.errors
    assert (found.members, found.result, found.accepted, found.finished) == (2, 2, True, True)


def test_the_copies_are_gone_and_the_record_is_beside_the_trajectories(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    search = attempts(maker({1: [RIGHT, SUBMIT]}, runs), 3, task="t", workspace=work)
    assert search.ended == "accepted" and len(search.members) == 1
    assert search.record is not None and search.record.parent == runs
    assert search.record.name.endswith(".attempts.json")
    assert search.copies is None  # deleted


def test_no_accepted_attempt_leaves_the_last_one_s_work(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    last = "```bash\necho 6 > answer.txt\n```"
    scripts = {1: [WRONG, SUBMIT, SUBMIT], 2: [last, SUBMIT, SUBMIT]}
    search = attempts(maker(scripts, runs), 2, task="t", workspace=work)
    assert search.ended == "attempts spent" and not search.accepted
    assert search.result is search.members[-1]
    assert (work / "answer.txt").read_text() == "6\n"
    assert not (work / "junk.txt").exists()
    assert audit_group(search.record or "").valid


def test_a_reply_that_never_submits_runs_out_of_steps_and_the_next_attempt_starts(
    tmp_path: Path,
) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    wander = [f"```bash\necho {i}\n```" for i in range(3)]
    search = attempts(
        maker({1: wander, 2: [RIGHT, SUBMIT]}, runs, max_steps=3), 2, task="t", workspace=work
    )
    assert [m.outcome.text for m in search.members] == ["max_steps_reached", "accepted"]


def test_a_looping_attempt_is_stopped_and_the_next_one_starts(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    same = ["```bash\ncat task.txt\n```"] * 6
    search = attempts(maker({1: same, 2: [RIGHT, SUBMIT]}, runs), 2, task="t", workspace=work)
    first = search.members[0]
    assert first.outcome.text.startswith("stopped: looping: the same command and output 3 times")
    assert first.steps == 3  # not the 6 the run allowed
    assert search.ended == "accepted"


@pytest.mark.parametrize("period", [2, 4])
def test_an_attempt_going_round_a_few_commands_is_stopped_as_looping(
    tmp_path: Path, period: int
) -> None:
    """No command repeats the one before it, but the same few come round with the same
    outputs: after three rounds the attempt is looping."""
    work, runs = workspace(tmp_path), tmp_path / "runs"
    commands = ("cat task.txt", "ls", "pwd", "wc -c task.txt")[:period]
    block = [f"```bash\n{command}\n```" for command in commands]
    search = attempts(
        maker({1: block * 4, 2: [RIGHT, SUBMIT]}, runs, max_steps=4 * period),
        2,
        task="t",
        workspace=work,
    )
    first = search.members[0]
    assert first.outcome.text.startswith(
        f"stopped: looping: the same {period} commands and outputs 3 times in a row (cat task.txt; "
    )
    assert first.steps == 3 * period  # not the 4 rounds the run allowed
    assert search.ended == "accepted"


def test_commands_that_come_round_with_new_outputs_are_no_loop(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    grow = ["```bash\necho x >> log.txt\n```", "```bash\ncat log.txt\n```"] * 3
    search = attempts(maker({1: grow}, runs, max_steps=6), 1, task="t", workspace=work)
    assert [m.outcome.text for m in search.members] == ["max_steps_reached"]


def test_a_looping_attempt_is_stopped_though_each_output_warns_of_the_repeat(
    tmp_path: Path,
) -> None:
    """`four run`'s environment warns of a repeat in the output ("... 2 times in a row"),
    so no two outputs are alike: the loop is still seen, by the output beneath."""
    work, runs = workspace(tmp_path), tmp_path / "runs"
    check = verify(command_check(CHECK), retries_per_reason=1)
    scripts = {1: ["```bash\ncat task.txt\n```"] * 6, 2: [RIGHT, SUBMIT]}

    def make(a: Attempt) -> Path:
        return a.run(scripted_invoke(scripts[a.index]), regex_parse(),
                     note_repeats(local_env(cwd=a.cwd)), save_trajectory(runs), max_steps=6,
                     check=check)  # fmt: skip

    search = attempts(make, 2, task="t", workspace=work)
    first = search.members[0]
    assert first.outcome.text.startswith("stopped: looping: the same command and output 3 times")
    assert first.steps == 3 and search.ended == "accepted"


def test_a_looping_attempt_whose_work_is_done_is_accepted_by_the_last_judgement(
    tmp_path: Path,
) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    done_then_loop = [RIGHT] + ["```bash\ncat answer.txt\n```"] * 5
    search = attempts(maker({1: done_then_loop}, runs), 2, task="t", workspace=work)
    assert search.ended == "accepted" and len(search.members) == 1


def test_the_steps_budget_covers_all_attempts(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    wander = [f"```bash\necho {i}\n```" for i in range(10)]
    scripts = {1: wander, 2: wander, 3: wander}
    search: Search[Path] = Search(3, "t", workspace=work, budget=Budget(steps=5))
    search.run(maker(scripts, runs, max_steps=4))
    assert [m.steps for m in search.members] == [4, 1]
    assert search.ended is not None and search.ended.startswith("budget spent: the attempts made 5")
    assert search.spend.steps == 5


def test_the_token_budget_covers_all_attempts(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"

    def costly(history: Sequence[Message]) -> Assistant:
        return Assistant("```bash\necho more\n```", usage=Usage(60, 40))

    scripts = {i: [costly] * 10 for i in (1, 2, 3)}
    search: Search[Path] = Search(3, "t", workspace=work, budget=Budget(tokens=250))
    search.run(maker(scripts, runs, max_steps=2))
    # 100 tokens a call: two calls in attempt 1, one in attempt 2, then refused.
    outcomes = [m.outcome.text for m in search.members]
    assert outcomes[0] == "max_steps_reached"
    assert outcomes[1].startswith("cost_limit_reached: the attempts used 300 tokens")
    assert len(outcomes) == 2 and search.spend.usage.total_tokens == 300


def test_the_time_budget_covers_all_attempts(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    slow = ["```bash\nsleep 0.4\n```"] * 10
    scripts = {i: list(slow) for i in (1, 2, 3)}
    search: Search[Path] = Search(
        3, "t", workspace=work, budget=Budget(seconds=0.6), loop_repeats=0
    )
    search.run(maker(scripts, runs, max_steps=10))
    assert search.members[-1].outcome.text.startswith("time_limit_reached: the attempts took")
    assert search.ended is not None and search.ended.startswith("budget spent")
    assert len(search.members) <= 2


def test_ctrl_c_during_attempt_2_saves_both_and_the_record(tmp_path: Path) -> None:
    work, runs = workspace(tmp_path), tmp_path / "runs"

    def interrupt(history: Sequence[Message]) -> Assistant:
        raise KeyboardInterrupt

    scripts: dict[int, list[object]] = {
        1: [WRONG, SUBMIT, SUBMIT],
        2: ["```bash\necho half > half.txt\n```", interrupt],
    }
    search: Search[Path] = Search(4, "t", workspace=work)
    with pytest.raises(KeyboardInterrupt):
        search.run(maker(scripts, runs))
    first, second = search.members
    assert isinstance(second.outcome, Interrupted)
    for member in (first, second):  # both sealed
        assert member.path is not None and member.path.suffix == ".json"
    assert search.ended == "interrupted: KeyboardInterrupt"
    record = json.loads((search.record or Path()).read_text())
    assert record["finished"] and [m["index"] for m in record["members"]] == [1, 2]
    assert audit_group(search.record or "").valid
    # The user's folder holds the last attempt's work, as a plain run's would.
    assert (work / "half.txt").read_text() == "half\n" and not (work / "junk.txt").exists()


def test_a_run_without_its_record_linked_is_refused(tmp_path: Path) -> None:
    from four import run

    def unlinked(a: Attempt) -> Path:
        return run(scripted_invoke([SUBMIT]), regex_parse(), local_env(cwd=a.cwd),
                   save_trajectory(tmp_path / "runs"))  # fmt: skip

    with pytest.raises(TypeError, match=r"attempt\.emit"):
        attempts(unlinked, 2, task="t", workspace=workspace(tmp_path))


def test_wrong_arguments_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="k=0"):
        Search(0, "t")
    with pytest.raises(TypeError, match="budget must be a Budget"):
        Search(2, "t", budget=40)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="steps=0"):
        Budget(steps=0)
    with pytest.raises(NotADirectoryError):
        Search(2, "t", workspace=tmp_path / "missing").prepare()


def test_a_workspace_that_is_the_runs_folder_is_refused(tmp_path: Path) -> None:
    work = workspace(tmp_path)
    with pytest.raises(ValueError, match="is the runs' output folder itself"):
        Search(2, "t", workspace=work, keep=(work,)).prepare()


def test_the_runs_folder_inside_the_workspace_is_neither_copied_nor_touched(
    tmp_path: Path,
) -> None:
    work = workspace(tmp_path)
    runs = work / "runs"
    runs.mkdir()
    (runs / "earlier.json").write_text("{}")
    look = "```bash\ntest ! -e runs && echo 4 > answer.txt\n```"
    search = attempts(maker({1: [look, SUBMIT]}, runs), 2, task="t", workspace=work, keep=(runs,))
    assert search.ended == "accepted"
    assert (runs / "earlier.json").exists() and search.record is not None
    assert search.record.parent == runs and search.record.exists()


def test_a_search_runs_once(tmp_path: Path) -> None:
    search: Search[Path] = Search(1, "t", workspace=workspace(tmp_path))
    search.run(maker({1: [RIGHT, SUBMIT]}, tmp_path / "runs"))
    with pytest.raises(RuntimeError, match="runs once"):
        search.run(maker({1: [RIGHT, SUBMIT]}, tmp_path / "runs"))


# --- the group audit ------------------------------------------------------------------------


def _group(tmp_path: Path) -> Search[Path]:
    work, runs = workspace(tmp_path), tmp_path / "runs"
    scripts = {1: [WRONG, SUBMIT, SUBMIT], 2: [RIGHT, SUBMIT]}
    return attempts(maker(scripts, runs), 3, task="t", workspace=work)


def _reseal(path: Path, edit: Callable[[dict[str, object]], None]) -> None:
    """Edit the record and seal it again, as a forger with the format's code would."""
    record = json.loads(path.read_text())
    del record["seal"]
    edit(record)
    write_record(path.parent, str(record["group"]), record)


def test_an_edited_record_is_invalid(tmp_path: Path) -> None:
    search = _group(tmp_path)
    assert search.record is not None
    text = search.record.read_text().replace('"accepted": true', '"accepted": false')
    search.record.write_text(text)
    assert "the record's seal does not match it" in audit_group(search.record).errors[0]


def test_a_dropped_member_is_found(tmp_path: Path) -> None:
    search = _group(tmp_path)
    assert search.record is not None

    def drop_last(record: dict[str, object]) -> None:
        members = record["members"]
        assert isinstance(members, list)
        members.pop()
        record["result"], record["accepted"] = 1, False

    _reseal(search.record, drop_last)
    errors = audit_group(search.record).errors
    assert any("claims to be attempt 2 of the group" in e for e in errors), errors


def test_a_member_dropped_from_the_middle_is_found(tmp_path: Path) -> None:
    search = _group(tmp_path)
    assert search.record is not None
    _reseal(search.record, lambda r: r["members"].pop(0))  # type: ignore[attr-defined]
    errors = audit_group(search.record).errors
    assert any("attempt 1 is numbered 2" in e for e in errors), errors


def test_an_edited_member_trajectory_is_found(tmp_path: Path) -> None:
    search = _group(tmp_path)
    assert search.record is not None and search.members[0].path is not None
    path = search.members[0].path
    path.write_text(path.read_text().replace("junk", "jank"))
    errors = audit_group(search.record).errors
    assert any(e.startswith("attempt 1: ") for e in errors), errors


def test_a_member_s_wrong_seed_is_found(tmp_path: Path) -> None:
    search = _group(tmp_path)
    assert search.record is not None
    _reseal(search.record, lambda r: r.update(seed=7))
    errors = audit_group(search.record).errors
    assert any("link is wrong: seed" in e for e in errors), errors


def test_a_missing_member_file_is_found(tmp_path: Path) -> None:
    search = _group(tmp_path)
    assert search.record is not None and search.members[1].path is not None
    search.members[1].path.unlink()
    errors = audit_group(search.record).errors
    assert any(e.startswith("attempt 2: cannot read") for e in errors), errors


# --- side by side, awaited, in a batch ---------------------------------------------------


def test_attempts_side_by_side_stop_at_the_first_accepted(tmp_path: Path) -> None:
    import time

    work, runs = workspace(tmp_path), tmp_path / "runs"
    slow = ["```bash\nsleep 60\n```"] * 3
    scripts = {1: slow, 2: [RIGHT, SUBMIT], 3: slow, 4: slow}
    started = time.monotonic()
    search: Search[Path] = Search(4, "t", workspace=work, workers=2)
    search.run(maker(scripts, runs))
    assert time.monotonic() - started < 50  # attempt 1's sleep was killed, not waited for
    assert search.ended == "accepted" and search.result is not None
    assert search.result.link.index == 2
    first = search.members[0]
    assert first.outcome.text == "stopped: another attempt was accepted (attempt 2)"
    assert [m.link.index for m in search.members] == [1, 2]  # 3 and 4 never started
    assert (work / "answer.txt").read_text() == "4\n"
    found = audit_group(search.record or "")
    assert found.valid, found.errors


def test_awaited_attempts(tmp_path: Path) -> None:
    import asyncio

    work, runs = workspace(tmp_path), tmp_path / "runs"
    scripts = {1: [WRONG, SUBMIT, SUBMIT], 2: [RIGHT, SUBMIT]}
    check = verify(command_check(CHECK))

    async def make(a: Attempt) -> Path:
        return await a.arun(
            scripted_invoke(scripts[a.index]), regex_parse(), local_env(cwd=a.cwd),
            save_trajectory(runs), max_steps=6, check=check,
        )  # fmt: skip

    search: Search[Path] = Search(3, "t", workspace=work)
    asyncio.run(search.arun(make))
    assert [m.outcome.text.split(":")[0] for m in search.members] == ["held", "accepted"]
    assert (work / "answer.txt").read_text() == "4\n" and not (work / "junk.txt").exists()
    assert audit_group(search.record or "").valid


def test_an_attempt_s_run_takes_run_s_keyword_options(tmp_path: Path) -> None:
    """``a.run`` passes on ``run``'s keyword options (``LoopOptions``): an earlier history
    to resume, a clock, a watch of the caller's own, asked before the search's."""
    work, runs = workspace(tmp_path), tmp_path / "runs"
    earlier: list[Message] = [System("s"), User("earlier", "task")]

    class Mine:
        def beat(self) -> None:
            pass

        def stopped(self) -> Outcome | None:
            return Stopped("mine")

    def make(a: Attempt) -> Path:
        return a.run(scripted_invoke([SUBMIT]), regex_parse(), local_env(cwd=a.cwd),
                     save_trajectory(runs), resume=earlier, watch=Mine(), clock=lambda: 1e6)  # fmt: skip

    (member,) = attempts(make, 1, task="t", workspace=work).members
    assert member.outcome == Stopped("mine") and member.path is not None
    trajectory = load_trajectory(member.path)
    assert list(trajectory.messages[:3]) == [*earlier, User("t", "task")]
    assert trajectory.stats.started_at == 1e6


@pytest.mark.parametrize("pool", [[], ["--processes", "1"]], ids=["threads", "async"])
def test_four_batch_makes_attempts_for_each_item(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pool: list[str],
) -> None:
    from four.batch._result import read_manifest
    from four.cli._batch import batch_command
    from tests._server import Answer, LoopbackServer, Request, chat
    from tests.batch._agents import batch_args

    for name in ("FOUR_MODEL", "FOUR_API_BASE", "FOUR_ENV", "FOUR_WORKERS", "FOUR_RAY"):
        monkeypatch.delenv(name, raising=False)

    def model(request: Request) -> Answer:
        """At temperature 0 a wrong answer then submissions; sampled, the right one."""
        body = request.json()
        messages = body.get("messages")
        assert isinstance(messages, list)
        said = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
        if body.get("temperature") == 0.0:
            return chat(WRONG if not said else SUBMIT)
        return chat(RIGHT if not said else SUBMIT)

    lines = []
    for i in range(2):
        folder = tmp_path / f"w{i}"
        folder.mkdir()
        lines.append(json.dumps({"id": f"t{i}", "task": "2 + 2", "cwd": str(folder)}))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    with LoopbackServer(model) as server:
        words = [str(tasks), "--model", "m", "--api-base", server.url, "-w", "2",
                 "--check", CHECK, "--attempts", "3", "--retries-per-reason", "1", *pool]  # fmt: skip
        assert batch_command(batch_args(*words, "-o", str(tmp_path / "out"))) == 0
    assert "2 runs: accepted 2" in capsys.readouterr().out
    latest = read_manifest(tmp_path / "out")
    for i in range(2):
        assert (tmp_path / f"w{i}" / "answer.txt").read_text() == "4\n"
        assert not (tmp_path / f"w{i}" / "junk.txt").exists()
        (record,) = (tmp_path / "out" / "runs" / f"t{i}").glob("*.attempts.json")
        assert audit_group(record).valid
        assert latest[f"t{i}"].outcome == "accepted"


def test_an_attempt_that_deletes_the_copies_ends_the_search_and_the_workspace_is_kept(
    tmp_path: Path,
) -> None:
    """The small model read the copies' path in a traceback and ran `rm -rf` on it: no
    pristine start is left for another attempt, and no result's folder to promote, so
    the user's folder stays as it was, and the search says why."""
    work, runs = workspace(tmp_path), tmp_path / "runs"
    delete = '```bash\nrm -rf "$(dirname "$PWD")"\n```'
    scripts = {1: [delete, SUBMIT, SUBMIT], 2: [RIGHT, SUBMIT]}
    search = attempts(maker(scripts, runs), 3, task="t", workspace=work)
    assert len(search.members) == 1 and not search.accepted
    assert search.ended == "an attempt's commands deleted the copies: no pristine start is left"
    assert search.lost == (
        "attempt 1's copy of the workspace was deleted by its own commands: the workspace "
        "is left as it was"
    )
    assert sorted(p.name for p in work.iterdir()) == ["old.txt", "task.txt"]
    assert (work / "old.txt").read_text() == "the user's own file\n"
    assert audit_group(search.record or "").valid
