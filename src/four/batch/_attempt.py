"""One attempt at one item, in the worker that runs it: ``make_run`` under supervision."""

from __future__ import annotations

import asyncio
import inspect
import os
import platform
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeAlias, cast, overload

from four._coroutine import to_end
from four._loop import is_async
from four._outcomes import Crashed, Outcome
from four._types import AsyncInvoke, Checked, Invoke, Watch
from four.batch._items import Item, folder_name
from four.batch._result import (
    RunResult,
    Saved,
    just_sealed,
    read_saved,
    read_stream,
    taken,
    unfinished,
)
from four.batch._supervisor import RunWatch, Supervisor
from four.execute._interrupt import interruptible
from four.invoke._budget import AsyncMetered, Metered


@dataclass(frozen=True, slots=True)
class RunContext(Checked):
    """What ``make_run`` gets for one item: the item, its folder, the supervisor's
    ``watch`` and the attempt's number (docs/batch.md).

    >>> from four import run, save_trajectory
    >>> def make_run(ctx: RunContext):  # doctest: +SKIP
    ...     return run(ctx.meter(G), V1, V2, save_trajectory(ctx.output_dir),
    ...                prompt=ctx.task, watch=ctx.watch)
    """

    item: Item
    output_dir: Path
    watch: Watch
    attempt: int = 1

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def task(self) -> str:
        return self.item.task

    @overload
    def meter(self, G: Invoke) -> Invoke: ...
    @overload
    def meter(self, G: AsyncInvoke) -> AsyncInvoke: ...
    def meter(self, G: Invoke | AsyncInvoke) -> Invoke | AsyncInvoke:
        """G (plain or async) whose usage the batch sees while the run goes (for the
        batch's cost budget and progress). Without it, a run's cost counts once the run
        has ended."""
        if not isinstance(self.watch, RunWatch):
            return G
        if is_async(G):
            return AsyncMetered(cast(AsyncInvoke, G), self.watch)
        return Metered(cast(Invoke, G), self.watch)


RunReturn: TypeAlias = "str | os.PathLike[str] | Outcome | None"
MakeRun: TypeAlias = Callable[[RunContext], "RunReturn | Awaitable[RunReturn]"]
"""Runs one item: usually ``four.run(..., save_trajectory(ctx.output_dir), watch=ctx.watch)``,
or, as an ``async def``, ``await four.arun(...)`` (thousands at once: see ``AsyncPool``).

Returns the trajectory's path (what ``save_trajectory`` gives back), or an outcome, or
None (then the newest trajectory in ``ctx.output_dir`` is read). An exception is the
run's failure: the result says ``crashed: ...``, with the trajectory ``four.run`` saved.
"""

NODE = platform.node()


async def _called(make_run: MakeRun, context: RunContext) -> object:
    returned = make_run(context)
    return asyncio.run(_value(returned)) if inspect.isawaitable(returned) else returned


async def _awaited(make_run: MakeRun, context: RunContext) -> object:
    coroutine = inspect.iscoroutinefunction(make_run)  # (else in a thread of the loop's)
    returned = make_run(context) if coroutine else await asyncio.to_thread(make_run, context)
    return await returned if inspect.isawaitable(returned) else returned


async def _value(value: Awaitable[object]) -> object:
    return await value


def run_attempt(
    make_run: MakeRun,
    item: Item,
    root: Path,
    supervisor: Supervisor,
    attempt: int = 1,
    node: str = NODE,
    key: str | None = None,
) -> RunResult:
    """Run one item under ``supervisor`` (an async ``make_run`` on an event loop of this
    thread) and read what it left; never raises an Exception. ``key``: ``attempt_key``'s."""
    plain = arun_attempt(make_run, item, root, supervisor, attempt, node, key, _called)
    return to_end(plain, "a plain attempt waited")


async def arun_attempt(
    make_run: MakeRun,
    item: Item,
    root: Path,
    supervisor: Supervisor,
    attempt: int = 1,
    node: str = NODE,
    key: str | None = None,
    call: Callable[[MakeRun, RunContext], Awaitable[object]] = _awaited,
) -> RunResult:
    """``run_attempt`` as a task of an event loop: an async ``make_run`` is awaited (a
    plain one runs in a worker thread); ``run_attempt`` is this with ``call`` its own."""
    folder = root.joinpath("runs", folder_name(item.id))  # one Path made, not two
    key = key or attempt_key(item, attempt)  # (see item_of)
    start = time.monotonic()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        before = _streams(folder)  # (an earlier attempt's are not this one's)
    except OSError as exc:
        why = Crashed("batch", f"cannot make {folder}: {exc}").text
        return replace(unfinished(item, why, error=str(exc), attempts=attempt), node=node)
    watch = supervisor.open(key)
    returned: object = None
    error: str | None = None
    try:
        with interruptible(key):  # (in a task: a context variable, the task's own)
            returned = await call(make_run, RunContext(item, folder, watch, attempt))
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        supervisor.done(watch)
    # What the attempt left: read from its trajectory, else from what make_run said.
    wall = round(time.monotonic() - start, 6)
    saved = _saved(returned, folder, before)
    stop = watch.stop
    if saved is not None and saved.outcome is not None:
        outcome = saved.outcome
    elif isinstance(returned, Outcome):
        outcome = returned.text
    elif error is not None:
        outcome = Crashed("make_run", error).text
    elif stop is not None:
        outcome = stop.text
    else:
        outcome = Crashed("batch", f"make_run saved no trajectory in {folder}").text
    final = not (watch.by_batch and stop is not None and outcome.startswith(stop.tag))
    if saved is None:
        result = unfinished(item, outcome, watch.usage, error, attempt, final)
    else:
        result = taken(item, saved, attempt, node, error)
    return replace(result, outcome=outcome, wall_time=wall, final=final, node=node)


def attempt_key(item: Item, attempt: int) -> str:
    """A new key for an attempt at ``item`` (unique among the batch's attempts)."""
    return f"{item.id}#{attempt}#{uuid.uuid4().hex[:8]}"


def item_of(key: str) -> str:
    """The item id of an attempt's key (``<id>#<attempt>#<random>``, as the supervisor
    knows the run)."""
    return key.rsplit("#", 2)[0]


def _streams(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.jsonl")}


def _saved(returned: object, folder: Path, before: set[str]) -> Saved | None:
    """The trajectory of this attempt: the path make_run returned, else the newest one
    that appeared in its folder (the sealed ``.json``, or the ``.jsonl`` of a run cut short)."""
    if isinstance(returned, str | os.PathLike):
        path = returned if isinstance(returned, Path) else Path(returned)  # no re-parse
        if path.suffix in (".json", ".jsonl") and (saved := just_sealed(path) or read_saved(path)):
            return saved
    try:
        return newest([folder / n for n in _streams(folder) - before])
    except OSError:
        return None


def newest(streams: list[Path], *, ended: bool = False) -> Saved | None:
    """The newest of ``streams`` saved (sealed, or read from its lines); with ``ended``,
    the newest saved complete (sealed, or with its end record: its worker was lost while
    sealing), whose stats count that run's whole usage."""
    for saved in map(read_stream, sorted(streams, key=_mtime, reverse=True)):
        if saved is not None and (saved.outcome is not None or not ended):
            return saved
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
