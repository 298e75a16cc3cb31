"""Reading a trajectory's verdict record in tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from four._types import JSON
from four.trajectory import Trajectory


def record_of(trajectory: Trajectory) -> Mapping[str, JSON]:
    record = trajectory.stats["verdicts"]
    assert isinstance(record, dict)
    return record


def log_of(source: Trajectory | Mapping[str, JSON]) -> list[dict[str, JSON]]:
    """The verdict log (of a trajectory, or a judge's record): one entry per evaluation."""
    log = (record_of(source) if isinstance(source, Trajectory) else source)["log"]
    assert isinstance(log, list) and all(isinstance(entry, dict) for entry in log)
    return cast(list[dict[str, JSON]], log)
