"""What the loop tells a watch that listens (``Watch.hear``): one record per thing done.

The loop sends them only to a watch with a ``hear`` method, so a run without one pays
nothing. Times are the run's clock (``time.time`` unless ``run`` was given another), in
seconds. ``position`` is where in the history the event's message goes (the reply, or
the action's answer): a reader of the saved run finds it there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from four._outcomes import Outcome
from four._types import (
    JSON,
    Action,
    Checked,
    ExecutionError,
    Feedback,
    Message,
    ModelError,
    Observation,
    Reply,
    RunInfo,
    RunStats,
    Submitted,
)


@dataclass(frozen=True, slots=True)
class RunBegan(Checked):
    """The run starts: what it was started with (its ``started_at`` included)."""

    info: RunInfo


@dataclass(frozen=True, slots=True)
class ModelCalled(Checked):
    """G answered (a reply, or an error). ``history`` is what it was sent (the run's own
    list: read it before ``hear`` returns, never keep it)."""

    reply: Reply | ModelError
    history: Sequence[Message]
    started: float
    ended: float


@dataclass(frozen=True, slots=True)
class ActionRan(Checked):
    """V2 ran one action; its answer goes to ``position`` of the history (if it has one)."""

    action: Action
    result: Observation | Submitted | ExecutionError
    started: float
    ended: float
    position: int


@dataclass(frozen=True, slots=True)
class Judged(Checked):
    """The check judged a claim (or, at the end, the final state): its judgement, and the
    judge's record after it (``Judge.record``: the verdict log, with what was new)."""

    judgement: Outcome | Feedback
    record: Mapping[str, JSON]
    started: float
    ended: float


@dataclass(frozen=True, slots=True)
class RunEnded(Checked):
    """The run ended (``stats.ended_at``), told once its record was emitted, or failed
    to be."""

    outcome: Outcome
    stats: RunStats


Event: TypeAlias = RunBegan | ModelCalled | ActionRan | Judged | RunEnded
"""Everything a listening watch hears, in the order it happens."""
