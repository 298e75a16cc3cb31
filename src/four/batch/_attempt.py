"""One attempt at one item, in the worker that runs it: ``make_run`` under supervision."""

from __future__ import annotations

import os
import platform
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from four._outcomes import Crashed, Outcome
from four._types import Invoke, Watch
from four.batch._items import Item, folder_name
from four.batch._result import RunResult, Saved, read_saved
from four.batch._supervisor import Metered, RunWatch, Supervisor
from four.execute._interrupt import interruptible


@dataclass(frozen=True, slots=True)
class RunContext:
    """What ``make_run`` gets for one item: the item, a folder for its trajectory, and
    the supervisor's ``watch`` to pass to ``four.run``.

    ``output_dir`` is ``DIR/runs/<id>/`` (the same for every attempt at the item).
    ``attempt`` is 1, or 2 when the run is tried again after its worker died.

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

    def meter(self, G: Invoke) -> Invoke:
        """G whose usage the batch sees while the run goes (for the batch's cost budget
        and progress). Without it, a run's cost counts once the run has ended."""
        return Metered(G, self.watch) if isinstance(self.watch, RunWatch) else G


MakeRun: TypeAlias = Callable[[RunContext], "str | os.PathLike[str] | Outcome | None"]
"""Runs one item: usually ``four.run(..., save_trajectory(ctx.output_dir), watch=ctx.watch)``.

Returns the trajectory's path (what ``save_trajectory`` gives back), or an outcome, or
None (then the newest trajectory in ``ctx.output_dir`` is read). An exception is the
run's failure: the result says ``crashed: ...``, with the trajectory ``four.run`` saved.
"""

NODE = platform.node()


def run_attempt(
    make_run: MakeRun,
    item: Item,
    root: Path,
    supervisor: Supervisor,
    attempt: int = 1,
    node: str = NODE,
    recover_since: float | None = None,
) -> RunResult:
    """Run one item under ``supervisor`` and read what it left; never raises an Exception.

    ``recover_since`` (a retry after a lost worker): if a run of the item that started
    at or after that time (epoch seconds) was saved complete, its result is taken from
    that trajectory instead of running the item again.
    """
    folder = root.joinpath("runs", folder_name(item.id))  # one Path made, not two
    if recover_since is not None:
        done = _finished_since(folder, recover_since)
        if done is not None:
            return RunResult(
                item.id, str(done.outcome), done.path, done.steps, done.prompt_tokens,
                done.completion_tokens, done.cost, done.wall_time, None, attempt, True, node,
                item.fields,
            )  # fmt: skip
    key = f"{item.id}#{attempt}#{uuid.uuid4().hex[:8]}"
    returned: object = None
    error: str | None = None
    start = time.monotonic()
    try:
        before = _new_folder(folder)
    except OSError as exc:
        return RunResult(
            item.id, Crashed("batch", f"cannot make {folder}: {exc}").text, error=str(exc),
            attempts=attempt, final=False, node=node, fields=item.fields,
        )  # fmt: skip
    watch = supervisor.open(key)
    try:
        with interruptible(key):
            returned = make_run(RunContext(item, folder, watch, attempt))
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        supervisor.done(watch)
    wall = round(time.monotonic() - start, 6)
    saved = _saved(returned, folder, before)
    if saved is not None and saved.outcome is not None:
        outcome = saved.outcome
    elif isinstance(returned, Outcome):
        outcome = returned.text
    elif error is not None:
        outcome = Crashed("make_run", error).text
    elif watch.stop is not None:
        outcome = watch.stop.text
    else:
        outcome = Crashed("batch", f"make_run saved no trajectory in {folder}").text
    stop = watch.stop
    final = not (watch.by_batch and stop is not None and outcome.startswith(stop.tag))
    return RunResult(
        item.id,
        outcome,
        saved.path if saved is not None else None,
        saved.steps if saved is not None else 0,
        saved.prompt_tokens if saved is not None else watch.usage.prompt_tokens,
        saved.completion_tokens if saved is not None else watch.usage.completion_tokens,
        saved.cost if saved is not None else watch.usage.known_cost,
        wall,
        error,
        attempt,
        final,
        node,
        item.fields,
    )


def _new_folder(folder: Path) -> set[str]:
    """Make the item's folder if it is not there: the streams already in it."""
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        if not folder.is_dir():
            raise
        return _streams(folder)
    return set()  # made just now: nothing in it (and no need to list it)


def _streams(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("*.jsonl")}


def _saved(returned: object, folder: Path, before: set[str]) -> Saved | None:
    """The trajectory of this attempt: the path make_run returned, else the newest one
    that appeared in its folder (the sealed ``.json``, or the ``.jsonl`` of a run cut short)."""
    if isinstance(returned, str | os.PathLike):
        path = returned if isinstance(returned, Path) else Path(returned)  # no re-parse
        saved = read_saved(path) if path.suffix in (".json", ".jsonl") else None
        if saved is not None:
            return saved
    try:
        new = [folder / n for n in _streams(folder) - before]
    except OSError:
        return None
    for stream in sorted(new, key=_mtime, reverse=True):
        sealed = stream.with_suffix(".json")
        saved = read_saved(sealed if sealed.is_file() else stream)
        if saved is not None:
            return saved
    return None


def _finished_since(folder: Path, since: float) -> Saved | None:
    """The trajectory in ``folder`` of a run that started at or after ``since`` and ended
    (sealed, or its stream has the end record: killed while sealing)."""
    try:
        streams = list(folder.glob("*.jsonl"))
    except OSError:
        return None
    for stream in sorted(streams, key=_mtime, reverse=True):
        sealed = stream.with_suffix(".json")
        saved = read_saved(sealed if sealed.is_file() else stream)
        if saved is not None and saved.outcome is not None and saved.started_at >= since:
            return saved
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
