"""What the model is told of a NO: at `output` and `verdict` a check's literal answer never
reaches it, however the model looks; at `full` it does (so these tests can fail)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from returns.result import Result

from four import (
    Accepted,
    Message,
    ModelError,
    Reply,
    audit,
    load_trajectory,
    run,
    save_trajectory,
    scripted_invoke,
)
from four._types import Verify
from four.checks import FeedbackLevel, all_of, command_check, file_check, verify
from four.execute import local_env, shell_env
from four.parse import regex_parse
from four.quaternary import no, yes
from tests._doubles import FakeEnv, line_parse
from tests.checks._verdicts import log_of

ANSWER = "7193"
SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ncat result.txt\n```"
# Everything a model could try, after the check ran, to read what it held.
SNOOP = (
    "```bash\n"
    'echo "last: $_"; cat result.txt; ls -la; env | sort; ps -eo args; '
    "cat ~/.bash_history 2>/dev/null; grep -rs . . 2>/dev/null | head -50\n"
    "```"
)


class Cheater:
    """A scripted model that submits a wrong answer, snoops, then copies any 4-digit number
    it was ever shown into result.txt and submits. It keeps every history it was sent."""

    def __init__(self) -> None:
        self.path = Path()
        self.sent: list[list[Message]] = []
        self.script = scripted_invoke(
            ["```bash\necho 1111 > result.txt\n```", SUBMIT, SNOOP, self.copy, SUBMIT, SUBMIT]
        )

    def __call__(self, history: Sequence[Message]) -> Result[Reply, ModelError]:
        self.sent.append(list(history))
        return self.script(history)

    @staticmethod
    def copy(history: Sequence[Message]) -> str:
        # Only what the check said: the snoop's own output (directory sizes such as 4096,
        # process ids) holds 4-digit numbers too.
        seen = " ".join(m.content for m in history[2:] if "not accepted" in m.content)
        numbers = [n for n in re.findall(r"\b\d{4}\b", seen) if n != "1111"]
        guess = numbers[-1] if numbers else "1111"
        return f"```bash\necho {guess} > result.txt\n```"

    def everything_sent(self) -> Iterator[str]:
        for history in self.sent:
            for message in history:
                yield message.content


def judged(tmp_path: Path, check: Verify, *, persistent: bool = False) -> Cheater:
    model = Cheater()
    env = shell_env(cwd=str(tmp_path)) if persistent else local_env(cwd=str(tmp_path))
    path = run(
        model,
        regex_parse(),
        env,
        # Outside the agent's folder: the stream records the check's settings, its
        # command (and so its answer) with them, and the agent's grep would find it.
        save_trajectory(tmp_path.parent / f"{tmp_path.name}.runs"),
        "You write result.txt.",
        "Write the right number to result.txt.",
        max_steps=6,
        check=check,
    )
    result = audit(path)
    assert result.valid, result.errors
    model.path = path
    return model


LITERAL = f'test "$(cat result.txt)" = "{ANSWER}"'


@pytest.mark.parametrize("level", ["output", "verdict"])
@pytest.mark.parametrize("persistent", [False, True], ids=["local", "persistent"])
def test_a_literal_answer_in_the_command_never_reaches_the_model(
    tmp_path: Path, level: FeedbackLevel, persistent: bool
) -> None:
    model = judged(tmp_path, command_check(LITERAL, feedback=level), persistent=persistent)
    assert model.sent, "the model was called"
    assert all(ANSWER not in text for text in model.everything_sent())
    trajectory = load_trajectory(model.path)
    assert str(trajectory.outcome).startswith("held: repeated failure")
    assert f"`{LITERAL}` failed (exit 1)" in str(
        log_of(trajectory)[0].reason
    )  # the human still sees it all


def test_at_full_the_model_reads_the_answer_off_the_feedback(tmp_path: Path) -> None:
    model = judged(tmp_path, command_check(LITERAL, feedback="full"))
    assert any(ANSWER in text for text in model.everything_sent())
    assert load_trajectory(model.path).outcome == "accepted"


@pytest.mark.parametrize("level", ["output", "verdict"])
def test_a_file_check_does_not_say_what_it_wanted(tmp_path: Path, level: FeedbackLevel) -> None:
    model = judged(tmp_path, file_check("result.txt", contains=ANSWER, feedback=level))
    assert all(ANSWER not in text for text in model.everything_sent())
    shown = [t for t in model.everything_sent() if "not accepted" in t]
    assert shown and ("result.txt does not hold the expected text" in shown[0]) == (
        level == "output"
    )


@pytest.mark.parametrize(
    "check",
    [
        verify(command_check(LITERAL, feedback="full"), feedback="verdict"),
        all_of(
            file_check("result.txt"), command_check(LITERAL, feedback="full"), feedback="output"
        ),
        verify(lambda claim: command_check(LITERAL, feedback="full")(claim), feedback="output"),
    ],
    ids=["verify", "all_of", "own-check"],
)
def test_an_outer_level_overrides_the_checks_own(tmp_path: Path, check: Verify) -> None:
    model = judged(tmp_path, check)
    assert all(ANSWER not in text for text in model.everything_sent())


def test_the_verdict_level_numbers_reasons_and_nothing_else(tmp_path: Path) -> None:
    model = judged(tmp_path, command_check(f"echo the answer is {ANSWER}; exit 1"))
    told = [t for t in model.everything_sent() if "not accepted" in t]
    assert told[0] == (
        "Your submission was checked and not accepted (failure 1; the check's details are "
        "not shown).\n"
        "The files the task names, as they are now:\nresult.txt (5 bytes, 1 line):\n  1111\n"
        "Look at what your work wrote (read the files the task names), fix it, "
        "then submit again.\n"
        "The task, once more: Write the right number to result.txt."
    )
    (tmp_path / "o").mkdir()
    at_output = judged(
        tmp_path / "o", command_check(f"echo the answer is {ANSWER}; exit 1", feedback="output")
    )
    assert any(ANSWER in t for t in at_output.everything_sent())  # output is shown there


def test_a_short_task_is_restated_under_a_no_and_a_long_one_is_not() -> None:
    from four import User
    from four.checks._feedback import RESTATED, told
    from four.quaternary import no

    short = [User("Write 4 to a.txt.", "task")]
    assert told(no("exit 1"), "output", 1, short).endswith(
        "\nThe task, once more: Write 4 to a.txt."
    )
    long = [User("x" * (RESTATED + 1), "task")]
    assert told(no("exit 1"), "output", 1, long).endswith("fix it, then submit again.")


def test_bad_levels_are_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="feedback must be one of full, output, verdict"):
        command_check("true", feedback="loud")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="feedback must be one of"):
        verify(command_check("true"), feedback="none")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="verify: retries_per_reason=0: give a whole number"):
        verify(command_check("true"), retries_per_reason=0)


def test_a_plain_checks_reason_is_withheld_by_default_and_numbered() -> None:
    reasons = iter([no(f"expected {ANSWER}, got 1"), no(f"expected {ANSWER}, got 2"), yes()])
    model = Cheater()
    model.script = scripted_invoke(["DONE a", "DONE b", "DONE c"])
    _, outcome = run(
        model,
        line_parse,
        FakeEnv(),
        lambda messages, outcome: (messages, outcome),
        "s",
        "p",
        check=verify(lambda claim: next(reasons)),
    )
    assert outcome == Accepted("c")
    told = [t for t in model.everything_sent() if "not accepted" in t]
    assert "(failure 1;" in told[0] and "(failure 2;" in told[-1]
    assert all(ANSWER not in text for text in model.everything_sent())
