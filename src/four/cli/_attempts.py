"""``four run --check CMD --attempts K``: ``four run``'s own run (its display, trajectory
and heartbeat), tried again from a fresh copy of the workspace until the check accepts it
(``four.search``); the search's record links them.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from four._types import JSON
from four.cli._errors import UsageError
from four.cli._format import seconds, tokens

if TYPE_CHECKING:
    from four.cli._options import RunOptions
    from four.domains import Domain
    from four.search import Attempt, Member, Search
    from four.trajectory._sign import SigningKey


def run_attempts(
    opts: RunOptions,
    model: str,
    key: str | None,
    domain: Domain,
    system: str,
    signing: SigningKey | None,
) -> int | None:
    """Run the attempts; the exit status of ``four run`` (0 accepted). None: the
    attempts were the default and the workspace is too large to copy, so ``four run``
    makes one run instead (said on standard error)."""
    from contextlib import nullcontext

    from four import run
    from four.cli._build import Deadline, Saving, ended, prepare, traced, watched
    from four.cli._options import local_settings, workspace
    from four.cli._resume import heartbeat
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
        """``four run``'s run in the attempt's copy of the workspace."""
        mine = replace(opts, cwd=a.cwd or opts.cwd, cost_limit=None, timeout=None)
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
    armed = Deadline(opts.timeout).armed() if opts.timeout else nullcontext()
    try:
        with armed:
            search.run(attempt)
    except UsageError:
        raise
    except (KeyboardInterrupt, Exception) as exc:  # as a plain run, the search's record the path
        return ended(opts, exc, search.record, "a run began", _json(search))
    return _report(search, opts)


def _report(search: Search[Path], opts: RunOptions) -> int:
    from four.cli._build import report

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
