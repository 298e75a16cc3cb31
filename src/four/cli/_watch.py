"""``four watch DIR``: the state of every run under DIR, and with ``--rescue`` the
action each needs (see ``four.observe._watch`` for the states, ``_rescue`` for the
actions)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import fields
from pathlib import Path

from four.cli._errors import UsageError
from four.cli._options import signing_key
from four.cli._remote import local_paths
from four.cli._terminal import visible
from four.observe._rescue import Done, rescue
from four.observe._watch import STATES, TROUBLE, Policy, judge, survey
from four.trajectory._destination import is_url
from four.trajectory._sign import SigningKey

_POLICY_FLAGS = {  # each field of Policy: its flag's metavar and help
    "stall_factor": ("K", "stalled: no new step for K times the run's median step"),
    "stall_floor": ("SECONDS", "...and never less than this"),
    "repeats": ("N", "looping: the same command and output N times"),
    "not_found": ("N", "looping: N commands in a row not found (exit 127)"),
    "wall": ("SECONDS", "over budget past this wall time (a run's own --timeout counts too)"),
    "grace": ("SECONDS", "time past a run's own --timeout before it is over budget"),
    "lost": ("SECONDS", "a driver on another host is dead after this long without a heartbeat"),
    "attempts": ("N", "attempts a run may have in all (retry budget)"),
}


def flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", metavar="DIR", nargs="+", help="folders of runs (searched deeply)")
    p.add_argument(
        "--rescue",
        action="store_true",
        help="act: resume dead, stalled and retryable runs (a new attempt), stop looping "
        "and over-budget ones (their driver killed, the run sealed stopped)",
    )
    p.add_argument("--once", action="store_true", help="one pass, then exit (for cron)")
    p.add_argument(
        "--interval", type=float, default=30.0, metavar="SECONDS", help="between passes [30]"
    )
    p.add_argument("--json", action="store_true", help="print each pass as JSON")
    for field in fields(Policy):  # its defaults are Policy's own
        metavar, about = _POLICY_FLAGS[field.name]
        default = field.default
        p.add_argument(
            f"--{field.name.replace('_', '-')}",
            type=int if type(default) is int else float,
            default=default,
            metavar=metavar,
            help=f"{about} [{'none' if default is None else f'{default:g}'}]",
        )
    p.add_argument(
        "--sign",
        metavar="KEY",
        help="the private key to seal signed runs that are stopped; only runs signed by "
        "it are acted on",
    )
    p.add_argument(
        "--any-cwd",
        action="store_true",
        help="resume a run in its recorded working folder even when that is outside DIR "
        "(a record names it: trust the records first)",
    )


def main(args: argparse.Namespace) -> int:
    urls = [str(p) for p in args.paths]
    remote = next((u for u in urls if is_url(u)), None)
    if args.rescue and remote is not None:
        raise UsageError(
            f"--rescue acts on runs of this machine, and {remote} is an object store: run "
            "four watch --rescue where the runs' driver runs, or four batch again with -o "
            f"{remote} (it resumes the batch)"
        )
    folders = [Path(p) for p in local_paths(urls)]
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder")
    try:
        policy = Policy(**{field.name: getattr(args, field.name) for field in fields(Policy)})
    except ValueError as exc:
        raise UsageError("--" + str(exc).removeprefix("Policy: ").replace("_", "-")) from None
    if not args.interval > 0:
        raise UsageError("--interval must be above 0 seconds")
    key = signing_key(args.sign)
    while True:
        status = one_pass(folders, policy, args.rescue, args.json, key, args.any_cwd)
        if args.once:
            return status
        try:
            time.sleep(args.interval)
        except KeyboardInterrupt:
            return 130
        local_paths(urls)  # (URLs: what changed there since)


def one_pass(
    folders: list[Path],
    policy: Policy,
    act: bool,
    as_json: bool,
    key: SigningKey | None = None,
    any_cwd: bool = False,
) -> int:
    """Classify (and with ``act``, rescue) every run; print; the exit status. A run is
    resumed in its recorded working folder only when that is inside its DIR, unless
    ``any_cwd``."""
    now = time.time()
    skipped: list[str] = []
    verdicts = [(f, judge(run, now, policy)) for f in folders for run in survey(f, skipped)]
    for why in skipped:
        print(f"four watch: skipped: {visible(why)}", file=sys.stderr)
    done = [
        rescue(v, policy, key, within=None if any_cwd else f) if act else Done(v, "none", "")
        for f, v in verdicts
    ]
    handled = {"resumed", "stopped"}
    trouble = [d for d in done if d.verdict.state in TROUBLE and d.action not in handled]
    if as_json:
        found = Counter(d.verdict.state for d in done)
        counts = {s: found[s] for s in STATES if s in found}
        print(json.dumps({"runs": [d.to_json() for d in done], "counts": counts}, indent=2))
    else:
        _table(done)
    sys.stdout.flush()
    return 1 if trouble else 0


def _table(rows: list[Done]) -> None:
    if not rows:
        print("no runs")
        return
    header = ("STATE", "TRY", "STEPS", "RUN", "WHY", "")
    lines = [header]
    for d in rows:
        v = d.verdict
        steps = v.to_json()["steps"]
        action = "" if d.action == "none" else f"{d.action}: {d.detail}".rstrip(": ")
        lines.append(
            (v.state, str(v.run.attempt), str(steps), v.run.name, visible(v.why), visible(action))
        )
    widths = [max(len(line[i]) for line in lines) for i in range(4)]
    for line in lines:
        head = "  ".join(cell.ljust(w) for cell, w in zip(line[:4], widths, strict=True))
        print(f"{head}  {line[4]}" + (f"  · {line[5]}" if line[5] else ""))
    counts = Counter(d.verdict.state for d in rows)
    print(" · ".join(f"{n} {state}" for state, n in counts.items()))
