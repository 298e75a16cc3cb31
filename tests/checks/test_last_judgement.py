"""The last judgement: a run that did the work but never submitted is judged once at its end."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from four import (
    Accepted,
    ExecutionFailed,
    Held,
    Message,
    Outcome,
    StepsExhausted,
    arun,
    audit,
    load_trajectory,
    run,
    save_trajectory,
    scripted_invoke,
)
from four._types import Execute, ModelError, ModelErrorKind
from four.checks import Judgement, Verifier, command_check, verify
from four.execute import local_env
from four.parse import regex_parse
from four.quaternary import CheckResult
from four.trajectory import Verdicts
from four.types import RunInfo, RunStats, Sink
from tests.checks._verdicts import log_of, record_of

WORK = "```bash\necho 42 > result.txt\n```"
CHECK = 'test "$(cat result.txt)" = 42'


class Opened:
    """A ``check=`` that keeps the judge it made, to look at its record."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier
        self.judge: Judgement | None = None

    def open(self, env: Execute, /) -> Judgement:
        self.judge = self.verifier.open(env)
        return self.judge


class Kept:
    """An emit that saves the sealed trajectory and hands back the history and outcome."""

    def __init__(self, folder: Path) -> None:
        self.inner = save_trajectory(folder)
        self.path: Path | None = None

    def __call__(
        self, messages: Sequence[Message], outcome: Outcome, /
    ) -> tuple[list[Message], Outcome]:
        return list(messages), outcome

    def open(self, info: RunInfo, /) -> KeptSink:
        return KeptSink(self, self.inner.open(info))


class KeptSink:
    def __init__(self, owner: Kept, sink: Sink[Path]) -> None:
        self.owner, self.sink = owner, sink

    def append(self, message: Message, /) -> None:
        self.sink.append(message)

    def close(
        self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /
    ) -> tuple[list[Message], Outcome]:
        self.owner.path = self.sink.close(messages, outcome, stats)
        return list(messages), outcome


SAVED: dict[Path, Path] = {}  # a test's folder -> the trajectory its run saved


def ended(
    tmp_path: Path, replies: list[str | ModelError], verifier: Verifier, max_steps: int = 2
) -> tuple[Judgement, list[Message], Outcome]:
    opened = Opened(verifier)
    kept = Kept(tmp_path / "runs")
    history, outcome = run(
        scripted_invoke(replies),
        regex_parse(),
        local_env(cwd=str(tmp_path)),
        kept,
        "s",
        "Write 42 to result.txt.",
        max_steps,
        check=opened,
    )
    assert opened.judge is not None and kept.path is not None
    SAVED[tmp_path] = kept.path
    return opened.judge, history, outcome


def audited(judge: Judgement, messages: Sequence[Message], tmp_path: Path) -> bool:
    """The run's sealed trajectory audits valid, and holds the judge's record."""
    path = SAVED[tmp_path]
    assert load_trajectory(path).stats.verdicts == msgspec.convert(judge.record(), Verdicts)
    assert list(load_trajectory(path).messages) == list(messages)
    return audit(path).valid


def test_work_done_at_the_budget_is_accepted_as_judged_at_the_end(tmp_path: Path) -> None:
    judge, history, outcome = ended(
        tmp_path, [WORK, "```bash\nls\n```"], verify(command_check(CHECK))
    )
    assert outcome == Accepted("")
    record = judge.record()
    assert record["judged_at_end"] == "max_steps_reached" and record["evaluations"] == 1
    assert record["log"] == [
        {"verdict": "YES", "action": "exit_accept", "judged_at_end": "max_steps_reached"}
    ]
    assert audited(judge, history, tmp_path)
    assert judge.at_end(history, StepsExhausted()) == StepsExhausted()  # once per run
    assert judge.record()["evaluations"] == 1


def test_a_model_that_stops_acting_is_judged_too(tmp_path: Path) -> None:
    replies: list[str | ModelError] = [WORK, "I think I am done.", "Really done.", "Done."]
    judge, _, outcome = ended(tmp_path, replies, verify(command_check(CHECK)), max_steps=10)
    assert outcome == Accepted("")
    assert str(judge.record()["judged_at_end"]).startswith("repeated_format_error: ")


def test_a_model_call_that_fails_after_the_work_is_done_is_judged_too(tmp_path: Path) -> None:
    timed_out = ModelError(ModelErrorKind.TIMEOUT, "no reply in 600 s")
    judge, _, outcome = ended(tmp_path, [WORK, timed_out], verify(command_check(CHECK)), 4)
    assert outcome == Accepted("")
    assert str(judge.record()["judged_at_end"]).startswith("model_error: timeout")


def test_off_only_claimed_completions_are_judged(tmp_path: Path) -> None:
    judge, _, outcome = ended(
        tmp_path, [WORK, "```bash\nls\n```"], verify(command_check(CHECK), last_judgement=False)
    )
    assert outcome == StepsExhausted()
    assert judge.record()["evaluations"] == 0 and "judged_at_end" not in judge.record()


def test_a_run_told_no_then_fixed_without_submitting_is_accepted_in_bound(
    tmp_path: Path,
) -> None:
    submit = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
    verifier = verify(command_check(CHECK), failures=1)
    judge, history, outcome = ended(tmp_path, [submit, WORK, "```bash\nls\n```"], verifier, 3)
    assert outcome == Accepted("")
    record = judge.record()
    assert [e.verdict for e in log_of(record)] == ["NO", "YES"]
    assert record["evaluations"] == 2 and record["initial_rank"] == 2  # F=1 + evidence=1
    assert audited(judge, history, tmp_path)


@pytest.mark.parametrize("end", [ExecutionFailed("container gone"), Held("repeated failure: x")])
def test_other_ends_are_not_judged(tmp_path: Path, end: Outcome) -> None:
    judge = verify(command_check(CHECK)).open(local_env(cwd=str(tmp_path)))
    assert judge.at_end([], end) is end
    assert judge.record()["evaluations"] == 0


# --- through the loop: run and arun make the last judgement themselves -----------------


def through(driver: str, tmp_path: Path, replies: list[str], verifier: Verifier) -> Path:
    arguments = (
        scripted_invoke(replies),
        regex_parse(),
        local_env(cwd=str(tmp_path)),
        save_trajectory(tmp_path / "runs"),
        "s",
        "Write 42 to result.txt.",
        2,
    )
    if driver == "run":
        return run(*arguments, check=verifier)
    return asyncio.run(arun(*arguments, check=verifier))


@pytest.mark.parametrize("driver", ["run", "arun"])
@pytest.mark.parametrize(("on", "expected"), [(True, "accepted"), (False, "max_steps_reached")])
def test_a_run_that_does_the_work_and_stops_at_the_budget(
    tmp_path: Path, driver: str, on: bool, expected: str
) -> None:
    verifier = verify(command_check(CHECK), last_judgement=on)
    path = through(driver, tmp_path, [WORK, "```bash\nls\n```"], verifier)
    trajectory = load_trajectory(path)
    assert trajectory.outcome == expected
    assert audit(path).valid
    record = record_of(trajectory)
    assert record.evaluations == (1 if on else 0)
    assert record.judged_at_end == ("max_steps_reached" if on else None)


def test_the_last_judgement_says_no_and_the_outcome_stays(tmp_path: Path) -> None:
    path = through(
        "run", tmp_path, ["```bash\necho 41 > result.txt\n```"] * 2, verify(command_check(CHECK))
    )
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "max_steps_reached"
    assert [e.verdict for e in log_of(trajectory)] == ["NO"]
    assert audit(path).valid


def test_a_check_that_raises_at_the_end_is_recorded_as_the_check(tmp_path: Path) -> None:
    def broken(claim: object) -> CheckResult:
        raise RuntimeError("check bug")

    with pytest.raises(RuntimeError):
        through("run", tmp_path, [WORK, WORK], verify(broken))
    saved = load_trajectory(next((tmp_path / "runs").glob("*.json")))
    assert saved.outcome == "crashed: check: RuntimeError: check bug"


def test_four_show_says_the_last_verdict_was_judged_at_the_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from four.cli import main

    path = through("run", tmp_path, [WORK, "```bash\nls\n```"], verify(command_check(CHECK)))
    assert main(["show", str(path)]) == 0
    assert "YES, the last judged at the end: max_steps_reached" in capsys.readouterr().out
