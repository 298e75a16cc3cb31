"""iter_runs and run_many: many runs at once, recorded, resumable, within budgets."""

from __future__ import annotations

import contextlib
import inspect
import os
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec

from four import _arguments as arguments
from four._outcomes import Interrupted, Outcome, TimeLimitReached
from four._sigint import deferred
from four._types import JSON, NO_USAGE, Checked, Usage
from four.batch._attempt import MakeRun
from four.batch._items import Item, folder_name, item_from_json
from four.batch._lock import FolderLock, Lease
from four.batch._pool import AsyncPool, ThreadPool
from four.batch._publish import Publisher
from four.batch._result import (
    ManifestWriter,
    RunResult,
    Saved,
    plus,
    read_results,
    read_stream,
    taken,
)
from four.batch._sessions import Pool, Session, Spec
from four.batch._supervisor import cost_limit_reached
from four.trajectory._destination import Remote, is_url

P = ParamSpec("P")
TICK = 0.25
"""Seconds between looks at the budgets (and progress calls) while no run ends."""


@dataclass(frozen=True, slots=True)
class Progress(Checked):
    """Where a batch stands, as ``on_progress`` is told (the fields: docs/batch.md).

    >>> Progress(total=10, skipped=0, done=4, failed=1, running=2, cost=0.5, elapsed=8.0).eta
    12.0
    """

    total: int | None
    skipped: int
    done: int
    failed: int
    running: int
    cost: float
    elapsed: float
    stopping: str | None = None
    nodes: Mapping[str, int] = field(default_factory=dict)

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace so far (None until a run has finished)."""
        if self.total is None or not self.done or self.stopping is not None:
            return None
        left = max(0, self.total - self.skipped - self.done)
        return left * self.elapsed / self.done


def iter_runs(
    make_run: MakeRun,
    items: Iterable[Item | Mapping[str, JSON]],
    output_dir: str | os.PathLike[str] = "batch",
    *,
    pool: Pool | None = None,
    max_concurrency: int = 32,
    time_limit: float | None = None,
    stall_timeout: float | None = None,
    max_cost: float | None = None,
    max_wall_time: float | None = None,
    resume: bool = True,
    on_progress: Callable[[Progress], None] | None = None,
) -> Generator[RunResult, None, None]:
    """Run ``make_run`` on every item, at most ``max_concurrency`` at once, and yield
    one ``RunResult`` per item as its run finishes (the settings: docs/batch.md).

    >>> from four import run, scripted_invoke, regex_parse, local_env, save_trajectory
    >>> def make_run(ctx):
    ...     G = scripted_invoke(["```bash\\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\n```"])
    ...     return run(G, regex_parse(), local_env(), save_trajectory(ctx.output_dir),
    ...                prompt=ctx.task, watch=ctx.watch)
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> [(r.id, r.outcome, r.steps) for r in iter_runs(make_run, [Item("a", "say hi")], out)]
    [('a', 'exit:task_complete', 1)]
    >>> list(iter_runs(make_run, [Item("a", "compute")], out))  # finished: skipped
    []
    """
    where = "iter_runs"
    arguments.component(where, "make_run", make_run, "a function: RunContext -> a run's result")
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise TypeError(f"{where}: items={items!r:.60}: give a list of tasks (Items or dicts)")
    arguments.path(where, "output_dir", output_dir)
    arguments.count(where, "max_concurrency", max_concurrency, minimum=1)
    arguments.seconds(where, "time_limit", time_limit, optional=True)
    arguments.seconds(where, "stall_timeout", stall_timeout, optional=True)
    arguments.amount(where, "max_cost", max_cost, optional=True)
    arguments.amount(where, "max_wall_time", max_wall_time, optional=True)
    arguments.flag(where, "resume", resume)
    remote = Remote(os.fspath(output_dir)) if is_url(output_dir) else None
    folder = remote.local if remote is not None else Path(output_dir).expanduser().absolute()
    if pool is None:  # tasks on an event loop for an async make_run, threads for a plain one
        pool = AsyncPool() if inspect.iscoroutinefunction(make_run) else ThreadPool()
    batch = _Batch(
        Spec(make_run, folder, max_concurrency, time_limit, stall_timeout, max_cost),
        pool,
        resume,
        len(items) if isinstance(items, Sized) else None,
        max_wall_time,
        on_progress,
        remote,
    )
    return batch.results(_checked(items))


def _checked(items: Iterable[Item | Mapping[str, JSON]]) -> Iterator[Item]:
    seen = set()
    for raw in items:
        item = raw if isinstance(raw, Item) else item_from_json(raw)
        if item.id in seen:
            raise ValueError(f"the item id {item.id!r} appears twice in the batch")
        seen.add(item.id)
        yield item


def _collected(iterate: Callable[P, Iterable[RunResult]]) -> Callable[P, list[RunResult]]:
    def run_many(*args: P.args, **kwargs: P.kwargs) -> list[RunResult]:
        """``iter_runs``, collected: the results of this invocation, in the order runs
        ended (its parameters). Ctrl-C re-raises after the running runs are saved.

        >>> from four import Finished
        >>> import tempfile
        >>> [r.outcome for r in run_many(lambda ctx: Finished(), [{"id": "x"}], tempfile.mkdtemp())]
        ['exit:task_complete']
        """
        return list(iterate(*args, **kwargs))

    signature = inspect.signature(iterate).replace(return_annotation="list[RunResult]")
    run_many.__signature__ = signature  # type: ignore[attr-defined]  # for help()
    return run_many


run_many = _collected(iter_runs)


@dataclass(eq=False)
class _Batch:
    """The scheduling loop of one invocation (the generator behind ``iter_runs``)."""

    spec: Spec
    pool: Pool
    resume: bool
    total: int | None
    max_wall_time: float | None
    on_progress: Callable[[Progress], None] | None
    remote: Remote | None = None
    publisher: Publisher | None = None
    started: float = field(default_factory=time.monotonic)
    stopping: Outcome | None = None
    skipped: int = 0
    done: int = 0
    failed: int = 0
    spent: float = 0.0
    finished: set[str] = field(default_factory=set)
    accounted: set[str] = field(default_factory=set)  # streams whose spend a line carries
    carried: dict[str, tuple[Usage, tuple[str, ...]]] = field(default_factory=dict)  # by id
    lease: Lease | None = None
    writer: ManifestWriter = field(init=False)
    session: Session = field(init=False)

    def results(self, source: Iterator[Item]) -> Generator[RunResult, None, None]:
        with contextlib.ExitStack() as held:  # each let go, whatever one before raised
            # One driver per destination (a second refuses: BatchLocked): the URL's lease,
            # and the folder's lock (for a URL, its local copy's: two drivers of one
            # machine share it).
            # Each let go even if its acquire was cut short (a release before one is none).
            url = self.remote.url if self.remote is not None else None
            if url is not None:
                self.lease = Lease(url)
                held.callback(self.lease.release)
                self.lease.acquire()
            folder = FolderLock(self.spec.output_dir, url)
            held.callback(folder.release)
            folder.acquire()
            held.callback(self._publish)  # (after the session's close: the manifest last)
            if self.remote is not None:  # what the URL has (its manifest says what is done)
                self.remote.pull()
            with deferred():  # opened and sure to be closed, or not opened
                self.writer = ManifestWriter(self.spec.output_dir, relative=bool(self.remote))
                held.callback(self.writer.close)
            earlier = read_results(self.writer.path)
            self.spent = sum(r.cost for r in earlier)
            root = self.spec.output_dir
            for r in earlier:
                self.accounted.update(r.lost_streams)
                if (t := r.trajectory) is not None and t.is_relative_to(root):
                    self.accounted.add(t.relative_to(root).with_suffix(".jsonl").as_posix())
            if self.resume:
                latest = {r.id: r for r in earlier}
                self.finished = {i for i, r in latest.items() if r.final}
            self.session = self.pool.open(self.spec)
            held.callback(self.session.close)
            self.session.spent(self.spent)
            if self.remote is not None:
                self.publisher = Publisher(self.remote)
            self.started = time.monotonic()
            yield from self._loop(source)

    def _publish(self) -> None:
        if self.publisher is not None:
            self.publisher.close()

    def _loop(self, source: Iterator[Item]) -> Iterator[RunResult]:
        session = self.session
        exhausted = False
        try:
            while True:
                self._check_budgets()
                while (
                    self.stopping is None and not exhausted and session.running < session.capacity
                ):
                    item = next(source, None)
                    if item is None:
                        exhausted = True
                    elif item.id in self.finished:
                        self.skipped += 1
                    elif (taken := self._earlier(item)) is not None:
                        yield self._record(taken)
                    else:
                        with deferred():  # started and counted as running, or neither
                            session.submit(item)
                if session.running == 0 and (exhausted or self.stopping is not None):
                    break
                with deferred():  # each ended run taken from the session is recorded
                    recorded = [self._record(result) for result in session.wait(TICK)]
                yield from recorded
                self._progress()
            self._progress()
        except BaseException as exc:
            self._wind_down(exc)
            raise

    def _earlier(self, item: Item) -> RunResult | None:
        """What attempts at ``item`` whose results never reached the manifest left (a
        driver killed mid-batch): the result of one that ended, taken as it is (newest
        first); else their spend, carried into the item's next result."""
        root = self.spec.output_dir
        folder = root / "runs" / folder_name(item.id)
        if not self.resume or not folder.is_dir():  # (not resumed: every item anew)
            return None
        lost: dict[str, Saved] = {}  # newest first (streams are named by start time)
        for stream in sorted(folder.glob("*.jsonl"), reverse=True):
            name = stream.relative_to(root).as_posix()
            if name not in self.accounted and (saved := read_stream(stream)) is not None:
                lost[name] = saved
        self.accounted.update(lost)
        ended = next((n for n, s in lost.items() if s.outcome is not None), None)
        others = {n: s for n, s in lost.items() if n != ended}
        usage = sum((s.usage for s in others.values()), NO_USAGE)
        if ended is None:
            if lost:
                self.carried[item.id] = (usage, tuple(others))
            return None
        why = "its result was not recorded (the batch's driver was lost): taken"
        return plus(taken(item, lost[ended], error=why), usage, tuple(others))

    def _record(self, result: RunResult) -> RunResult:
        """Write the result's manifest line (with what it carries); the result."""
        carried = self.carried.pop(result.id, None)
        if carried is not None:  # what attempts lost with an earlier driver spent
            result = plus(result, *carried)
        self.writer.write(result)
        if self.publisher is not None:
            self.publisher.ended(f"runs/{folder_name(result.id)}")
        self.spent += result.cost
        self.session.spent(self.spent)
        self.done += 1
        self.failed += not result.submitted
        return result

    def _check_budgets(self) -> None:
        if self.stopping is not None:
            return
        if self.lease is not None and self.lease.lost is not None:  # another driver took over
            self._stop(Interrupted(self.lease.lost), kill=True)
            return
        self.stopping = self.session.stopping()  # the session's own cost check
        if self.stopping is not None:
            return
        wall = self.max_wall_time
        if wall is not None and time.monotonic() - self.started >= wall:
            self._stop(TimeLimitReached(f"the batch's wall-clock limit of {wall:g} s"), kill=True)
            return
        if self.spec.max_cost is not None and self._cost() >= self.spec.max_cost:
            self._stop(cost_limit_reached(self.spec.max_cost), kill=False)

    def _stop(self, outcome: Outcome, *, kill: bool) -> None:
        self.stopping = outcome
        self.session.stop(outcome, kill=kill)

    def _cost(self) -> float:
        return self.spent + self.session.live_usage().known_cost

    def _progress(self) -> None:
        if self.on_progress is None:
            return
        self.on_progress(
            Progress(
                self.total,
                self.skipped,
                self.done,
                self.failed,
                self.session.running,
                self._cost(),
                time.monotonic() - self.started,
                self.stopping.text if self.stopping is not None else None,
                self.session.running_by_node(),
            )
        )

    def _wind_down(self, exc: BaseException) -> None:
        """End the running runs cooperatively, kill their commands, and record them."""
        reasons = {KeyboardInterrupt: "batch interrupted", GeneratorExit: "batch closed"}
        reason = reasons.get(type(exc), f"batch stopped by {type(exc).__name__}")
        self._stop(Interrupted(reason), kill=True)
        try:
            while self.session.running:
                for result in self.session.wait(TICK):
                    self._record(result)
                self._progress()
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting
            self.session.close(wait=False)
