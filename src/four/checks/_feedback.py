"""What the model is told of a verdict: the check's whole text, its output, or only the verdict
(docs/verified.md). A NO's reason is the full text; a ready check's result also holds, in
its ``meta``, its level (``feedback``) and what the ``output`` level shows (``output``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, cast

from four._checked import checked
from four._types import Message, User
from four.quaternary import CheckResult, ComputeNeed, Verdict, no

FeedbackLevel: TypeAlias = Literal["full", "output", "verdict"]
"""What a NO shows the model: the check's command and output, its failing lines, or a number."""

FEEDBACK_LEVELS: tuple[FeedbackLevel, ...] = ("full", "output", "verdict")

DEFAULT_FEEDBACK: FeedbackLevel = "verdict"
"""A judge the agent can read is no judge: by default it learns only the failure's number."""

LOOK = "Look at what your work wrote (read the files the task names), fix it, then submit again."
"""After a NO: a small model resubmitted the same unseen file, or wrote it again with the
same command, never having read it; told to read it, it finds what the check found."""
REJECTED = "Your submission was checked and not accepted: {reason}\n" + LOOK
REJECTED_VERDICT = (
    "Your submission was checked and not accepted (failure {number}; the check's details "
    "are not shown).\n" + LOOK
)
MORE_WORK = (
    "Your submission was checked: more work is needed ({step}). Continue, then submit again."
)


def feedback_level(value: object) -> FeedbackLevel:
    """``value`` as a level, or a ValueError naming the levels.

    >>> feedback_level("output")
    'output'
    """
    if value not in FEEDBACK_LEVELS:
        raise ValueError(f"feedback must be one of {', '.join(FEEDBACK_LEVELS)}, not {value!r}")
    return value


@checked
def rejection(full: str, output: str, level: FeedbackLevel) -> CheckResult:
    """A NO whose reason is ``full``; the model sees ``full``, ``output`` or neither,
    by ``level``.

    >>> rejection("`test 1 = 2` failed (exit 1)", "the check exited 1", "output").meta
    {'feedback': 'output', 'output': 'the check exited 1'}
    """
    return no(full, feedback=level, output=output)


def level_of(result: CheckResult, override: FeedbackLevel | None) -> FeedbackLevel:
    """The level a result is shown at: the judge's override, else the check's own."""
    if override is not None:
        return override
    own = result.meta.get("feedback")
    return cast(FeedbackLevel, own) if own in FEEDBACK_LEVELS else DEFAULT_FEEDBACK


TASK_AGAIN = "\nThe task, once more: {task}"
RESTATED = 600
"""A task up to this many characters is restated under a NO. A small model, steps after
the task, loses it: told NO, it touches the file the task named, or prints the answer the
task wanted in that file; the task read again at the end of the history fixes that often."""


def task_of(messages: Sequence[Message]) -> str:
    """The run's task: its first user turn of kind ``task`` (``""`` when none).

    >>> task_of([User("Write 4 to a.txt.", "task"), User("<output>", "observation")])
    'Write 4 to a.txt.'
    """
    return next((m.content for m in messages if isinstance(m, User) and m.kind == "task"), "")


def told(
    result: CheckResult,
    level: FeedbackLevel,
    number: int,
    messages: Sequence[Message] = (),
    files: str = "",
) -> str:
    """The model's text for a NO at ``level``; ``number`` names the reason's slot;
    ``files`` (what the files the task names hold now) before the advice to look; the
    task of ``messages`` restated when it is short.

    >>> print(told(no("exit 1"), "full", 1, [User("Write 4 to a.txt.", "task")]))
    Your submission was checked and not accepted: exit 1
    Look at what your work wrote (read the files the task names), fix it, then submit again.
    The task, once more: Write 4 to a.txt.
    >>> print(told(no("exit 1"), "output", 1, files="a.txt: empty (0 bytes)."))
    Your submission was checked and not accepted: exit 1
    a.txt: empty (0 bytes).
    Look at what your work wrote (read the files the task names), fix it, then submit again.
    """
    if level == "verdict":
        text = REJECTED_VERDICT.format(number=number)
    else:
        text = REJECTED.format(reason=shown(result, level, number))
    if files:
        text = f"{text.removesuffix(LOOK)}{files}\n{LOOK}"
    task = task_of(messages)
    if task and len(task) <= RESTATED:
        text += TASK_AGAIN.format(task=task.strip())
    return text


def shown(result: CheckResult, level: FeedbackLevel, number: int) -> str:
    """What a verdict's words may show at ``level``, to the model or any other reader
    (a trace): a NO's reason, its output only, or the number of its slot; admitted
    work's step, or its number; any other verdict's reason at ``full`` only.

    >>> shown(no("`test 1 = 2` failed", output="exit 1"), "output", 1)
    'exit 1'
    >>> shown(no("`test 1 = 2` failed"), "verdict", 2)
    'failure 2'
    """
    if result.verdict == Verdict.NO:
        if level == "verdict":
            return f"failure {number}"
        output = result.meta.get("output") if level == "output" else None
        return output if isinstance(output, str) else str(result.reason)
    if isinstance(result.needed, ComputeNeed):
        return f"step {number}" if level == "verdict" else result.needed.step
    return str(result.reason) if level == "full" and result.reason else ""
