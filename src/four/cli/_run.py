"""``four run TASK``: an agent on a task, shown live, saved as it goes (docs/cli.md); with
``--attempts K``, a search (``four.search``); with ``--resume TRAJ``, a new attempt at a run."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from four._types import JSON, Assistant, Message, ToolResult, User, unanswered
from four.cli import _settings as env
from four.cli._build import (
    Deadline,
    Saving,
    ended,
    failed_json,
    load_domain,
    prepare,
    report,
    sigterm_interrupts,
    system_prompt,
    traced,
    watched,
    with_preview,
)
from four.cli._errors import UsageError
from four.cli._format import seconds, tokens
from four.cli._options import (
    RunOptions,
    api_key,
    display_mode,
    guard_output,
    local_settings,
    options,
    output_folder,
    prompt_fits,
    resolve,
    signing_key,
    workspace,
)
from four.domains import Domain

if TYPE_CHECKING:
    from four.search import Attempt, Member, Search
    from four.trajectory._sign import SigningKey


def main(args: argparse.Namespace) -> int:
    """Run the agent; exit 0 finished or accepted, 1 any other end, 2 usage, 130 Ctrl-C."""
    from four import run
    from four.trajectory import TrajectoryNotSaved

    opts, history, extra = _asked(args)
    guard_output(opts)
    output_folder(opts.output_dir)  # before any model call: a run that cannot be saved
    signing = signing_key(opts.sign)
    domain = load_domain(opts.domain)
    system = with_preview(system_prompt(opts, domain), opts)
    key = api_key(opts.api_base)
    model, server = resolve(opts.model, opts.api_base, key, opts.local)
    prompt_fits(model, server, system, opts.task)
    if opts.local is not None and opts.workers > 1:  # a slot for each attempt at once
        os.environ.setdefault("FOUR_LOCAL_PARALLEL", str(opts.workers))
    if opts.local is not None and not start_local(opts):  # before V2 holds anything
        return 1
    if opts.attempts > 1 and not history:
        status = run_attempts(opts, model, key, domain, system, signing)
        if status is not None:
            return status  # else: one run, as without --attempts
    cli = {**opts.record(), **extra}
    r = prepare(opts, model, key, domain, system, cli, signing_key=signing, hold=True)
    r, display = watched(r, opts, model)
    recording = r.recording  # hold: Saving says when the loop began
    display.start()
    try:
        deadline = Deadline(opts.timeout) if opts.timeout else None
        armed = deadline.armed() if deadline is not None else contextlib.nullcontext()
        with sigterm_interrupts(), heartbeat(lambda: recording.sink), armed:
            path = run(
                r.G,
                r.V1,
                r.V2,
                recording,
                r.system,
                "" if history else opts.task,
                opts.max_steps,
                opts.max_format_errors,
                resume=history,
                check=r.check,
                watch=traced(opts, Saving(recording, deadline)),
            )
    except TrajectoryNotSaved as exc:  # the run ended, but its record could not be sealed
        display.stop("not saved")
        if opts.json:
            failed_json(f"save_failed: {exc}", getattr(exc, "kept", None))
        else:
            print(f"four run: save_failed: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Exception) as exc:
        display.stop("interrupted" if isinstance(exc, KeyboardInterrupt) else "crashed")
        return ended(opts, exc, recording.path, "the run began")
    else:
        display.stop("done")
    finally:
        display.stop()
    item = extra.get("batch_item")
    # A resumed item of a batch: its manifest learns of it.
    if isinstance(item, str) and (problem := record_in_batch(path, item, opts.attempt)):
        print(f"four run: not in the batch's manifest: {problem}", file=sys.stderr)
    return report(path, opts)


def _asked(args: argparse.Namespace) -> tuple[RunOptions, tuple[Message, ...], dict[str, JSON]]:
    """The options, history and extra record: of the flags, or of ``--resume``'s run."""
    if not args.resume:
        return options(args), (), {}
    if args.task is not None:
        raise UsageError("--resume takes the task from the trajectory: give no TASK")
    sign = getattr(args, "sign", None) or env.get("FOUR_SIGNING_KEY")
    verified(args.resume, sign)  # its settings are acted on: only a sealed record's
    return resumed(args.resume, mode=display_mode(args.quiet), json=bool(args.json), sign=sign)


HEARTBEAT = 5.0  # seconds, unless FOUR_HEARTBEAT says otherwise

INTERRUPTED = (
    "(no output: the run was stopped while this ran, and resumed by four watch; "
    "it may not have finished, or may have done part of its work)"
)
"""The observation given for an action whose result the stopped run never recorded."""


def verified(path: str, sign: str | None = None) -> None:
    """Refuse to resume a record that does not vouch for the settings a resume acts on:
    ``path`` and its stream or document beside it must verify (and be signed by ``sign``).

    >>> verified("missing.json")
    Traceback (most recent call last):
    ...
    four.cli._errors.UsageError: --resume: missing.json cannot be verified (cannot read missing.json: No such file or directory): not resumed
    """
    from four.checks._audit import audit

    key = signing_key(sign)
    public = key.public if key else None
    given = Path(path)
    beside = (given.with_suffix(".jsonl"), given.with_suffix(".json"))
    for record in (given, *(p for p in beside if p != given and p.is_file())):
        try:
            found = audit(record, public_key=public)
        except (OSError, ValueError) as exc:  # TrajectoryError: missing, a FIFO, too large
            raise UsageError(
                f"--resume: {record} cannot be verified ({exc}): not resumed"
            ) from None
        if not found.valid:
            problem = found.errors[0] if found.errors else "invalid"
            raise UsageError(f"--resume: {record} does not verify ({problem}): not resumed")


def resumed(
    path: str, *, mode: str, json: bool, sign: str | None = None
) -> tuple[RunOptions, tuple[Message, ...], dict[str, JSON]]:
    """A new attempt at the run ``path`` names: its recorded options (the steps and time
    it left, signed by ``sign``), its messages closed, and its batch item's id if any."""
    from four.trajectory import TrajectoryError, load_trajectory

    try:
        old = load_trajectory(path)
    except TrajectoryError as exc:
        raise UsageError(f"--resume: {exc}") from None
    cli = old.info.settings
    if not cli:
        raise UsageError(f"--resume: {path} records no settings of `four run` to resume with")
    task = next((m.content for m in old.messages if isinstance(m, User) and m.kind == "task"), "")
    if not task:
        raise UsageError(f"--resume: {path} holds no task")
    names = {f.name for f in dataclasses.fields(RunOptions)}
    given: dict[str, object] = {k: v for k, v in cli.items() if k in names}
    prices = given.get("prices")
    given["prices"] = tuple(prices) if isinstance(prices, list) and len(prices) == 2 else None
    files = given.get("check_files")
    given["check_files"] = tuple(files) if isinstance(files, list) else ()
    own = old.messages[old.info.resumed_from :]  # its own steps and time: its own settings
    steps = given.get("max_steps")
    done = sum(1 for m in own if isinstance(m, Assistant))
    given["max_steps"] = max(1, (steps if type(steps) is int else 100) - done)
    timeout = given.get("timeout")
    if isinstance(timeout, int | float) and timeout:
        elapsed = max(0.0, old.timestamps[-1]) if old.timestamps else 0.0
        given["timeout"] = max(0.001, float(timeout) - elapsed)
    attempt = cli.get("attempt")
    given.update(
        output_dir=str(Path(path).resolve().parent),  # beside the earlier attempt
        task=task,
        mode=mode,
        json=json,
        resumes=str(Path(path).resolve()),
        attempt=(attempt if type(attempt) is int else 1) + 1,
        attempts=1,  # the run goes on as it was: no new search from its middle
        attempts_by_default=False,
        workers=1,
        sign=sign or given.get("sign"),  # the key its record was verified with
    )
    try:
        opts = RunOptions(**given)  # type: ignore[arg-type]  # read from JSON: checked by use
    except TypeError as exc:
        raise UsageError(
            f"--resume: {path} records settings this version cannot use: {exc}"
        ) from None
    item = cli.get("batch_item")
    extra: dict[str, JSON] = {"batch_item": item} if isinstance(item, str) and item else {}
    return opts, closed(old.messages), extra


def closed(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The history with an answer for what the stopped run left unanswered: a last
    reply's command (or each of its tool calls) gets ``INTERRUPTED``.

    >>> closed((User("t", "task"), Assistant("```bash\\nsleep 9\\n```")))[-1].content[:30]
    '(no output: the run was stoppe'
    """
    if messages and isinstance(messages[-1], Assistant) and not messages[-1].tool_calls:
        return (*messages, User(INTERRUPTED, "observation"))
    return messages + tuple(ToolResult(c.id, INTERRUPTED, c.name) for c in unanswered(messages))


def record_in_batch(path: Path, item: str, attempt: int) -> str | None:
    """Add the new attempt's result to its batch's ``DIR/manifest.jsonl`` (the run being in
    ``DIR/runs/<id>/``), so a later ``four batch`` counts it; else why not."""
    from four.batch._items import Item
    from four.batch._result import MANIFEST, ManifestWriter, read_saved, taken

    root = path.parent.parent.parent
    if path.parent.parent.name != "runs" or not (root / MANIFEST).is_file():
        return f"no batch manifest at {root / MANIFEST}"
    saved = read_saved(path)
    if saved is None or saved.outcome is None:
        return f"{path} cannot be read back"
    try:
        writer = ManifestWriter(root)
    except (RuntimeError, OSError) as exc:
        return str(exc)
    with contextlib.closing(writer):
        writer.write(taken(Item(item), saved, attempt))
    return None


@contextlib.contextmanager
def heartbeat(sink: Callable[[], object]) -> Iterator[None]:
    """While inside, ``sink().beat()`` every ``FOUR_HEARTBEAT`` seconds (0: never)."""
    every = env.over(None, "FOUR_HEARTBEAT", HEARTBEAT) or 0.0
    if every <= 0:
        yield
        return
    done = threading.Event()

    def loop() -> None:
        while not done.wait(every):
            beat = getattr(sink(), "beat", None)
            if callable(beat):
                with contextlib.suppress(Exception):  # a heartbeat never ends a run
                    beat()

    thread = threading.Thread(target=loop, name="four-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=max(1.0, every))


def start_local(opts: RunOptions) -> bool:
    """Start the local model's server before the first step (so step 1's time is the
    model's); False, with the reason printed, if it cannot start."""
    from returns.result import Failure

    from four.invoke import local_invoke

    assert opts.local is not None
    if opts.mode != "quiet" and not opts.json:
        print(f"starting the local model {opts.local} ...", file=sys.stderr, flush=True)
    started = local_invoke(opts.local, **local_settings()).server()
    if isinstance(started, Failure):
        print(f"four run: error: {started.failure()}", file=sys.stderr)
        return False
    return True


def run_attempts(
    opts: RunOptions,
    model: str,
    key: str | None,
    domain: Domain,
    system: str,
    signing: SigningKey | None,
) -> int | None:
    """Run the attempts; the exit status (0 accepted), or None where the attempts were the
    default and the workspace is too large to copy: then one run, as without them."""
    from four import run
    from four.search import Budget, Search
    from four.search._workspace import WorkspaceTooLarge

    def say(line: str) -> None:
        if opts.mode != "quiet" and not opts.json:
            print(line, file=sys.stderr, flush=True)

    def started(a: Attempt) -> None:
        after = f" · after {a.link.after}" if a.link.after else ""
        after = after if len(after) <= 100 else after[:97] + "..."
        say(f"attempt {a.link.index} of {a.link.of} · temperature {a.link.temperature:g} · "
            f"seed {a.link.seed}{after}")  # fmt: skip

    def finished(m: Member[object]) -> None:
        outcome = m.outcome.text if len(m.outcome.text) <= 100 else m.outcome.text[:97] + "..."
        say(
            f"attempt {m.link.index} of {m.link.of}: {outcome} · {m.steps} steps · "
            f"{tokens(m.usage.total_tokens)} tokens · {seconds(m.seconds)}"
        )

    def attempt(a: Attempt) -> Path:
        mine = dataclasses.replace(opts, cwd=a.cwd or opts.cwd, cost_limit=None, timeout=None)
        r = prepare(mine, model, key, domain, system, opts.record(), signing_key=signing,
                    sampling=a.sampling, check_program=a.index == 1)  # fmt: skip
        r, display = watched(r, mine, model, f" · attempt {a.index}/{a.link.of}")
        display.start()
        try:
            with heartbeat(lambda: r.recording.sink):
                return run(a.invoke(r.G), r.V1, a.env(r.V2), a.emit(r.recording), r.system,
                           a.prompt(opts.task), a.limit(opts.max_steps), opts.max_format_errors,
                           check=r.check, watch=traced(opts, a.watching(Saving(r.recording))))  # fmt: skip
        finally:
            display.stop("done")

    first = opts.local is not None and local_settings().get("temperature")
    where = workspace(opts)  # what the attempts copy
    try:
        search: Search[Path] = Search(
            opts.attempts,
            opts.task,
            workspace=where,
            keep=(opts.output_dir,),
            seed=opts.seed,
            temperature=opts.attempt_temperature,
            first_temperature=first or 0.0,
            budget=Budget(cost=opts.cost_limit, seconds=opts.timeout),
            workers=opts.workers,
            record_dir=opts.output_dir,
            signing_key=signing,
            on_start=started,
            on_end=finished,
        )
        if where is not None:  # copied now: a folder too large to copy is refused here
            search.prepare()
    except WorkspaceTooLarge as exc:
        if opts.attempts_by_default:
            print(f"four run: one attempt, not {opts.attempts}: {exc}", file=sys.stderr)
            return None
        raise UsageError(f"--attempts {opts.attempts}: {exc}, or --attempts 1") from None
    except (NotADirectoryError, ValueError) as exc:
        raise UsageError(f"--attempts {opts.attempts}: {exc}") from None
    # --timeout's one clock: what runs when it is spent (a check, a build...) is killed.
    armed = Deadline(opts.timeout).armed() if opts.timeout else contextlib.nullcontext()
    try:
        with armed:
            search.run(attempt)
    except UsageError:
        raise
    except (KeyboardInterrupt, Exception) as exc:  # as a plain run, the search's record the path
        return ended(opts, exc, search.record, "a run began", _json(search))
    result = search.result
    if result is None or result.path is None:
        print(f"four run: no attempt ran: {search.ended}", file=sys.stderr)
        return 1
    if search.lost:
        print(f"four run: {search.lost}", file=sys.stderr)
    code = report(result.path, opts, extra=_json(search) if opts.json else None)
    if not opts.json:
        verdict = "accepted" if search.accepted else "not accepted"
        print(
            f"attempt {result.link.index} of {search.k} {verdict} ({search.ended}) · "
            f"{len(search.members)} attempts · {tokens(search.usage.total_tokens)} tokens · "
            f"{search.record}"
        )
    return code


def _json(search: Search[Path]) -> dict[str, JSON]:
    return {
        "attempts": {
            "record": str(search.record) if search.record else None,
            "ended": search.ended,
            "accepted": search.accepted,
            "result": search.result.link.index if search.result else None,
            "members": [
                {
                    "index": m.link.index,
                    "outcome": m.outcome.text,
                    "path": str(m.path) if m.path else None,
                    "steps": m.steps,
                    "tokens": m.usage.total_tokens,
                    "seed": m.link.seed,
                    "temperature": m.link.temperature,
                }
                for m in search.members
            ],
        }
    }
