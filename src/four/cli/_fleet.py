"""``four fleet DIR...``: one page over many folders of runs (``four.observe._fleet``)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from four.cli._errors import UsageError
from four.cli._remote import local_paths


def main(args: argparse.Namespace) -> int:
    """Print the page (or JSON); 0, or 2 for a path that is not a folder."""
    from four.cli._terminal import visible
    from four.observe._fleet import fleet, summary_lines

    folders = [Path(p) for p in local_paths([str(p) for p in args.paths])]
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder")
    now = time.time()
    statuses = fleet(folders, now=now, stall_after=float(args.stall))
    if args.json:
        print(json.dumps([s.to_json(now) for s in statuses], indent=2))
        return 0
    for line in summary_lines(statuses, now):
        print(visible(line))
    return 0
