"""Where a batch's runs go: a pool (``_pool``) opens a session that runs items and hands
back results. Here the protocol, and the sessions of this process: threads, or tasks on
one event loop (each worker process of ``AsyncPool(processes=N)`` hosts an
``AsyncSession``; ``RayPool``'s session is ``_ray``'s)."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import gc
import queue
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from four._outcomes import Crashed, Outcome
from four._types import Checked, Usage
from four.batch._attempt import NODE, MakeRun, arun_attempt, item_of, run_attempt
from four.batch._items import Item
from four.batch._result import RunResult, unfinished
from four.batch._supervisor import Supervisor


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

    @property
    def running(self) -> int:
        """Runs submitted whose result has not been handed back yet."""

    def submit(self, item: Item) -> None:
        """Start a run of ``item`` (only while ``running < capacity``)."""

    def wait(self, timeout: float) -> list[RunResult]:
        """Results of runs that ended, waiting up to ``timeout`` s for at least one."""

    def stop(self, outcome: Outcome, *, kill: bool) -> None:
        """End every run (and any started later) with ``outcome`` at its next step; with
        ``kill``, kill their running commands now."""

    def live_usage(self) -> Usage:
        """What the running runs' metered model calls have used so far."""

    def running_by_node(self) -> dict[str, int]:
        """Runs running on each node (by its address or host name)."""

    def spent(self, cost: float) -> None:
        """What the batch's ended runs spent (earlier invocations included): with
        ``spec.max_cost``, runs stop once that plus their live cost reaches it."""

    def stopping(self) -> Outcome | None:
        """The outcome its own cost check ended every run with, or None."""

    def close(self, wait: bool = True) -> None:
        """Release the workers (with ``wait``, after the running runs end)."""


class Pool(Protocol):
    """Makes sessions: ``ThreadPool()`` or ``RayPool(...)``."""

    def open(self, spec: Spec) -> Session: ...


DEFAULT_MAX_THREADS = 1024
"""Threads a thread session runs at once by default (see ``_pool``)."""

YOUNG_OBJECTS = 50_000
"""``AsyncPool``'s default ``gc_threshold`` (CPython's own is 700)."""


class _InProcess:
    """What both in-process sessions share: one supervisor, and the runs that ended
    handed back in order through a queue (one get per result: ``concurrent.futures.wait``
    would hook into every pending future each time)."""

    def __init__(self, spec: Spec, capacity: int) -> None:
        self._spec = spec
        self._capacity = capacity
        self._supervisor = Supervisor(spec.time_limit, spec.stall_timeout, max_cost=spec.max_cost)
        self._futures: dict[cf.Future[RunResult], Item] = {}
        self._ended: queue.SimpleQueue[cf.Future[RunResult]] = queue.SimpleQueue()

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def running(self) -> int:
        return len(self._futures)

    def _started(self, future: cf.Future[RunResult], item: Item) -> None:
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
            except BaseException as exc:  # an attempt catches Exception: this is rarer
                text = f"{type(exc).__name__}: {exc}"
                results.append(
                    unfinished(item, Crashed("batch", text).text, error=text, final=True)
                )
        return results

    def stop(self, outcome: Outcome, *, kill: bool) -> None:
        self._supervisor.stop(outcome, kill=kill)

    def live_usage(self) -> Usage:
        return self._supervisor.live_usage()

    def running_by_node(self) -> dict[str, int]:
        running = len(self._futures)
        return {NODE: running} if running else {}

    def live_usages(self) -> dict[str, Usage]:
        """Each metered run's usage so far, by item id (``AsyncPool(processes=N)``'s
        workers report them, so a dead worker's runs still count what they spent)."""
        return {item_of(key): usage for key, usage in self._supervisor.live_usages().items()}

    def spent(self, cost: float) -> None:
        self._supervisor.spent = cost

    def stopping(self) -> Outcome | None:
        return self._supervisor.stopping


class ThreadSession(_InProcess):
    def __init__(self, spec: Spec, threads: int) -> None:
        super().__init__(spec, threads)
        self._executor = cf.ThreadPoolExecutor(threads, thread_name_prefix="four-run")

    def submit(self, item: Item) -> None:
        spec = self._spec
        future = self._executor.submit(
            run_attempt, spec.make_run, item, spec.output_dir, self._supervisor
        )
        self._started(future, item)

    def close(self, wait: bool = True) -> None:
        self._executor.shutdown(wait=wait, cancel_futures=True)
        self._supervisor.close()


class AsyncSession(_InProcess):
    """``AsyncPool``'s session in this process (each worker of ``processes`` hosts one):
    one event loop in a thread of its own, its runs as tasks."""

    def __init__(self, spec: Spec, gc_threshold: int | None = YOUNG_OBJECTS) -> None:
        super().__init__(spec, spec.max_concurrency)
        self._loop = asyncio.new_event_loop()
        # arun runs a run's plain parts (a sandbox's command, a check, the seal) in the
        # loop's executor: asyncio's default has min(32, CPUs + 4) threads, which would
        # bound the runs whose plain command is running to a handful. Threads start
        # only when none is idle; at most ThreadPool's bound (see the module's docstring).
        threads = min(spec.max_concurrency, DEFAULT_MAX_THREADS)
        self._loop.set_default_executor(
            cf.ThreadPoolExecutor(threads, thread_name_prefix="four-arun")
        )
        self._thread = threading.Thread(target=self._serve, name="four-batch-loop", daemon=True)
        self._thread.start()
        self._collector = _RaisedCollector(gc_threshold)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def submit(self, item: Item) -> None:
        spec = self._spec
        attempt = arun_attempt(spec.make_run, item, spec.output_dir, self._supervisor)
        self._started(asyncio.run_coroutine_threadsafe(attempt, self._loop), item)

    def close(self, wait: bool = True) -> None:
        if not wait:  # the runs left are cancelled: each ends interrupted, its trajectory sealed
            for future in self._futures:
                future.cancel()
        cf.wait(list(self._futures), timeout=None if wait else 10)
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_closing(), self._loop).result(15)
        with contextlib.suppress(RuntimeError):  # the loop is closed already
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()
        self._supervisor.close()
        self._collector.close()


async def _closing() -> None:
    """The model clients litellm opened on the loop closed; then, as ``asyncio.run`` does at
    its end, the tasks a library left (litellm's logging worker) cancelled and awaited,
    not destroyed pending when the loop goes."""
    if "litellm" in sys.modules:
        from four.invoke._lazy import close_async_clients

        with contextlib.suppress(Exception):
            await close_async_clients()
    current = asyncio.current_task()
    rest = [task for task in asyncio.all_tasks() if task is not current]
    for task in rest:
        task.cancel()
    if rest:
        await asyncio.wait(rest, timeout=5)


class _RaisedCollector:
    """The collector's first threshold raised to ``threshold`` (None: left as it is)
    while any async session is open (they may overlap, in threads), then put back
    unless someone changed it meanwhile."""

    _lock = threading.Lock()
    _open: ClassVar[list[int]] = []  # the thresholds of the sessions open
    _saved: ClassVar[tuple[int, int, int]] = (0, 0, 0)  # the thresholds before them
    _set: ClassVar[tuple[int, int, int]] = (0, 0, 0)  # ... and while they are open

    def __init__(self, threshold: int | None) -> None:
        self._threshold = threshold
        self._change(threshold, opened=True)

    def close(self) -> None:
        threshold, self._threshold = self._threshold, None
        self._change(threshold, opened=False)

    @classmethod
    def _change(cls, threshold: int | None, *, opened: bool) -> None:
        if threshold is None:
            return
        with cls._lock:
            if opened:
                if not cls._open:
                    cls._saved = gc.get_threshold()
                cls._open.append(threshold)
            else:
                cls._open.remove(threshold)
            if cls._open:
                cls._set = (max(cls._saved[0], *cls._open), *cls._saved[1:])
                gc.set_threshold(*cls._set)
            elif gc.get_threshold() == cls._set:
                gc.set_threshold(*cls._saved)
