"""With `approaches`, the attempts after the first are told, in turn, a way to go about the
task after it ("" tells the task alone); each link records the one told, the group record
the list, and an audit refuses a trajectory whose prompt or link says otherwise. Scripted
models over real bash; `four run --check` gives the domain's approaches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from four.domains import get_domain
from four.search import audit_group
from four.search._group import write_record
from tests._server import LoopbackServer, chat
from tests.search.test_recap import SUBMIT, TASK, search

WRONG = ["```bash\necho 5 > answer.txt\n```", SUBMIT, "```bash\nls\n```", SUBMIT]
RIGHT = ["```bash\necho 4 > answer.txt\n```", SUBMIT]
APPROACHES = ("", "Do the work in Python.", "Look at every file first.")


def test_attempts_after_the_first_are_told_the_approaches_in_turn(tmp_path: Path) -> None:
    scripts = {1: WRONG, 2: WRONG, 3: WRONG, 4: WRONG, 5: RIGHT}
    told, found = search(tmp_path, scripts, approaches=APPROACHES)
    assert found.ended == "accepted"  # type: ignore[attr-defined]
    assert told.tasks == {
        1: TASK,
        2: TASK,  # "": the task alone
        3: f"{TASK}\n\nDo the work in Python.",
        4: f"{TASK}\n\nLook at every file first.",
        5: TASK,  # round again
    }
    links = [m.link for m in found.members]  # type: ignore[attr-defined]
    assert [link.approach for link in links] == [
        None,
        None,
        "Do the work in Python.",
        "Look at every file first.",
        None,
    ]
    record = found.record  # type: ignore[attr-defined]
    data = json.loads(record.read_text())
    assert data["approaches"] == list(APPROACHES)
    assert data["members"][2]["approach"] == "Do the work in Python."
    assert "approach" not in data["members"][1]
    assert audit_group(record).valid, audit_group(record).errors


def test_without_approaches_the_record_is_as_before(tmp_path: Path) -> None:
    told, found = search(tmp_path, {1: WRONG, 2: RIGHT})
    assert told.tasks == {1: TASK, 2: TASK}
    data = json.loads(found.record.read_text())  # type: ignore[attr-defined]
    assert "approaches" not in data
    assert all("approach" not in m for m in data["members"])


def test_an_audit_refuses_an_approach_the_record_does_not_give(tmp_path: Path) -> None:
    _, found = search(tmp_path, {1: WRONG, 2: WRONG, 3: RIGHT}, approaches=APPROACHES)
    record = found.record  # type: ignore[attr-defined]
    data = json.loads(record.read_text())
    del data["seal"]
    data["approaches"] = ["", "Do it in awk.", "Look at every file first."]
    write_record(record.parent, str(data["group"]), data)  # sealed again, as a forger would
    errors = audit_group(record).errors
    assert any("attempt 3's link is wrong: approach" in e for e in errors), errors


def test_an_audit_refuses_a_prompt_without_its_approach(tmp_path: Path) -> None:
    from four import regex_parse, run, save_trajectory
    from four.checks import command_check, verify
    from four.execute import local_env
    from four.invoke import scripted_invoke
    from four.search import Attempt, attempts

    work = tmp_path / "work"
    work.mkdir()

    def make(a: Attempt) -> Path:
        replies = WRONG if a.index < 3 else RIGHT
        # Attempt 3 runs as its link says, but is told the task alone: not as the group says.
        prompt = a.prompt() if a.index < 3 else TASK
        return run(a.invoke(scripted_invoke(replies)), regex_parse(), a.env(local_env(cwd=a.cwd)),
                   a.emit(save_trajectory(tmp_path / "runs")), "", prompt, 4,
                   check=verify(command_check("grep -qx 4 answer.txt"), retries_per_reason=1),
                   watch=a.watch)  # fmt: skip

    found = attempts(make, 3, task=TASK, workspace=work, approaches=APPROACHES)
    assert found.ended == "accepted" and found.members[2].link.approach is not None
    errors = audit_group(found.record or "").errors
    assert errors == ("attempt 3: its task is not the group's",), errors


@pytest.mark.parametrize(
    "approaches", [["x"], ("x", 1), (" padded",)], ids=["list", "number", "blanks"]
)
def test_approaches_must_be_a_tuple_of_trimmed_texts(tmp_path: Path, approaches: object) -> None:
    with pytest.raises(TypeError, match="approaches must be a tuple of texts"):
        search(tmp_path, {1: RIGHT}, approaches=approaches)


def test_four_run_tells_attempt_3_the_bash_domain_s_python_approach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from four.cli import main
    from tests._server import Answer, Request

    python = get_domain("bash").approaches[1]

    def model(request: Request) -> Answer:
        """Right only when told the Python approach; else a wrong answer, then submissions."""
        messages = [m for m in request.json()["messages"] if isinstance(m, dict)]  # type: ignore[union-attr]
        said = any(m.get("role") == "assistant" for m in messages)
        told = next(m["content"] for m in messages if m.get("role") == "user")
        if told == f"{TASK}\n\n{python}":
            return chat(SUBMIT if said else RIGHT[0])
        return chat(SUBMIT if said else "```bash\necho 5 > answer.txt\n```")

    def four_run(*extra: str) -> tuple[Path, str, str]:
        work = tmp_path / f"work{len(extra)}"
        work.mkdir()
        with LoopbackServer(model) as server:
            status = main(["run", TASK, "--cwd", str(work), "--model", "m", "--api-base",
                           server.url, "-o", str(tmp_path / f"runs{len(extra)}"), "--check",
                           "grep -qx 4 answer.txt", "--retries-per-reason", "1",
                           "--attempts", "4", "--max-steps", "4", *extra])  # fmt: skip
        assert status == 0
        assert (work / "answer.txt").read_text() == "4\n"
        out, err = capsys.readouterr()
        return tmp_path / f"runs{len(extra)}", out, err

    runs, _, said = four_run()
    assert (
        "attempt 3 of 4 · temperature 0.7 · seed 2 · told: Do the work in Python this time" in said
    )
    record = sorted(runs.glob("*.attempts.json"))[0]
    members = json.loads(record.read_text())["members"]
    assert [m.get("approach") for m in members] == [None, None, python]
    assert members[2]["outcome"] == "accepted"
    assert audit_group(record).valid
    _, out, _ = four_run("--json")
    shown = json.loads(out)["attempts"]["members"]
    assert [m["approach"] for m in shown] == [None, None, python]
