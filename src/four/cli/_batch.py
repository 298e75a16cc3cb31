"""``four batch TASKS.jsonl``: ``four run``'s agent on every task of a file, on threads,
``AsyncPool`` (``--processes``) or Ray (docs/batch.md)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

from four._types import JSON, AsyncExecute, AsyncInvoke, Execute, Invoke
from four.cli import _settings as env
from four.cli._errors import UsageError

if TYPE_CHECKING:  # only argparse is needed to define the flags (four --help)
    from collections.abc import Callable

    from rich.live import Live

    from four._types import Recorder
    from four.batch._attempt import MakeRun, RunContext
    from four.batch._batch import Progress
    from four.batch._items import Item
    from four.batch._result import RunResult
    from four.batch._sessions import Pool
    from four.cli._build import Prepared
    from four.cli._options import RunOptions
    from four.search import Attempt, Search

T = TypeVar("T")
DEFAULT_WORKERS = 8
DEFAULT_STALL = 900.0


def flags(p: argparse.ArgumentParser) -> None:
    """Define the flags of ``four batch`` on ``p`` (the subcommand's parser)."""
    p.add_argument("tasks", metavar="TASKS", help="JSON Lines file: {id, task, ...} per line")
    env.agent_flags(p)
    p.add_argument(
        "-w", "--workers", type=env.positive_int,
        help=f"runs at once [FOUR_WORKERS, {DEFAULT_WORKERS}]",
    )  # fmt: skip
    p.add_argument(
        "--processes",
        type=env.count,  # 0: refused by batch_options in one line, as FOUR_PROCESSES=0
        metavar="N",
        help="run the tasks as async tasks over N processes (1: this one), for thousands "
        "at once [FOUR_PROCESSES, threads]",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run on a Ray cluster: auto, local, ray://HOST:10001 or HOST:PORT [FOUR_RAY]",
    )
    p.add_argument(
        "-o",
        "--output-dir",
        help="the batch folder, outside the agents' workspace, or s3://bucket/prefix "
        "[FOUR_BATCH_DIR, $XDG_STATE_HOME/four/batches/<TASKS name>-<digest>]",
    )
    p.add_argument(
        "--output-in-workspace",
        action="store_true",
        help="allow -o inside the workspace, where the agents' commands can read it",
    )
    env.budget_flags(p)
    p.add_argument(
        "--stall-timeout",
        type=env.number,
        metavar="SECONDS",
        help=f"end a run stalled after this long with no step; 0 = never "
        f"[FOUR_STALL_TIMEOUT, {DEFAULT_STALL:g}]",
    )
    p.add_argument(
        "--batch-cost-limit",
        type=env.number,
        metavar="USD",
        help="USD for the whole batch, earlier invocations included [none]",
    )
    p.add_argument(
        "--batch-timeout",
        type=env.number,
        metavar="SECONDS",
        help="wall-clock limit of this invocation [none]",
    )
    p.add_argument(
        "--redo", action="store_true", help="run every task again, finished ones included"
    )
    env.output_flags(p, "the summary", "the summary line")


@dataclass(frozen=True, slots=True)
class _Command:
    """What both ``make_run`` of ``four batch`` carry, and the agent they build for an
    item; picklable for Ray actors and worker processes (the API key goes with it)."""

    opts: RunOptions
    model: str
    key: str | None
    system: str

    def options(self, ctx: RunContext) -> RunOptions:
        """``four run``'s options for ``ctx``'s item: its own settings over the batch's."""
        from four.cli._launchfile import item_options

        return item_options(self.opts, ctx.task, ctx.item.fields)

    def agent(self, ctx: RunContext, attempt: Attempt | None = None) -> Prepared:
        """``four run``'s agent for ``ctx``'s item, saved to ``ctx.output_dir``; for an
        ``attempt``, in its copy of the workspace, sampling as it says."""
        from four.cli._build import load_domain, prepare, system_prompt, with_preview
        from four.trajectory import save_trajectory

        opts = self.options(ctx)
        record: dict[str, JSON] = {**opts.record(), "batch_item": ctx.id}
        if attempt is not None:
            opts = replace(opts, cwd=attempt.cwd or opts.cwd, cost_limit=None)  # the search's
        domain = load_domain(opts.domain)
        same = opts.domain == self.opts.domain or opts.system_file
        system = with_preview(self.system if same else system_prompt(opts, domain), opts)
        return prepare(
            opts,
            self.model,
            self.key,
            domain,
            system,
            record,
            emit=save_trajectory(ctx.output_dir),
            sampling=attempt.sampling if attempt is not None else None,
            check_program=False,
        )

    def search(self, ctx: RunContext) -> Search[Path]:
        """A search for ``ctx``'s item (``--attempts``), recorded in ``ctx.output_dir``."""
        from four.cli._options import workspace
        from four.search import Budget, Search

        opts = self.options(ctx)
        return Search(
            opts.attempts,
            ctx.task,
            workspace=workspace(opts),
            keep=(str(ctx.output_dir.parent.parent),),  # the batch folder, if inside
            seed=opts.seed,
            temperature=opts.attempt_temperature,
            budget=Budget(cost=opts.cost_limit),
            record_dir=ctx.output_dir,
        )

    def ran(self, ctx: RunContext, attempt: Attempt | None, loop: Callable[..., T]) -> T:
        """``loop`` (``run``, or ``arun`` with G and V2 awaited) over ``ctx``'s item's
        agent; for an ``attempt``, within the search's budget and linked to it."""
        import inspect

        from four.cli._build import traced

        a = self.agent(ctx, attempt)
        G: Invoke | AsyncInvoke = a.G
        V2: Execute | AsyncExecute = a.V2
        if inspect.iscoroutinefunction(loop):
            G, V2 = awaited_invoke(a.G) or a.G, awaited_env(a.V2) or a.V2
        G = ctx.meter(G)
        emit: Recorder[Path] = a.recording
        opts = self.options(ctx)
        prompt, steps, watch = ctx.task, opts.max_steps, ctx.watch
        if attempt is not None:
            G, V2, emit = attempt.invoke(G), attempt.env(V2), attempt.emit(emit)
            steps, watch = attempt.limit(steps), attempt.watching(watch)
            prompt = attempt.prompt(prompt)
        return loop(G, a.V1, V2, emit, a.system, prompt, steps, opts.max_format_errors,
                    check=a.check, watch=traced(self.opts, watch))  # fmt: skip


@dataclass(frozen=True, slots=True)
class CommandRun(_Command):
    """The ``make_run`` of ``four batch`` on threads or Ray: ``four run``'s agent on one item."""

    def __call__(self, ctx: RunContext) -> Path:
        from four import run

        if self.opts.attempts > 1:  # each attempt as below, the result's trajectory returned
            return _result(
                self.search(ctx).run(lambda attempt: self.ran(ctx, attempt, run)), ctx.id
            )
        path: Path = self.ran(ctx, None, run)
        return path


@dataclass(frozen=True, slots=True)
class AsyncCommandRun(_Command):
    """The ``make_run`` of ``four batch --processes``: the same agent under ``four.arun``,
    its model call and ``--env local``/``persistent`` awaited (``awaited_invoke``,
    ``awaited_env``); the rest runs in worker threads."""

    async def __call__(self, ctx: RunContext) -> Path:
        from four import arun

        if self.opts.attempts > 1:
            search = self.search(ctx)
            return _result(await search.arun(lambda a: self.ran(ctx, a, arun)), ctx.id)
        return await self.ran(ctx, None, arun)


def awaited_invoke(G: Invoke) -> AsyncInvoke | None:
    """G awaited, with the same wrappers and settings, or None.

    >>> from four.invoke import budget_invoke, litellm_invoke, retry_invoke
    >>> awaited_invoke(budget_invoke(retry_invoke(litellm_invoke("m")), cost_limit=1.0))
    ... # doctest: +ELLIPSIS
    AsyncWrapped(wrapper=BudgetInvoke(...), G=AsyncWrapped(wrapper=RetryInvoke(...), G=...))
    """
    from four.invoke import (
        AsyncLitellmInvoke,
        BudgetInvoke,
        CycleBreakingInvoke,
        LitellmInvoke,
        RetryInvoke,
    )
    from four.invoke._budget import AsyncWrapped

    if type(G) is LitellmInvoke:
        return AsyncLitellmInvoke(G)
    if isinstance(G, BudgetInvoke | RetryInvoke | CycleBreakingInvoke):
        inner = awaited_invoke(G.G)
        return None if inner is None else AsyncWrapped(G, inner)
    return None


def awaited_env(V2: Execute) -> AsyncExecute | None:
    """V2 awaited, with the same settings (not started yet), or None.

    >>> from four.execute import local_env, note_repeats
    >>> type(awaited_env(note_repeats(local_env()))).__name__
    'AsyncNoteRepeats'
    """
    from four.execute import NoteRepeats
    from four.execute._async import AsyncLocalEnv, AsyncShellEnv
    from four.execute._local import LocalEnv
    from four.execute._repeats import AsyncNoteRepeats
    from four.execute._shell import ShellEnv

    if type(V2) is LocalEnv:
        return AsyncLocalEnv(V2)
    if type(V2) is ShellEnv:  # its shell, read on the event loop
        return AsyncShellEnv(V2)
    if isinstance(V2, NoteRepeats):
        inner = awaited_env(V2.inner)
        return None if inner is None else AsyncNoteRepeats(V2, inner)
    return None


def _result(search: Search[Path], item: str) -> Path:
    """The trajectory a search's item stands for in the manifest: its result's."""
    if search.lost:
        print(f"four batch: {item}: {search.lost}", file=sys.stderr)
    result = search.result
    if result is None or result.path is None:
        raise RuntimeError(f"no attempt ran: {search.ended}")
    return result.path


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """What ``four batch`` was asked, beyond the agent's settings."""

    tasks: Path
    output_dir: Path  # for a URL, its local copy
    workers: int
    ray: str | None
    processes: int | None  # the async pool's worker processes (None: threads or Ray)
    stall_timeout: float | None
    max_cost: float | None
    max_wall_time: float | None
    redo: bool
    url: str | None = None  # -o s3://bucket/prefix: where the batch lands

    @property
    def destination(self) -> str:
        return self.url if self.url is not None else str(self.output_dir)


def batch_options(args: argparse.Namespace) -> BatchOptions:
    """Flags over ``FOUR_*`` variables over defaults."""
    from four.trajectory._destination import Remote, is_url

    workers = env.over(args.workers, "FOUR_WORKERS", 0)
    stall = env.over(args.stall_timeout, "FOUR_STALL_TIMEOUT", DEFAULT_STALL)
    folder = args.output_dir or env.get("FOUR_BATCH_DIR")
    # Ray's address or the async pool's processes (or neither: threads): a flag overrides
    # the other's variable; both asked for is a usage error.
    if args.ray and args.processes is not None:
        raise UsageError("--processes runs here, --ray on a cluster: give one of them")
    ray = args.ray or (None if args.processes is not None else env.get("FOUR_RAY"))
    processes = args.processes
    given = env.get("FOUR_PROCESSES")
    if processes is None and not args.ray and given is not None:
        processes = env.over(None, "FOUR_PROCESSES", 0)
        if processes < 1:
            raise UsageError(f"FOUR_PROCESSES={given!r} must be at least 1")
    if processes == 0:
        raise UsageError("--processes must be at least 1 (1: one event loop here)")
    if ray and processes is not None:
        raise UsageError("FOUR_RAY and FOUR_PROCESSES are both set: unset one, or give --ray "
                         "or --processes")  # fmt: skip
    url = folder if folder and is_url(folder) else None
    if url is not None:
        output_dir = Remote(url).local
    else:
        output_dir = Path(folder) if folder else default_batch_dir(Path(args.tasks))
    return BatchOptions(
        Path(args.tasks),
        output_dir,
        workers or DEFAULT_WORKERS,
        ray,
        processes,
        stall or None,
        args.batch_cost_limit or None,
        args.batch_timeout or None,
        bool(args.redo),
        url,
    )


def default_batch_dir(tasks: Path) -> Path:
    """Where ``four batch TASKS`` keeps its batch without ``-o`` (docs/batch.md): the same
    tasks file, by its absolute path, resumes the same batch.

    >>> default_batch_dir(Path("/data/tasks.jsonl")).name
    'tasks-891ccb84'
    """
    import hashlib

    from four.cli._options import default_output_dir

    where = Path(os.path.abspath(tasks.expanduser()))
    digest = hashlib.sha256(os.fsencode(where)).hexdigest()[:8]
    return default_output_dir().parent / "batches" / f"{where.stem}-{digest}"


def batch_command(args: argparse.Namespace) -> int:
    """Run ``four batch``; the exit status."""
    from four._files import Unreadable
    from four.batch._batch import iter_runs
    from four.batch._lock import BatchLocked
    from four.batch._pool import AsyncPool, RayPool, ThreadPool
    from four.batch._result import read_results
    from four.cli._build import load_domain, make_check, sigterm_interrupts, system_prompt
    from four.cli._launchfile import apply_settings, check_items, resolve_items
    from four.cli._options import (
        api_key,
        guard_output,
        options,
        output_folder,
        prompt_fits,
        resolve,
    )
    from four.cli._remote import reachable

    settings = apply_settings(args, Path(args.tasks), flags)  # the launch's four.toml, if any
    batch = batch_options(args)
    items = resolve_items(read_tasks(batch.tasks), batch.tasks)
    if not items:
        raise UsageError(f"{batch.tasks} has no tasks")
    # four run's settings, with a stand-in task (each item brings its own).
    opts = options(argparse.Namespace(**{**vars(args), "task": "(each item's task)"}))
    check_items(opts, items, batch.tasks)
    if settings is not None and opts.mode != "quiet" and not opts.json:
        print(f"settings from {settings}", file=sys.stderr)
    if opts.local is not None and (batch.processes or 0) > 1:
        raise UsageError("--local serves its model in each process it runs in: with it, "
                         "give --processes 1 or leave it out")  # fmt: skip
    make_check(opts)  # a bad --check-files is a usage error now, not in every run
    if batch.url is None:
        guard_output(replace(opts, output_dir=str(batch.output_dir)))
    else:
        reachable(batch.url)
    output_folder(str(batch.output_dir))  # before any model call, as four run (a URL's copy)
    try:  # a FIFO, a link to /dev/zero, too large: said before anything runs
        read_results(batch.output_dir)
    except Unreadable as exc:
        raise UsageError(f"the batch's manifest: {exc}") from None
    key = api_key(opts.api_base)
    model, server = resolve(opts.model, opts.api_base, key, opts.local)
    if opts.local is not None:  # one server slot per worker, unless told otherwise
        os.environ.setdefault("FOUR_LOCAL_PARALLEL", str(batch.workers))
    system = system_prompt(opts, load_domain(opts.domain))
    prompt_fits(model, server, system, max((item.task for item in items), key=len))
    make_run: MakeRun = CommandRun(opts, model, key, system)
    pool: Pool = ThreadPool()
    if batch.processes is not None:
        make_run = AsyncCommandRun(opts, model, key, system)
        pool = AsyncPool(processes=batch.processes)
    elif batch.ray:
        if importlib.util.find_spec("ray") is None:
            raise UsageError("--ray needs Ray: pip install 'four-loop[ray]'")
        pool = RayPool(address=batch.ray)
    display = _Display(len(items), opts.mode, sys.stderr, title=f"{model} · {opts.env}")
    results: list[RunResult] = []
    start = time.monotonic()
    status = 0
    display.start()
    try:
        with sigterm_interrupts():
            for result in iter_runs(
                make_run,
                items,
                batch.destination,
                pool=pool,
                max_concurrency=batch.workers,
                time_limit=opts.timeout,
                stall_timeout=batch.stall_timeout,
                max_cost=batch.max_cost,
                max_wall_time=batch.max_wall_time,
                resume=not batch.redo,
                on_progress=display.progress,
            ):
                results.append(result)
                display.result(result)
    except KeyboardInterrupt as exc:
        from four.cli._build import Terminated

        status = 143 if isinstance(exc, Terminated) else 130
    except BatchLocked as exc:  # another driver runs it: one line naming it
        raise UsageError(str(exc)) from None
    except OSError as exc:
        if batch.url is None:
            raise
        raise UsageError(f"{batch.url}: cannot write: {exc}".splitlines()[0]) from None
    finally:
        display.stop()
    return _report(batch, opts.json, results, time.monotonic() - start, status)


def read_tasks(tasks: Path) -> list[Item]:
    """The items of TASKS, or a ``UsageError`` saying why they cannot be read."""
    from four.batch._items import read_items

    try:
        return read_items(tasks)
    except OSError as exc:
        raise UsageError(f"cannot read {tasks}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _report(
    batch: BatchOptions, as_json: bool, results: list[RunResult], wall: float, status: int
) -> int:
    from four.batch._items import read_items
    from four.batch._result import read_manifest

    latest = read_manifest(batch.output_dir)
    items = [item.id for item in read_items(batch.tasks)]
    unfinished = [i for i in items if i not in latest or not latest[i].final]
    if status == 0 and unfinished:
        status = 1
    outcomes = Counter(r.tag for r in results)
    cost = sum(r.cost for r in results)
    manifest = f"{batch.destination.rstrip('/')}/manifest.jsonl"
    if as_json:
        summary: dict[str, JSON] = {
            "ran": len(results),
            "outcomes": dict(outcomes.most_common()),
            "cost": cost,
            "wall_time": round(wall, 3),
            "unfinished": list(unfinished),
            "manifest": manifest,
            "interrupted": status in (130, 143),
        }
        print(json.dumps(summary, indent=2))
        return status
    shown = ", ".join(f"{tag} {n}" for tag, n in outcomes.most_common()) or "nothing to run"
    head = "interrupted · " if status in (130, 143) else ""
    tail = f" · {len(unfinished)} unfinished" if unfinished else ""
    print(f"{head}{len(results)} runs: {shown} · ${cost:.4f} · {wall:.1f}s{tail} · {manifest}")
    return status


@dataclass(slots=True)
class _Display:
    """Progress of a batch: a live status block on a terminal, else a line per result."""

    total: int
    mode: str
    stream: IO[str]
    title: str = ""
    last: Progress | None = None
    recent: deque[RunResult] = field(default_factory=lambda: deque(maxlen=5))
    _live: Live | None = None

    def start(self) -> None:
        if self.mode != "live":
            return
        from rich.live import Live

        from four.cli._terminal import console

        self._live = Live(
            get_renderable=self._frame,
            console=console(self.stream),  # shows control characters in task text
            refresh_per_second=4,
            transient=True,
        )
        self._live.start()

    def stop(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()

    def progress(self, progress: Progress) -> None:
        self.last = progress

    def result(self, result: RunResult) -> None:
        self.recent.append(result)
        if self.mode == "lines":
            done = self.last.done + self.last.skipped + 1 if self.last else 1
            print(f"[{done}/{self.total}] {_result_line(result)}", file=self.stream, flush=True)

    def _frame(self) -> str:
        """The last results, and a status line: done, running, failed, cost, ETA."""
        from four.cli._format import seconds

        lines = [_result_line(r) for r in self.recent]
        p = self.last
        if p is None:
            return "\n".join([*lines, f"{self.title} · starting"])
        eta = f"ETA {seconds(p.eta)}"
        stopping = f" · stopping: {p.stopping}" if p.stopping else ""
        # (over several nodes: how many runs each has)
        nodes = " ".join(f"{n}:{k}" for n, k in sorted(p.nodes.items()))
        running = f"running {p.running}" + (f" ({nodes})" if len(p.nodes) > 1 else "")
        lines.append(
            f"{self.title} · done {p.done + p.skipped}/{self.total} · {running} · "
            f"failed {p.failed} · ${p.cost:.4f} · {seconds(p.elapsed)} · {eta}{stopping}"
        )
        return "\n".join(lines)


def _result_line(r: RunResult) -> str:
    outcome = r.outcome if len(r.outcome) <= 80 else r.outcome[:77] + "..."
    return f"{r.id} · {outcome} · {r.steps} steps · ${r.cost:.4f} · {r.wall_time:.1f}s"


main = batch_command  # what the ``four`` command calls
