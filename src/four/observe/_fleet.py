"""One page over many folders of runs: what each holds, and what needs attention first.

Read only what is needed, so that ten thousand runs are read in well under a second of
CPU: a batch's ``manifest.jsonl`` answers for the runs it lists (one file); a sealed
trajectory that no manifest lists is read up to its ``stats`` line (the document puts
its messages last); a stream that is not sealed is read for its start record, its last
recorded time and its replies' usage. No message list is ever decoded whole.

Whether an unsealed run is running or stalled is decided in one place, ``classify``,
from what the stream records (its last message's time); it does not know yet whether
the run's driver is alive.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from four._checked import Checked, checked
from four._files import is_group_record, open_regular, walk
from four._outcomes import outcome_tag
from four._types import JSON
from four.trajectory._load import TrajectoryError, load_head
from four.trajectory._record import (
    RECORD,
    AssistantRecord,
    End,
    Line,
    Start,
    UsageRecord,
    stats_of,
)

State: TypeAlias = Literal["finished", "running", "stalled"]

STALL_AFTER = 900.0
"""Seconds without a recorded message after which an unsealed run counts as stalled
(``four batch``'s default ``--stall-timeout``)."""

SUCCESS = frozenset({"accepted", "exit:task_complete", "Submitted"})
"""Outcomes counted as accepted: a check's YES, or a submission where no check ran."""


def classify(sealed: bool, last_activity: float | None, now: float, stall_after: float) -> State:
    """A run's state from its record: sealed is finished; else running while its stream
    was written to within ``stall_after`` seconds, stalled after (a dead driver looks
    the same until the stream records who drives it).

    >>> classify(False, 1000.0, 1100.0, 900), classify(False, 1000.0, 2000.0, 900)
    ('running', 'stalled')
    """
    if sealed:
        return "finished"
    if last_activity is None or now - last_activity > stall_after:
        return "stalled"
    return "running"


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What one run's record says, read cheaply."""

    path: Path
    state: State
    outcome: str | None
    cost: float
    tokens: int
    last_activity: float | None  # seconds since the epoch


@dataclass(slots=True)
class FolderStatus(Checked):
    """One folder's runs, summed."""

    folder: Path
    runs: int = 0
    running: int = 0
    stalled: int = 0
    finished: int = 0
    accepted: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    cost: float = 0.0
    tokens: int = 0
    last_activity: float | None = None
    oldest_stalled: RunFacts | None = None
    unreadable: list[str] = field(default_factory=list)

    def add(self, run: RunFacts) -> None:
        self.runs += 1
        self.cost += run.cost
        self.tokens += run.tokens
        if run.last_activity is not None:
            self.last_activity = max(self.last_activity or 0.0, run.last_activity)
        if run.state == "running":
            self.running += 1
        elif run.state == "stalled":
            self.stalled += 1
            old = self.oldest_stalled
            if old is None or (run.last_activity or 0.0) < (old.last_activity or 0.0):
                self.oldest_stalled = run
        else:
            self.finished += 1
            tag = outcome_tag(run.outcome or "")
            if tag in SUCCESS:
                self.accepted += 1
            else:
                self.failed[tag] += 1

    def attention(self) -> tuple[int, float, int, int, float]:
        """Sort key, most urgent first: stalled runs (the longest idle first), then
        failures, then running folders, then the most recently active."""
        idle = -(self.oldest_stalled.last_activity or 0.0) if self.oldest_stalled else 0.0
        failed = sum(self.failed.values())
        return (-self.stalled, -idle, -failed - len(self.unreadable), -self.running,
                -(self.last_activity or 0.0))  # fmt: skip

    def to_json(self, now: float) -> dict[str, JSON]:
        stalled: JSON = None
        if self.oldest_stalled is not None:
            last = self.oldest_stalled.last_activity
            stalled = {
                "path": str(self.oldest_stalled.path),
                "idle_seconds": round(now - last, 1) if last is not None else None,
            }
        return {
            "folder": str(self.folder),
            "runs": self.runs,
            "running": self.running,
            "stalled": self.stalled,
            "finished": self.finished,
            "accepted": self.accepted,
            "failed": dict(self.failed.most_common()),
            "cost": round(self.cost, 6),
            "tokens": self.tokens,
            "last_activity": self.last_activity,
            "oldest_stalled": stalled,
            "unreadable": list(self.unreadable),
        }


@checked
def fleet(
    folders: Iterable[str | os.PathLike[str]],
    *,
    now: float | None = None,
    stall_after: float = STALL_AFTER,
) -> list[FolderStatus]:
    """Each folder's status (its runs found recursively), what needs attention first.

    >>> import tempfile
    >>> [s.runs for s in fleet([tempfile.mkdtemp()])]
    [0]
    """
    at = time.time() if now is None else now
    statuses = [folder_status(Path(f), at, stall_after) for f in folders]
    return sorted(statuses, key=FolderStatus.attention)


def folder_status(folder: Path, now: float, stall_after: float) -> FolderStatus:
    """One folder: every run under it, read as little as it can be; a file that cannot
    be read (a FIFO, a device, a link, damage) is named in ``unreadable``."""
    status = FolderStatus(folder)
    listed = _manifest(folder)
    for found in _records(folder):
        if isinstance(found, str):
            status.unreadable.append(found)
            continue
        path, sealed = found
        try:
            facts = _facts(path, sealed, listed, now, stall_after)
        except (OSError, ValueError, RecursionError) as exc:
            status.unreadable.append(f"{path}: {exc}" if str(path) not in str(exc) else str(exc))
            continue
        status.add(facts)
    return status


def _records(folder: Path) -> Iterator[tuple[Path, bool] | str]:
    """Each run's file under ``folder``: its sealed ``.json``, else its ``.jsonl``; and
    why each entry named like a record but not a regular file is not read."""
    for listing in walk(folder):
        names = listing.names()
        yield from (why for name, why in listing.others if _named_as_record(name))
        for name in listing.files:
            path = listing.folder / name
            if is_group_record(name):
                continue
            if name.endswith(".traj.json") or (
                name.endswith(".json") and f"{name[:-5]}.jsonl" in names
            ):
                yield path, True
            elif (
                name.endswith(".jsonl")
                and name != "manifest.jsonl"
                and f"{name[:-6]}.json" not in names
            ):
                yield path, False


def _named_as_record(name: str) -> bool:
    return name.endswith((".json", ".jsonl")) and not is_group_record(name)


@dataclass(frozen=True, slots=True)
class _Listed:
    outcome: str
    cost: float
    tokens: int
    written: float


def _manifest(folder: Path) -> dict[str, _Listed]:
    """A batch manifest's latest line for each trajectory it names, by absolute path."""
    path = folder / "manifest.jsonl"
    try:
        with open_regular(path, follow=False) as f:  # a FIFO is named by the walk
            written = os.fstat(f.fileno()).st_mtime
            text = f.read().decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return {}
    listed: dict[str, _Listed] = {}
    for line in text.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        trajectory = data.get("trajectory") if isinstance(data, dict) else None
        if isinstance(trajectory, str) and isinstance(data.get("outcome"), str):
            cost, tokens = data.get("cost"), data.get("tokens")
            # (a relative name: from the folder, as a batch at a URL writes it)
            listed[os.path.abspath(os.path.join(folder, trajectory))] = _Listed(
                data["outcome"],
                float(cost) if isinstance(cost, int | float) else 0.0,
                tokens if isinstance(tokens, int) else 0,
                written,
            )
    return listed


def _facts(
    path: Path, sealed: bool, listed: dict[str, _Listed], now: float, stall_after: float
) -> RunFacts:
    if sealed:
        known = listed.get(os.path.abspath(path))
        if known is not None:
            return RunFacts(path, "finished", known.outcome, known.cost, known.tokens,
                            known.written)  # fmt: skip
        outcome, usage, ended = _sealed_head(path)
        cost, tokens = _usage(usage)
        return RunFacts(path, "finished", outcome, cost, tokens, ended)
    return _stream(path, now, stall_after)


def _sealed_head(path: Path) -> tuple[str | None, UsageRecord, float]:
    """A sealed document's outcome, usage and end time (``load_head``)."""
    try:
        head = load_head(path)
    except TrajectoryError as exc:
        raise ValueError(str(exc)) from None
    stats = head.stats
    ended = stats.ended_at if stats.ended_at is not None else path.stat().st_mtime
    return head.outcome, stats.usage, ended


def _usage(usage: UsageRecord | None) -> tuple[float, int]:
    if usage is None:
        return 0.0, 0
    return usage.cost or 0.0, usage.prompt_tokens + usage.completion_tokens


def _stream(path: Path, now: float, stall_after: float) -> RunFacts:
    """An unsealed stream: when it started, its last recorded time, its replies' usage;
    an end record (the document could not be written) makes it finished."""
    started: float | None = None
    last_t: float | None = None
    end: End | None = None
    cost, tokens = 0.0, 0
    with open_regular(path, follow=False) as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # a line cut short by a kill
            if started is None or b'"usage"' in raw or b'"type": "end"' in raw:
                record = RECORD.decode(raw)
                if isinstance(record, Start):
                    started = record.info.started_at
                    continue
                if isinstance(record, End):
                    end = record
                    continue
                if isinstance(record, Line) and isinstance(record.message, AssistantRecord):
                    c, n = _usage(record.message.usage)
                    cost, tokens = cost + c, tokens + n
            t = _time_of(raw)
            last_t = t if t is not None else last_t
    last = started + last_t if started is not None and last_t is not None else None
    if last is None:
        last = path.stat().st_mtime  # nothing recorded a time: the file's own
    if end is not None:
        c, n = _usage(stats_of(end.stats).usage)
        return RunFacts(path, "finished", end.outcome or None, c, n, last)
    state = classify(False, last, now, stall_after)
    return RunFacts(path, state, None, cost, tokens, last)


def _time_of(raw: bytes) -> float | None:
    """The ``"t": ...`` a stream line records (written first after its type)."""
    at = raw.find(b'"t": ')
    if at < 0:
        return None
    end = raw.find(b",", at)
    try:
        return float(raw[at + 5 : end])
    except ValueError:
        return None


def summary_lines(statuses: Sequence[FolderStatus], now: float) -> list[str]:
    """The page: a line per folder, what needs attention first."""
    lines = []
    for s in statuses:
        failed = ", ".join(f"{tag} {n}" for tag, n in s.failed.most_common(3))
        more = len(s.failed) - 3
        failed += f", +{more} classes" if more > 0 else ""
        parts = [
            f"{s.runs} runs",
            f"{s.running} running",
            f"{s.stalled} stalled",
            f"{s.finished} finished",
            f"{s.accepted} accepted",
            f"failed {sum(s.failed.values())}" + (f" ({failed})" if failed else ""),
            f"${s.cost:.4f}",
            f"{s.tokens:,} tokens",
            f"last {_ago(s.last_activity, now)}",
        ]
        lines.append(f"{s.folder}: " + " · ".join(parts))
        if s.oldest_stalled is not None:
            idle = _ago(s.oldest_stalled.last_activity, now)
            lines.append(f"  oldest stalled: {s.oldest_stalled.path} (last recorded {idle})")
        if s.unreadable:
            lines.append(f"  unreadable: {len(s.unreadable)} ({s.unreadable[0]})")
    return lines


def _ago(at: float | None, now: float) -> str:
    if at is None:
        return "never"
    span = max(0.0, now - at)
    if span < 120:
        return f"{span:.0f} s ago"
    if span < 7200:
        return f"{span / 60:.0f} min ago"
    if span < 172800:
        return f"{span / 3600:.1f} h ago"
    return f"{span / 86400:.0f} days ago"
