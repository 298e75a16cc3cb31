"""The pools that run a batch: threads or tasks on one event loop here, or a Ray cluster.

``ThreadPool`` runs a plain ``make_run`` in threads, at most ``max_threads`` at once:
CPython's thread bookkeeping grows with the number of live threads at every thread
start and stop, so thousands of threads cost quadratic CPU; past the bound, runs wait
for a thread and the batch's time grows linearly. ``AsyncPool`` runs an async
``make_run`` (``async def make_run(ctx): return await four.arun(...)``) as tasks of one
event loop in one thread: ten thousand runs at once cost no thread each; with
``processes=N``, over N worker processes (``_procpool``), one event loop each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from four._checked import check_fields
from four.batch._session import Session, Spec
from four.batch._sessions import DEFAULT_MAX_THREADS, YOUNG_OBJECTS, AsyncSession, ThreadSession


def _whole(what: str, value: object, other: str = "") -> None:
    if type(value) is not int or value < 1:
        raise ValueError(f"{what} must be a whole number >= 1{other}, not {value!r}")


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
        _whole("ThreadPool: max_threads", self.max_threads)

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
    """Runs on a Ray cluster, in threaded actors: never one Ray task per run.

    ``address`` goes to ``ray.init`` when Ray is not initialised yet: ``"auto"`` joins a
    running cluster, ``"local"`` starts one in this process (and shuts it down after
    the batch), ``"ray://host:10001"`` is a Ray client, None lets Ray choose. If this
    process is already connected, that cluster is used and never shut down.
    ``actors`` is the number of actors (default: one per alive node, each pinned to its
    node); the batch's ``max_concurrency`` is shared among them, each running its share
    in threads, with one supervisor thread per actor. ``init`` adds keyword arguments for
    ``ray.init`` (``object_store_memory``, ``runtime_env``...).

    Records travel: each run writes into a scratch folder on its node (under
    ``scratch``, default the node's temporary folder), and its trajectory, stream and
    whatever else it writes there come back to the batch folder here as the run goes
    (every 0.5 s) and whole when it ends; no node needs to see ``output_dir``.

    An actor that dies (killed, its node lost) is restarted (``max_restarts``, on the
    same node when it is alive) and each run it had in flight is tried once more on a
    live actor: at once when its process is known dead, else once its ``lease`` is over
    (an actor that hears nothing from this process for ``lease`` seconds stops its
    runs), so no item runs twice at once. Its partial stream stays in the batch folder,
    and what it had spent on model calls metered with ``ctx.meter`` (by the actor's last
    status) counts in the item's result and the budget. ``four`` (and whatever
    ``make_run`` needs) must be importable on every node.

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
        return RaySession(
            self.address, self.actors, self.max_restarts, self.init, spec, self.scratch,
            self.lease,
        )  # fmt: skip
