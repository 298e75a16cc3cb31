"""The last judgement: a run that did the work but never submitted is judged once at its end."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from four import (
    Accepted,
    ExecutionFailed,
    Held,
    Message,
    Outcome,
    RepeatedFormatError,
    StepsExhausted,
    audit,
    run,
    scripted_invoke,
)
from four._types import Execute
from four.checks import Judgement, Verifier, command_check, verify
from four.execute import local_env
from four.parse import regex_parse
from four.trajectory import Trajectory
from tests.checks._verdicts import log_of

WORK = "```bash\necho 42 > result.txt\n```"
CHECK = 'test "$(cat result.txt)" = 42'


class Opened:
    """A ``check=`` that keeps the judge it made, to ask it what the loop will ask."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier
        self.judge: Judgement | None = None

    def open(self, env: Execute, /) -> Judgement:
        self.judge = self.verifier.open(env)
        return self.judge


def ended(
    tmp_path: Path, replies: list[str], verifier: Verifier, max_steps: int = 2
) -> tuple[Judgement, list[Message], Outcome]:
    opened = Opened(verifier)
    history, outcome = run(
        scripted_invoke(replies),
        regex_parse(),
        local_env(cwd=str(tmp_path)),
        lambda messages, outcome: (list(messages), outcome),
        "s",
        "Write 42 to result.txt.",
        max_steps,
        check=opened,
    )
    assert opened.judge is not None
    return opened.judge, history, outcome


def audited(judge: Judgement, messages: Sequence[Message], tmp_path: Path) -> bool:
    document = Trajectory(
        tuple(messages), "x", "four", tmp_path, stats={"verdicts": dict(judge.record())}
    )
    return audit(document).valid


def test_work_done_at_the_budget_is_accepted_as_judged_at_the_end(tmp_path: Path) -> None:
    judge, history, outcome = ended(
        tmp_path, [WORK, "```bash\nls\n```"], verify(command_check(CHECK))
    )
    assert outcome == StepsExhausted()
    assert judge.at_end(history, outcome) == Accepted("")
    record = judge.record()
    assert record["judged_at_end"] == "max_steps_reached" and record["evaluations"] == 1
    assert record["log"] == [
        {"verdict": "YES", "action": "exit_accept", "judged_at_end": "max_steps_reached"}
    ]
    assert audited(judge, history, tmp_path)


def test_work_not_done_keeps_the_outcome_and_logs_the_verdict(tmp_path: Path) -> None:
    judge, history, outcome = ended(
        tmp_path, ["```bash\necho 41 > result.txt\n```"] * 2, verify(command_check(CHECK))
    )
    assert judge.at_end(history, outcome) == StepsExhausted()
    entry = log_of(judge.record())[0]
    assert entry["verdict"] == "NO" and entry["judged_at_end"] == "max_steps_reached"
    assert audited(judge, history, tmp_path)


def test_a_model_that_stops_acting_is_judged_too(tmp_path: Path) -> None:
    replies = [WORK, "I think I am done.", "Really done.", "Done."]
    judge, history, outcome = ended(tmp_path, replies, verify(command_check(CHECK)), max_steps=10)
    assert isinstance(outcome, RepeatedFormatError)
    assert judge.at_end(history, outcome) == Accepted("")
    assert judge.record()["judged_at_end"] == outcome.text


def test_off_only_claimed_completions_are_judged(tmp_path: Path) -> None:
    judge, history, outcome = ended(
        tmp_path, [WORK, "```bash\nls\n```"], verify(command_check(CHECK), last_judgement=False)
    )
    assert judge.at_end(history, outcome) == StepsExhausted()
    assert judge.record()["evaluations"] == 0 and "judged_at_end" not in judge.record()


@pytest.mark.parametrize("end", [ExecutionFailed("container gone"), Held("repeated failure: x")])
def test_other_ends_are_not_judged(tmp_path: Path, end: Outcome) -> None:
    judge = verify(command_check(CHECK)).open(local_env(cwd=str(tmp_path)))
    assert judge.at_end([], end) is end
    assert judge.record()["evaluations"] == 0


def test_a_run_told_no_then_fixed_without_submitting_is_accepted_in_bound(
    tmp_path: Path,
) -> None:
    submit = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
    verifier = verify(command_check(CHECK), failures=1)
    judge, history, outcome = ended(tmp_path, [submit, WORK, "```bash\nls\n```"], verifier, 3)
    assert outcome == StepsExhausted()
    assert judge.at_end(history, outcome) == Accepted("")
    record = judge.record()
    assert [e["verdict"] for e in log_of(record)] == ["NO", "YES"]
    assert record["evaluations"] == 2 and record["initial_rank"] == 2  # F=1 + evidence=1
    assert audited(judge, history, tmp_path)
