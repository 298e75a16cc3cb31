"""Where a batch's runs go: a pool opens a session that runs items and hands back results.

``ThreadPool`` and ``AsyncPool`` (``_pool``) run them in this process; ``RayPool``
(``_pool`` too) on a Ray cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from four._outcomes import Outcome
from four._types import Checked, Usage
from four.batch._attempt import MakeRun
from four.batch._items import Item
from four.batch._result import RunResult


@dataclass(frozen=True, slots=True)
class Spec(Checked):
    """What a session needs to run a batch's items."""

    make_run: MakeRun
    output_dir: Path
    max_concurrency: int
    time_limit: float | None = None
    stall_timeout: float | None = None
    max_cost: float | None = None


class Session(Protocol):
    """A pool at work on one batch. Used from one thread (the batch's)."""

    @property
    def capacity(self) -> int:
        """How many runs it takes at once."""
        ...

    @property
    def running(self) -> int:
        """Runs submitted whose result has not been handed back yet."""
        ...

    def submit(self, item: Item) -> None:
        """Start a run of ``item`` (only while ``running < capacity``)."""
        ...

    def wait(self, timeout: float) -> list[RunResult]:
        """Results of runs that ended, waiting up to ``timeout`` s for at least one."""
        ...

    def stop(self, outcome: Outcome, *, kill: bool) -> None:
        """End every run (and any started later) with ``outcome`` at its next step; with
        ``kill``, kill their running commands now."""
        ...

    def live_usage(self) -> Usage:
        """What the running runs' metered model calls have used so far."""
        ...

    def running_by_node(self) -> dict[str, int]:
        """Runs running on each node (by its address or host name)."""
        ...

    def spent(self, cost: float) -> None:
        """What the batch has spent on runs that ended (earlier invocations included):
        with ``spec.max_cost``, the session stops its runs once that plus their live
        cost reaches the budget."""
        ...

    def stopping(self) -> Outcome | None:
        """The outcome the session ended every run with on its own (its cost budget), or None."""
        ...

    def close(self, wait: bool = True) -> None:
        """Release the workers (with ``wait``, after the running runs end)."""
        ...


class Pool(Protocol):
    """Makes sessions: ``ThreadPool()`` or ``RayPool(...)``."""

    def open(self, spec: Spec) -> Session: ...
