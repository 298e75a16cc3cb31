"""``four run TASK``: an agent on a task, shown live, saved as it goes; what can be
checked before the first step is (docs/cli.md)."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from contextlib import nullcontext

from four._types import JSON, Message
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
from four.cli._options import RunOptions, api_key, guard_output, options, resolve, signing_key
from four.cli._resume import heartbeat


def main(args: argparse.Namespace) -> int:
    """Run the agent; exit 0 finished or accepted, 1 any other end, 2 usage, 130 Ctrl-C."""
    from four import run
    from four.cli._preflight import output_folder, prompt_fits
    from four.trajectory import TrajectoryNotSaved

    history: tuple[Message, ...] = ()
    extra: dict[str, JSON] = {}
    if getattr(args, "resume", None):
        opts, history, extra = _resumed(args)
    else:
        opts = options(args)
    guard_output(opts)
    output_folder(opts.output_dir)  # before any model call: a run that cannot be saved
    signing = signing_key(opts.sign)
    domain = load_domain(opts.domain)
    system = with_preview(system_prompt(opts, domain), opts)
    key = api_key(opts.api_base)
    model, server = resolve(opts, key)
    prompt_fits(model, server, system, opts.task)
    if opts.local is not None and opts.workers > 1:  # a slot for each attempt at once
        os.environ.setdefault("FOUR_LOCAL_PARALLEL", str(opts.workers))
    if opts.local is not None and not start_local(opts):  # before V2 holds anything
        return 1
    if opts.attempts > 1 and not history:
        from four.cli._attempts import run_attempts

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
        armed = deadline.armed() if deadline is not None else nullcontext()
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
    if isinstance(item, str):  # a resumed item of a batch: its manifest learns of it
        from four.cli._resume import record_in_batch

        problem = record_in_batch(path, item, opts.attempt)
        if problem:
            print(f"four run: not in the batch's manifest: {problem}", file=sys.stderr)
    return report(path, opts)


def _resumed(
    args: argparse.Namespace,
) -> tuple[RunOptions, tuple[Message, ...], dict[str, JSON]]:
    """The options, history and extra record of a new attempt at the run ``--resume``
    names."""
    from four.cli._resume import options_of, resumed, verified

    if args.task is not None:
        raise UsageError("--resume takes the task from the trajectory: give no TASK")
    sign = getattr(args, "sign", None) or env.get("FOUR_SIGNING_KEY")
    verified(args.resume, sign)  # its settings are acted on: only a sealed record's
    earlier = resumed(args.resume)
    mode = "quiet" if args.quiet else ("live" if sys.stderr.isatty() else "lines")
    opts = options_of(earlier, args.resume, mode=mode, json=bool(args.json))
    if sign:  # the new attempt is signed by the key its record was verified with
        opts = dataclasses.replace(opts, sign=sign)
    item = earlier.settings.get("batch_item")  # what it recorded beyond its options
    return opts, earlier.history, {"batch_item": item} if isinstance(item, str) else {}


def start_local(opts: RunOptions) -> bool:
    """Start the local model's server before the first step (so step 1's time is the
    model's); False, with the reason printed, if it cannot start."""
    from returns.result import Failure

    from four.cli._options import local_settings
    from four.invoke import local_invoke

    assert opts.local is not None
    if opts.mode != "quiet" and not opts.json:
        print(f"starting the local model {opts.local} ...", file=sys.stderr, flush=True)
    started = local_invoke(opts.local, **local_settings()).server()
    if isinstance(started, Failure):
        print(f"four run: error: {started.failure()}", file=sys.stderr)
        return False
    return True
