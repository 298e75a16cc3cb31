"""Where a batch's runs go: a pool opens a session that runs items and hands back results.

``ThreadPool`` (the default) runs them in threads of this process; ``RayPool`` in
threaded actors of a Ray cluster (imported only when used).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import queue
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from four._outcomes import Crashed, Outcome
from four._types import Usage
from four.batch._attempt import MakeRun, run_attempt
from four.batch._items import Item
from four.batch._result import RunResult
from four.batch._supervisor import Supervisor


@dataclass(frozen=True, slots=True)
class Spec:
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


@dataclass(frozen=True, slots=True)
class ThreadPool:
    """Runs in threads of this process, ``max_concurrency`` at once: the default.

    Model calls and commands wait on sockets and pipes, so threads overlap them well;
    a 2-core machine keeps a hundred runs going.

    >>> ThreadPool()
    ThreadPool()
    """

    def open(self, spec: Spec) -> Session:
        return _ThreadSession(spec)


class _ThreadSession:
    def __init__(self, spec: Spec) -> None:
        self._spec = spec
        self._supervisor = Supervisor(spec.time_limit, spec.stall_timeout, max_cost=spec.max_cost)
        self._executor = cf.ThreadPoolExecutor(spec.max_concurrency, thread_name_prefix="four-run")
        self._futures: dict[cf.Future[RunResult], Item] = {}
        # Runs that ended, in order: one queue get per result (concurrent.futures.wait
        # would hook into every pending future each time, a hundred at a time).
        self._ended: queue.SimpleQueue[cf.Future[RunResult]] = queue.SimpleQueue()

    @property
    def capacity(self) -> int:
        return self._spec.max_concurrency

    @property
    def running(self) -> int:
        return len(self._futures)

    def submit(self, item: Item) -> None:
        spec = self._spec
        future = self._executor.submit(
            run_attempt, spec.make_run, item, spec.output_dir, self._supervisor
        )
        self._futures[future] = item
        future.add_done_callback(self._ended.put)

    def wait(self, timeout: float) -> list[RunResult]:
        if not self._futures:
            return []
        try:
            done = [self._ended.get(timeout=timeout)]
        except queue.Empty:
            return []
        with contextlib.suppress(queue.Empty):
            while True:
                done.append(self._ended.get_nowait())
        results = []
        for future in done:
            item = self._futures.pop(future)
            try:
                results.append(future.result())
            except BaseException as exc:  # run_attempt catches Exception: this is rarer
                text = f"{type(exc).__name__}: {exc}"
                results.append(
                    RunResult(item.id, Crashed("batch", text).text, error=text, fields=item.fields)
                )
        return results

    def stop(self, outcome: Outcome, *, kill: bool) -> None:
        self._supervisor.stop(outcome, kill=kill)

    def live_usage(self) -> Usage:
        return self._supervisor.live_usage()

    def spent(self, cost: float) -> None:
        self._supervisor.spent = cost

    def stopping(self) -> Outcome | None:
        return self._supervisor.stopping

    def close(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait, cancel_futures=True)
        self._supervisor.close()


@dataclass(frozen=True, slots=True)
class RayPool:
    """Runs on a Ray cluster, in threaded actors: never one Ray task per run.

    ``address`` goes to ``ray.init`` when Ray is not initialised yet: ``"auto"`` joins a
    running cluster, ``"local"`` starts one in this process (and shuts it down after
    the batch), ``"ray://host:10001"`` is a Ray client, None lets Ray choose. If this
    process is already connected, that cluster is used and never shut down.
    ``actors`` is the number of actors (default: one per alive node, each pinned to its
    node); the batch's ``max_concurrency`` is shared among them, each running its share
    in threads, with one supervisor thread per actor. ``init`` adds keyword arguments for
    ``ray.init`` (``object_store_memory``, ``runtime_env``...).

    An actor that dies (killed, its node lost) is restarted (``max_restarts``, on the
    same node when it is alive) and each run it had in flight is tried once more on a
    live actor; its partial trajectory stays. ``four`` (and whatever ``make_run`` needs)
    must be importable on every node, and ``output_dir`` should be a folder every node
    sees (a shared file system), or each node keeps the trajectories it wrote; the
    manifest is always written by this process.

    >>> RayPool(address="auto").address
    'auto'
    """

    address: str | None = None
    actors: int | None = None
    max_restarts: int = 4
    init: Mapping[str, object] = field(default_factory=dict)

    def open(self, spec: Spec) -> Session:
        try:
            from four.batch._ray import RaySession  # Ray is imported here, and only here
        except ModuleNotFoundError as exc:
            if exc.name != "ray":
                raise
            raise ImportError("RayPool needs Ray: pip install 'four-loop[ray]'") from exc
        return RaySession(self, spec)
