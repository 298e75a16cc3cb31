"""Reading a trajectory's verdict record in tests."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from four._types import JSON
from four.trajectory import Trajectory, Verdict, Verdicts


def record_of(trajectory: Trajectory) -> Verdicts:
    record = trajectory.stats.verdicts
    assert record is not None
    return record


def log_of(source: Trajectory | Mapping[str, JSON]) -> tuple[Verdict, ...]:
    """The verdict log (of a trajectory, or a judge's record): one entry per evaluation."""
    if isinstance(source, Trajectory):
        return record_of(source).log
    return msgspec.convert(source, Verdicts).log
