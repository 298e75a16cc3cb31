"""How a run ends: a closed union of frozen records, each with a stable text form.

The text forms of the seed stay: ``exit:task_complete``, ``model_error: ...``,
``repeated_format_error: ...`` and ``max_steps_reached``.
"""

from __future__ import annotations

from typing import ClassVar, TypeAlias

from four._record import record


@record
class Finished:
    """The agent submitted; ``output`` is its final submission."""

    output: str = ""
    tag: ClassVar[str] = "exit:task_complete"

    @property
    def text(self) -> str:
        return self.tag


@record
class ModelFailed:
    """G returned an error that retries (if any) did not cure."""

    error: str
    tag: ClassVar[str] = "model_error"

    @property
    def text(self) -> str:
        return f"model_error: {self.error}"


@record
class RepeatedFormatError:
    """``max_format_errors`` replies in a row could not be read."""

    error: str
    tag: ClassVar[str] = "repeated_format_error"

    @property
    def text(self) -> str:
        return f"repeated_format_error: {self.error}"


@record
class StepsExhausted:
    """G was called ``max_steps`` times without the run ending."""

    tag: ClassVar[str] = "max_steps_reached"

    @property
    def text(self) -> str:
        return self.tag


@record
class ExecutionFailed:
    """V2 could not go on (its environment broke)."""

    error: str
    tag: ClassVar[str] = "execution_error"

    @property
    def text(self) -> str:
        return f"execution_error: {self.error}"


@record
class CostLimitReached:
    """A cost or token budget was spent."""

    detail: str
    tag: ClassVar[str] = "cost_limit_reached"

    @property
    def text(self) -> str:
        return f"cost_limit_reached: {self.detail}"


@record
class Stalled:
    """A supervisor saw no model call or command finish for too long."""

    detail: str
    tag: ClassVar[str] = "stalled"

    @property
    def text(self) -> str:
        return f"stalled: {self.detail}"


@record
class TimeLimitReached:
    """A wall-clock limit (of the run, or of its batch) was reached."""

    detail: str
    tag: ClassVar[str] = "time_limit_reached"

    @property
    def text(self) -> str:
        return f"time_limit_reached: {self.detail}"


@record
class Interrupted:
    """Ctrl-C, or a signal, stopped the run."""

    reason: str = "KeyboardInterrupt"
    tag: ClassVar[str] = "interrupted"

    @property
    def text(self) -> str:
        return f"interrupted: {self.reason}"


@record
class Crashed:
    """A component raised. The exception still propagates after the trajectory is saved."""

    component: str
    error: str
    tag: ClassVar[str] = "crashed"

    @property
    def text(self) -> str:
        return f"crashed: {self.component}: {self.error}"


@record
class Accepted:
    """A check judged the agent's submission and said YES."""

    output: str = ""
    tag: ClassVar[str] = "accepted"

    @property
    def text(self) -> str:
        return self.tag


@record
class Held:
    """The verdicts could not go on: a repeated or inadmissible reason, a spent budget."""

    reason: str
    tag: ClassVar[str] = "held"

    @property
    def text(self) -> str:
        return f"held: {self.reason}"


@record
class Blocked:
    """The submission is correct only if a dependency holds, and nothing resolved it."""

    dependency: str
    tag: ClassVar[str] = "blocked"

    @property
    def text(self) -> str:
        return f"blocked: {self.dependency}"


Outcome: TypeAlias = (
    Finished
    | ModelFailed
    | RepeatedFormatError
    | StepsExhausted
    | ExecutionFailed
    | CostLimitReached
    | Stalled
    | TimeLimitReached
    | Interrupted
    | Crashed
    | Accepted
    | Held
    | Blocked
)

OUTCOME_TAGS: tuple[str, ...] = tuple(
    cls.tag
    for cls in (
        Finished,
        ModelFailed,
        RepeatedFormatError,
        StepsExhausted,
        ExecutionFailed,
        CostLimitReached,
        Stalled,
        TimeLimitReached,
        Interrupted,
        Crashed,
        Accepted,
        Held,
        Blocked,
    )
)


def outcome_tag(text: str) -> str:
    """The kind of an outcome from its text form, for grouping saved runs.

    >>> outcome_tag("model_error: rate_limit: slow down")
    'model_error'
    """
    head = text.split(":", 1)[0] if not text.startswith("exit:") else text
    return head if head in OUTCOME_TAGS else text
