"""``four export otel RUN...``: saved runs sent to an OTLP receiver as traces."""

from __future__ import annotations

import argparse
import json
import sys

from four.cli._errors import UsageError

SAID_SKIPPED = 5


def main(args: argparse.Namespace) -> int:
    """Send the runs; 0 when the receiver took every span, 1 otherwise (or no run)."""
    import importlib.util

    from four.cli._stats import trajectory_files
    from four.cli._steps import max_size

    if importlib.util.find_spec("opentelemetry.sdk") is None:
        raise UsageError("traces need four-loop[otel] (pip install 'four-loop[otel]')")
    from four.otel import export_runs
    from four.otel._send import endpoint_of

    files = list(trajectory_files(args.runs))
    done = export_runs(files, args.endpoint, content=args.content or None,
                       timeout=float(args.timeout), max_bytes=max_size(args))  # fmt: skip
    where = endpoint_of(args.endpoint)
    if args.json:
        print(json.dumps({
            "endpoint": where, "runs": done.runs, "spans": done.spans, "sent": done.sent,
            "lost": done.lost,
            "skipped": [{"path": p, "reason": r} for p, r in done.unreadable],
        }, indent=2))  # fmt: skip
    else:
        for path, reason in done.unreadable[:SAID_SKIPPED]:
            print(f"four export: skipped {path}: {reason}", file=sys.stderr)
        if len(done.unreadable) > SAID_SKIPPED:
            more = len(done.unreadable) - SAID_SKIPPED
            print(f"four export: skipped {more} more files (--json lists them)", file=sys.stderr)
        if done.sent:
            print(f"exported {done.runs} runs ({done.spans} spans) to {where}")
        else:
            print(f"four export: {done.lost} of {done.spans} spans of {done.runs} runs were not "
                  f"taken by {where}", file=sys.stderr)  # fmt: skip
    return 0 if done.sent and done.runs else 1
