"""The pools that run a batch: threads or tasks on one event loop here, or a Ray cluster
(``ThreadPool``'s bound: thousands of threads cost CPython quadratic bookkeeping)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from four._checked import check_fields
from four.batch._sessions import (
    DEFAULT_MAX_THREADS,
    YOUNG_OBJECTS,
    AsyncSession,
    Session,
    Spec,
    ThreadSession,
)


def _whole(what: str, value: object, other: str = "") -> None:
    if type(value) is not int or value < 1:
        raise ValueError(f"{what} must be a whole number >= 1{other}, not {value!r}")


@dataclass(frozen=True, slots=True)
class ThreadPool:
    """Runs in threads of this process, ``min(max_concurrency, max_threads)`` at once:
    the default for a plain ``make_run``.

    >>> ThreadPool().max_threads
    1024
    """

    max_threads: int = DEFAULT_MAX_THREADS

    def __post_init__(self) -> None:
        _whole("ThreadPool: max_threads", self.max_threads)

    def open(self, spec: Spec) -> Session:
        return ThreadSession(spec, min(spec.max_concurrency, self.max_threads))


@dataclass(frozen=True, slots=True)
class AsyncPool:
    """Runs an async ``make_run`` (the default pool for one) as tasks of an event loop,
    ``max_concurrency`` at once (``processes``, ``gc_threshold``: docs/batch.md).

    >>> AsyncPool().gc_threshold
    50000
    >>> AsyncPool(processes=2).processes
    2
    """

    processes: int = 1
    gc_threshold: int | None = YOUNG_OBJECTS

    def __post_init__(self) -> None:
        _whole("AsyncPool: processes", self.processes)
        if self.gc_threshold is not None:
            _whole("AsyncPool: gc_threshold", self.gc_threshold, " or None")

    def open(self, spec: Spec) -> Session:
        if self.processes == 1:
            return AsyncSession(spec, self.gc_threshold)
        from four.batch._procpool import ProcessSession  # multiprocessing only when asked

        return ProcessSession(spec, self.processes, self.gc_threshold)


@dataclass(frozen=True, slots=True)
class RayPool:
    """Runs on a Ray cluster, in threaded actors: never one Ray task per run (the settings,
    and how runs and records travel: docs/batch.md).

    >>> RayPool(address="auto").address
    'auto'
    """

    address: str | None = None
    actors: int | None = None
    max_restarts: int = 4
    init: Mapping[str, object] = field(default_factory=dict)
    scratch: str | None = None
    lease: float = 30.0

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        if not self.lease > 0:
            raise ValueError(f"RayPool: lease={self.lease!r}: give seconds, more than 0")

    def open(self, spec: Spec) -> Session:
        try:
            from four.batch._ray import RaySession  # Ray is imported here, and only here
        except ModuleNotFoundError as exc:
            if exc.name != "ray":
                raise
            raise ImportError("RayPool needs Ray: pip install 'four-loop[ray]'") from exc
        return RaySession(self, spec)
