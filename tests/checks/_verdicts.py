"""Reading a trajectory's verdict record in tests."""

from __future__ import annotations

from typing import cast

from four._types import JSON
from four.trajectory import Trajectory


def record_of(trajectory: Trajectory) -> dict[str, JSON]:
    record = trajectory.stats["verdicts"]
    assert isinstance(record, dict)
    return record


def log_of(trajectory: Trajectory) -> list[dict[str, JSON]]:
    """The verdict log: one entry per evaluation (verdict, action, reason...)."""
    log = record_of(trajectory)["log"]
    assert isinstance(log, list) and all(isinstance(entry, dict) for entry in log)
    return cast(list[dict[str, JSON]], log)
