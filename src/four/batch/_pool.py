"""The pools that run a batch in this process: threads, or tasks on one event loop.

``ThreadPool`` runs a plain ``make_run`` in threads, at most ``max_threads`` at once:
CPython's thread bookkeeping grows with the number of live threads at every thread
start and stop, so thousands of threads cost quadratic CPU; past the bound, runs wait
for a thread and the batch's time grows linearly. ``AsyncPool`` runs an async
``make_run`` (``async def make_run(ctx): return await four.arun(...)``) as tasks of one
event loop in one thread: ten thousand runs at once cost no thread each; with
``processes=N``, over N worker processes (``_procpool``), one event loop each.
"""

from __future__ import annotations

from dataclasses import dataclass

from four.batch._session import Session, Spec
from four.batch._sessions import DEFAULT_MAX_THREADS, YOUNG_OBJECTS, AsyncSession, ThreadSession


@dataclass(frozen=True, slots=True)
class ThreadPool:
    """Runs in threads of this process, ``min(max_concurrency, max_threads)`` at once:
    the default for a plain ``make_run``.

    Model calls and commands wait on sockets and pipes, so threads overlap them well;
    for thousands of runs at once use an async ``make_run`` (``AsyncPool``).

    >>> ThreadPool().max_threads
    1024
    """

    max_threads: int = DEFAULT_MAX_THREADS

    def __post_init__(self) -> None:
        if type(self.max_threads) is not int or self.max_threads < 1:
            raise ValueError(
                f"ThreadPool: max_threads must be a whole number >= 1, not {self.max_threads!r}"
            )

    def open(self, spec: Spec) -> Session:
        return ThreadSession(spec, min(spec.max_concurrency, self.max_threads))


@dataclass(frozen=True, slots=True)
class AsyncPool:
    """Runs an async ``make_run`` as tasks of an event loop, ``max_concurrency`` at once:
    the default for an async ``make_run``.

    With ``processes=1`` (the default) the loop runs in one thread of this process. One
    process holds one GIL, so past a few thousand runs at once the loop's own CPU
    bounds the batch: ``processes=N`` spreads the runs over N worker processes, each
    with its event loop, the least loaded taking the next run (``max_concurrency`` is
    for them all). This process still writes the manifest, and the budgets, Ctrl-C and
    ``time_limit`` work as in one process. The workers start fresh (start method
    ``spawn``), so ``make_run`` must pickle, as for Ray: a function (or an instance of
    a class) defined at a module's top level, not a lambda or a nested function; a
    script's own functions need its ``if __name__ == "__main__":`` guard. A worker that
    dies hands back its runs in flight as ``crashed: batch: worker process N died ...``
    (not final: run the batch again to retry them), each with the usage its metered model
    calls had reported (so the budget counts it); the other workers go on.

    ``gc_threshold``: while the batch runs, the garbage collector's first threshold
    (``gc.set_threshold``) is raised to at least this, then put back (in each worker
    process, with ``processes``). Thousands of live runs keep hundreds of thousands of
    objects, and at CPython's default the collector walks them all again and again: a
    fifth of the CPU of 10,000 runs (bench_scale's ``gc_threshold=None`` row). ``None``
    leaves the collector as it is.

    >>> AsyncPool().gc_threshold
    50000
    >>> AsyncPool(processes=2).processes
    2
    """

    processes: int = 1
    gc_threshold: int | None = YOUNG_OBJECTS

    def __post_init__(self) -> None:
        if type(self.processes) is not int or self.processes < 1:
            raise ValueError(
                f"AsyncPool: processes must be a whole number >= 1, not {self.processes!r}"
            )
        t = self.gc_threshold
        if t is not None and (type(t) is not int or t < 1):
            raise ValueError(
                f"AsyncPool: gc_threshold must be a whole number >= 1 or None, not {t!r}"
            )

    def open(self, spec: Spec) -> Session:
        if self.processes == 1:
            return AsyncSession(spec, self.gc_threshold)
        from four.batch._procpool import ProcessSession  # multiprocessing only when asked

        return ProcessSession(spec, self.processes, self.gc_threshold)
