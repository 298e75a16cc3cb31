"""``four stats DIR...``: what many runs did, in a few tables."""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from four._files import is_group_record, walk
from four._outcomes import outcome_tag
from four._types import JSON
from four.cli._errors import UsageError
from four.cli._remote import local_paths
from four.cli._steps import Run, first_line, load_trajectory_or_say, max_size, read_run
from four.cli._terminal import visible
from four.trajectory._load import MAX_BYTES


@dataclass(slots=True)
class Summary:
    """Totals over many runs, filled by ``add``."""

    runs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    steps: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    tokens: list[float] = field(default_factory=list)
    wall_times: list[float] = field(default_factory=list)
    unpriced_calls: int = 0
    format_errors: Counter[str] = field(default_factory=Counter)
    failing_commands: Counter[str] = field(default_factory=Counter)
    tags: Counter[str] = field(default_factory=Counter)  # runs with each four.observe tag
    skipped: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    """Why each skipped file could not be read, in the same order."""

    def add(self, run: Run) -> None:
        """Count one run."""
        self.runs += 1
        self.outcomes[outcome_tag(run.outcome)] += 1
        self.steps.append(len(run.steps))
        self.costs.append(run.usage.known_cost)
        self.tokens.append(run.usage.total_tokens)
        self.unpriced_calls += run.usage.cost_unknown_calls
        if run.wall_time is not None:
            self.wall_times.append(run.wall_time)
        for step in run.steps:
            if step.format_error:
                self.format_errors[step.format_error] += 1
            for command, code in step.ran:
                if code not in (None, 0):
                    self.failing_commands[first_line(visible(command), 80)] += 1

    def to_json(self, top: int) -> dict[str, JSON]:
        """The summary as JSON (what ``--json`` prints)."""
        return {
            "runs": self.runs,
            "skipped": list(self.skipped),
            "outcomes": dict(self.outcomes.most_common()),
            "steps": _dist(self.steps),
            "cost": _dist(self.costs),
            "tokens": _dist(self.tokens),
            "wall_time": _dist(self.wall_times),
            "unpriced_calls": self.unpriced_calls,
            "format_errors": [[t, n] for t, n in self.format_errors.most_common(top)],
            "failing_commands": [[t, n] for t, n in self.failing_commands.most_common(top)],
            "tags": dict(self.tags.most_common()),
        }


def trajectory_files(
    paths: Iterable[str | Path], skipped: dict[Path, str] | None = None
) -> Iterator[Path]:
    """Trajectory files under the paths: our ``.json``, mini-swe-agent's ``.traj.json``,
    and a ``.jsonl`` only where its sealed ``.json`` is missing (a killed run). A search's
    group record is no run; why each entry named like one but not a regular file (a FIFO,
    a device, a link) is not read goes to ``skipped``.

    >>> list(trajectory_files([]))
    []
    """
    for root in map(Path, paths):
        if not root.is_dir():
            if not root.exists() and not root.is_symlink():
                raise UsageError(f"{root} is neither a folder nor a file")
            yield root  # a file, or something the reader will refuse by name
            continue
        for listing in walk(root):
            names = listing.names()
            for name, why in listing.others:
                if skipped is not None and _wanted(name, names):
                    skipped[listing.folder / name] = why
            yield from (listing.folder / n for n in listing.files if _wanted(n, names))


def _wanted(name: str, names: frozenset[str]) -> bool:
    if name.startswith(".") or is_group_record(name):
        return False
    return name.endswith(".json") or (
        name.endswith(".jsonl") and f"{name.removesuffix('.jsonl')}.json" not in names
    )


def summarise(paths: Iterable[str | Path], max_bytes: int = MAX_BYTES) -> Summary:
    """Read every trajectory under ``paths``; files that cannot be read are skipped,
    each with the reason."""
    from four.observe import tags

    summary = Summary()
    special: dict[Path, str] = {}
    for path in trajectory_files(paths, special):
        try:
            trajectory = load_trajectory_or_say(path, max_bytes)
        except UsageError as exc:
            summary.skipped.append(str(path))
            summary.reasons.append(str(exc))
            continue
        summary.add(read_run(trajectory))
        summary.tags.update(tags(trajectory.messages, trajectory.outcome).keys())
    summary.skipped += map(str, special)
    summary.reasons += special.values()
    return summary


SAID_SKIPPED = 10
"""Skipped files named on standard error, at most (then how many more)."""


def main(args: argparse.Namespace) -> int:
    """Print the summary of the runs under ``args.paths``; 1 when there were none. Each
    file skipped is named, with why, on standard error."""
    top = int(args.top)
    summary = summarise(local_paths([str(p) for p in args.paths]), max_size(args))
    for reason in summary.reasons[:SAID_SKIPPED]:
        print(f"four stats: skipped: {reason}", file=sys.stderr)
    if len(summary.reasons) > SAID_SKIPPED:
        more = len(summary.reasons) - SAID_SKIPPED
        print(f"four stats: skipped {more} more files (--json lists them)", file=sys.stderr)
    if not summary.runs and not summary.skipped:
        print(f"four stats: no trajectory files in {' '.join(args.paths)}", file=sys.stderr)
    if args.json:
        print(json.dumps(summary.to_json(top), indent=2))
    else:
        print(render(summary, top))
    return 0 if summary.runs else 1


def render(summary: Summary, top: int = 5) -> str:
    """The summary as plain text tables.

    >>> print(render(Summary()))
    runs: 0
    """
    lines = [f"runs: {summary.runs}"]
    if summary.skipped:
        lines[0] += f"  ({len(summary.skipped)} files skipped: not readable trajectories)"
    if not summary.runs:
        return "\n".join(lines)
    shares = [
        [t, str(n), f"{100 * n / summary.runs:.1f}%"] for t, n in summary.outcomes.most_common()
    ]
    lines += ["", _table(["outcome", "runs", "share"], shares)]
    dist_rows = [
        ["steps", *_cells(summary.steps, "{:.0f}", "{:.1f}")],
        ["cost ($)", *_cells(summary.costs, "{:.4f}", "{:.4f}")],
        ["tokens", *_cells(summary.tokens, "{:.0f}", "{:.0f}")],
        ["wall time (s)", *_cells(summary.wall_times, "{:.1f}", "{:.1f}")],
    ]
    lines += ["", _table(["", "min", "median", "mean", "p90", "max", "total"], dist_rows)]
    for title, values, each in (
        ("steps per run", summary.steps, "{:.0f}"),
        ("cost per run ($)", summary.costs, "{:.4f}"),
    ):
        if len(set(values)) > 1:
            lines += ["", title, *histogram(values, each)]
    if summary.unpriced_calls:
        lines.append(f"({summary.unpriced_calls} model calls had no known price)")
    for title, counter in (
        ("runs tagged (four.observe: by rule, from what the loop recorded)", summary.tags),
        ("most frequent format errors", summary.format_errors),
        ("most frequent failing commands (exit != 0)", summary.failing_commands),
    ):
        lines += ["", title]
        rows = counter.most_common(top)
        lines += [f"  {n:>5}  {text}" for text, n in rows] or ["  none"]
    return "\n".join(lines)


def histogram(
    values: Sequence[float], each: str = "{:g}", bins: int = 8, width: int = 30
) -> list[str]:
    """Text bars: how many values fall in each of at most ``bins`` equal ranges (whole
    numbers get whole ranges that do not overlap).

    >>> print("\\n".join(histogram([1, 1, 2, 4], bins=2, width=3)))
      1-2  ███ 3
      3-4  █   1
    """
    low, high = min(values), max(values)
    size: float
    if all(float(v).is_integer() for v in values):
        size = max(1, math.ceil((high - low + 1) / bins))
        count = math.ceil((high - low + 1) / size)
        labels = [f"{low + i * size:.0f}-{low + (i + 1) * size - 1:.0f}" for i in range(count)]
        index = [int((v - low) // size) for v in values]
    else:
        size = (high - low) / bins or 1.0
        count = bins
        labels = [
            f"{each.format(low + i * size)}-{each.format(low + (i + 1) * size)}"
            for i in range(count)
        ]
        index = [min(count - 1, int((v - low) / size)) for v in values]
    counts = [index.count(i) for i in range(count)]
    pad, top = max(len(label) for label in labels), max(counts)
    return [
        f"  {label.rjust(pad)}  {('█' * (round(width * n / top) if n else 0) or '').ljust(width)} {n}"
        for label, n in zip(labels, counts, strict=True)
    ]


def _dist(values: Sequence[float]) -> dict[str, JSON]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(values),
        "min": ordered[0],
        "median": statistics.median(ordered),
        "mean": statistics.fmean(ordered),
        "p90": _percentile(ordered, 0.9),
        "max": ordered[-1],
        "total": math.fsum(ordered),
    }


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest rank.

    >>> _percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)
    9
    """
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _cells(values: Sequence[float], each: str, mean: str) -> list[str]:
    d = _dist(values)
    if not values:
        return ["-"] * 6
    keys = ("min", "median", "mean", "p90", "max", "total")
    return [(mean if k in ("mean", "median") else each).format(d[k]) for k in keys]


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)
