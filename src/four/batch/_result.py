"""What one run of a batch came to: a record read from its saved trajectory, and the
batch's manifest of them (``DIR/manifest.jsonl``, one JSON line per finished item)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

import msgspec

from four._checked import checked
from four._files import Unreadable, read_regular, regular_fd
from four._outcomes import outcome_tag
from four._types import JSON, NO_USAGE, Checked, Usage
from four.batch._items import Item
from four.trajectory._load import TrajectoryError, load_head, stream_lines
from four.trajectory._record import AssistantRecord, End, Line, Start, Stats, stats_of
from four.trajectory._save import sealed_here

SUBMITTED = frozenset({"exit:task_complete", "accepted"})
"""Outcome tags of a run that ended with the agent's submission (accepted, if checked)."""


@dataclass(frozen=True, slots=True)
class RunResult(Checked):
    """One finished item of a batch, as its manifest line records it (each field's
    meaning: docs/batch.md).

    >>> RunResult("a", "stalled: no progress for 60 s").tag
    'stalled'
    """

    id: str
    outcome: str
    trajectory: Path | None = None
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    wall_time: float = 0.0
    error: str | None = None
    attempts: int = 1
    final: bool = True
    node: str = ""
    fields: Mapping[str, JSON] = field(default_factory=dict)
    lost_streams: tuple[str, ...] = ()

    @property
    def tag(self) -> str:
        """The kind of outcome (``stalled``, ``exit:task_complete``...)."""
        return outcome_tag(self.outcome)

    @property
    def submitted(self) -> bool:
        """The agent submitted (and a check, if any, accepted)."""
        return self.tag in SUBMITTED

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, JSON]:
        """The manifest line of this result (a JSON object).

        >>> RunResult("a", "exit:task_complete", steps=3).to_json()["steps"]
        3
        """
        return {
            "id": self.id,
            "outcome": self.outcome,
            "trajectory": str(self.trajectory) if self.trajectory is not None else None,
            "steps": self.steps,
            "tokens": self.tokens,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
            "wall_time": round(self.wall_time, 6),
            "error": self.error,
            "attempts": self.attempts,
            "final": self.final,
            "node": self.node,
            "fields": dict(self.fields),
            **({"lost_streams": list(self.lost_streams)} if self.lost_streams else {}),
        }

    @staticmethod
    def from_json(data: Mapping[str, JSON]) -> RunResult:
        """Read a manifest line back (missing keys take their defaults).

        >>> r = RunResult("a", "stalled: x", cost=0.5, final=False)
        >>> RunResult.from_json(r.to_json()) == r
        True
        """
        lost = data.get("lost_streams")
        return RunResult(
            str(data.get("id", "")),
            str(data.get("outcome", "")),
            Path(path) if isinstance(path := data.get("trajectory"), str) else None,
            _int(data.get("steps")),
            _int(data.get("prompt_tokens")),
            _int(data.get("completion_tokens")),
            _float(data.get("cost")),
            _float(data.get("wall_time")),
            error if isinstance(error := data.get("error"), str) else None,
            max(1, _int(data.get("attempts", 1))),
            data.get("final", True) is not False,
            str(data.get("node") or ""),
            fields if isinstance(fields := data.get("fields"), dict) else {},
            tuple(s for s in lost if isinstance(s, str)) if isinstance(lost, list) else (),
        )


def unfinished(
    item: Item,
    outcome: str,
    usage: Usage = NO_USAGE,
    error: str | None = None,
    attempts: int = 1,
    final: bool = False,
    lost_streams: tuple[str, ...] = (),
) -> RunResult:
    """The item's result when no trajectory of it came back: with what its lost
    attempts spent."""
    return RunResult(
        item.id, outcome, None, 0, usage.prompt_tokens, usage.completion_tokens,
        usage.known_cost, 0.0, error, attempts, final, "", item.fields, lost_streams,
    )  # fmt: skip


def taken(
    item: Item, saved: Saved, attempts: int = 1, node: str = "", error: str | None = None
) -> RunResult:
    """The item's result as its saved trajectory ``saved`` tells it."""
    u = saved.usage
    return RunResult(
        item.id, str(saved.outcome), saved.path, saved.steps, u.prompt_tokens,
        u.completion_tokens, u.known_cost, saved.wall_time, error, attempts, True, node,
        item.fields,
    )  # fmt: skip


def plus(result: RunResult, usage: Usage, streams: tuple[str, ...] = ()) -> RunResult:
    """``result`` with what its lost earlier attempts spent (``usage``, read from their
    ``streams``, named first in its ``lost_streams``)."""
    if usage is NO_USAGE and not streams:
        return result
    return replace(
        result,
        prompt_tokens=result.prompt_tokens + usage.prompt_tokens,
        completion_tokens=result.completion_tokens + usage.completion_tokens,
        cost=result.cost + usage.known_cost,
        lost_streams=(*streams, *result.lost_streams),
    )


MANIFEST = "manifest.jsonl"
MAX_BYTES = 1 << 30
"""The largest manifest read (a line is a few hundred bytes: millions of items fit)."""


@checked
def read_results(path: str | os.PathLike[str]) -> list[RunResult]:
    """Every line of a manifest, in order (docs/batch.md); none when there is no manifest.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp(); os.mkfifo(os.path.join(folder, MANIFEST))
    >>> try:
    ...     read_results(folder)
    ... except Unreadable as exc:
    ...     print(str(exc).endswith("manifest.jsonl is a FIFO (named pipe), not a regular file"))
    True
    """
    p = Path(path)
    p = p if p.suffix == ".jsonl" else p / MANIFEST  # a batch folder, or its manifest
    try:
        text = read_regular(p, max_bytes=MAX_BYTES).decode("utf-8", "replace")
    except Unreadable as exc:
        if exc.errno == errno.ENOENT:
            return []
        raise
    results = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            result = RunResult.from_json(data)
            if result.trajectory is not None and not result.trajectory.is_absolute():
                # (a batch folder at a URL names them from its folder)
                result = replace(result, trajectory=p.parent / result.trajectory)
            results.append(result)
    return results


@checked
def read_manifest(path: str | os.PathLike[str]) -> dict[str, RunResult]:
    """The latest result of each item of a batch folder (or manifest file), by id.

    >>> import tempfile
    >>> read_manifest(tempfile.mkdtemp())
    {}
    """
    return {r.id: r for r in read_results(path)}


class ManifestWriter:
    """Appends results to a manifest, one flushed line each. Holds an exclusive lock on
    the file, so two batches cannot write one folder at once. With ``relative``, a
    trajectory in the folder is named from it (the folder is a copy of one at a URL)."""

    def __init__(self, folder: Path, *, relative: bool = False) -> None:
        self.folder = folder
        self.relative = relative
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / MANIFEST
        # Refused with one line (Unreadable) if a FIFO, a device or a link is in its place,
        # or it is over MAX_BYTES: never written into (a FIFO's writer would wait).
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
        fd = regular_fd(self.path, flags, max_bytes=MAX_BYTES)
        self._file: IO[str] = os.fdopen(fd, "a+", encoding="utf-8")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            raise RuntimeError(f"another batch is writing {self.path}") from None
        size = os.fstat(self._file.fileno()).st_size
        # A line cut short by a crash must not swallow the next one.
        if size and os.pread(self._file.fileno(), 1, size - 1) != b"\n":
            self._file.write("\n")
            self._file.flush()

    def write(self, result: RunResult) -> None:
        """Append ``result`` as one line, flushed."""
        path = result.trajectory
        if self.relative and path is not None and path.is_relative_to(self.folder):
            result = replace(result, trajectory=path.relative_to(self.folder))
        self._file.write(json.dumps(result.to_json()) + "\n")
        self._file.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()


@dataclass(frozen=True, slots=True)
class Saved:
    """What a saved trajectory says of its run. ``outcome`` is None for a run cut short
    (a ``.jsonl`` with no end record)."""

    path: Path
    outcome: str | None
    steps: int = 0
    usage: Usage = NO_USAGE
    wall_time: float = 0.0


def read_saved(path: str | os.PathLike[str]) -> Saved | None:
    """Outcome, steps and usage of a trajectory of ours (``.json``, or the ``.jsonl`` of a
    run cut short); None when the file cannot be read as one. Reads no message objects:
    of a sealed ``.json`` as ``save_trajectory`` writes it, only the part before the
    messages is read and parsed."""
    p = path if isinstance(path, Path) else Path(path)  # a Path is not parsed again
    if p.suffix != ".jsonl":
        try:
            head = load_head(p)
        except TrajectoryError:
            return None
        return _with_stats(p, head.outcome, head.stats)
    try:
        text = read_regular(p).decode("utf-8", errors="replace")
    except (OSError, ValueError):  # Unreadable: a FIFO, a device, too large
        return None
    started, steps, usage = False, 0, NO_USAGE
    for record in stream_lines(text):
        if isinstance(record, Start):
            started = True
        elif isinstance(record, End):
            try:
                return _with_stats(p, record.outcome, stats_of(record.stats))
            except msgspec.ValidationError:
                return None
        elif isinstance(record, Line) and isinstance(m := record.message, AssistantRecord):
            steps += 1
            if (u := m.usage) is not None:
                usage += Usage(u.prompt_tokens, u.completion_tokens, _float(u.cost))
    return Saved(p, None, steps, usage) if started else None


def read_stream(stream: Path) -> Saved | None:
    """``read_saved`` of a run's ``.jsonl`` stream, or of its sealed ``.json`` when there."""
    sealed = stream.with_suffix(".json")
    return read_saved(sealed if sealed.is_file() else stream)


def just_sealed(path: Path) -> Saved | None:
    """``read_saved`` of a document this process sealed just now, from what its sink
    remembers (``sealed_here``: told once), without reading it back; else None."""
    known = sealed_here(path)
    if known is None:
        return None
    outcome, stats = known
    return _with_stats(path, outcome, stats_of(stats))


def _with_stats(path: Path, outcome: str | None, stats: Stats) -> Saved:
    u = stats.usage
    usage = Usage(u.prompt_tokens, u.completion_tokens, _float(u.cost), u.calls)
    return Saved(path, outcome, stats.steps, usage, _float(stats.wall_time))


def _int(value: JSON) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(value: JSON) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0
