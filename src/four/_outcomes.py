"""How a run ends: a closed union of frozen records, each with a stable text form
(docs/loop.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias, get_args

from four._checked import Checked


class _Ending(Checked):
    """The text form: the tag, then each field (``crashed: V2: ValueError: ...``), except
    for outcomes whose fields are data rather than part of the reason (``bare``)."""

    __slots__ = ()
    __match_args__: ClassVar[tuple[str, ...]]
    tag: ClassVar[str]
    bare: ClassVar[bool] = False

    def __init_subclass__(cls, tag: str = "", bare: bool = False) -> None:
        # Guarded: dataclass(slots=True) makes each class again, without the keywords.
        if tag:
            cls.tag, cls.bare = tag, bare

    @property
    def text(self) -> str:
        if self.bare:
            return self.tag
        return ": ".join([self.tag, *(str(getattr(self, n)) for n in self.__match_args__)])


@dataclass(frozen=True, slots=True)
class Finished(_Ending, tag="exit:task_complete", bare=True):
    """The agent submitted; ``output`` is its final submission."""

    output: str = ""


@dataclass(frozen=True, slots=True)
class ModelFailed(_Ending, tag="model_error"):
    """G returned an error that retries (if any) did not cure."""

    error: str


@dataclass(frozen=True, slots=True)
class RepeatedFormatError(_Ending, tag="repeated_format_error"):
    """``max_format_errors`` replies in a row could not be read."""

    error: str


@dataclass(frozen=True, slots=True)
class StepsExhausted(_Ending, tag="max_steps_reached"):
    """G was called ``max_steps`` times without the run ending."""


@dataclass(frozen=True, slots=True)
class ExecutionFailed(_Ending, tag="execution_error"):
    """V2 could not go on (its environment broke)."""

    error: str


@dataclass(frozen=True, slots=True)
class CostLimitReached(_Ending, tag="cost_limit_reached"):
    """A cost or token budget was spent."""

    detail: str


@dataclass(frozen=True, slots=True)
class Stalled(_Ending, tag="stalled"):
    """A supervisor saw no model call or command finish for too long."""

    detail: str


@dataclass(frozen=True, slots=True)
class TimeLimitReached(_Ending, tag="time_limit_reached"):
    """A wall-clock limit (of the run, or of its batch) was reached."""

    detail: str


@dataclass(frozen=True, slots=True)
class Interrupted(_Ending, tag="interrupted"):
    """Ctrl-C, or a signal, stopped the run."""

    reason: str = "KeyboardInterrupt"


Component: TypeAlias = Literal["G", "V1", "V2", "check", "emit", "loop", "batch", "make_run"]
"""Where a crash happened: one of the four arrows, the check, the loop's own code, or (in
a batch) the batch or the user's ``make_run``."""


@dataclass(frozen=True, slots=True)
class Crashed(_Ending, tag="crashed"):
    """A component raised. The exception still propagates after the trajectory is saved."""

    component: Component
    error: str


@dataclass(frozen=True, slots=True)
class Accepted(_Ending, tag="accepted", bare=True):
    """A check judged the agent's submission and said YES."""

    output: str = ""


@dataclass(frozen=True, slots=True)
class Held(_Ending, tag="held"):
    """The verdicts could not go on: a repeated or inadmissible reason, a spent budget."""

    reason: str


@dataclass(frozen=True, slots=True)
class Blocked(_Ending, tag="blocked"):
    """The submission is correct only if a dependency holds, and nothing resolved it."""

    dependency: str


@dataclass(frozen=True, slots=True)
class SaveFailed(_Ending, tag="save_failed"):
    """The trajectory could not be written (a full disk, its folder deleted), so the
    run stopped rather than go on unrecorded."""

    reason: str


@dataclass(frozen=True, slots=True)
class Stopped(_Ending, tag="stopped"):
    """A supervisor (``four watch --rescue``) ended the run from outside: it was looping,
    over its wall budget, or stalled; its driver was killed and the record sealed."""

    reason: str


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
    | SaveFailed
    | Stopped
)

OUTCOME_TAGS: tuple[str, ...] = tuple(cls.tag for cls in get_args(Outcome))


def outcome_tag(text: str) -> str:
    """The kind of an outcome from its text form, for grouping saved runs.

    >>> outcome_tag("model_error: rate_limit: slow down")
    'model_error'
    """
    head = text.split(":", 1)[0] if not text.startswith("exit:") else text
    return head if head in OUTCOME_TAGS else text
