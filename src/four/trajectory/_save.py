"""emit: trajectories written as the run goes, then sealed as one JSON document."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from four._outcomes import Outcome
from four._types import JSON, NO_USAGE, Message, RunInfo, RunStats
from four.trajectory._codec import message_to_json, usage_to_json

FORMAT = "four.trajectory/1"


@dataclass(frozen=True, slots=True)
class TrajectoryWriter:
    """The emit made by ``save_trajectory``. One writer may serve many runs at once."""

    output_dir: Path

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> Path:
        """Save a finished history with no streaming record (plain emit use)."""
        now = time.time()
        info = RunInfo({}, 0, 0, now)
        sink = self.open(info)
        for message in messages:
            sink.append(message)
        return sink.close(messages, outcome, RunStats(0, NO_USAGE, now, now))

    def open(self, info: RunInfo, /) -> TrajectorySink:
        return TrajectorySink(self.output_dir, info)


class TrajectorySink:
    """One run's files: ``<stem>.jsonl`` grows a line per message (written through at
    once), and ``<stem>.json`` is written atomically when the run ends.

    Files are written with plain ``os.write`` on a descriptor: one system call per
    message and no buffered text layer (which costs an fstat, an isatty and seeks per
    file), since under a thread pool each system call hands the GIL over.
    """

    __slots__ = ("_encoded", "_fd", "_head", "_info", "_times", "jsonl", "path")

    def __init__(self, directory: Path, info: RunInfo) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(info.started_at))
        stem = f"{stamp}-{os.urandom(6).hex()}"  # unique without looking at the folder
        self.jsonl = directory / f"{stem}.jsonl"
        self.path = directory / f"{stem}.json"
        self._info = info
        self._times: list[float] = []
        self._encoded: list[str] = []  # each message's JSON, reused for the final document
        # The start record goes out with the run's first message, in the same write.
        start = {"type": "start", "format": FORMAT, "info": _info_json(info)}
        self._head = json.dumps(start) + "\n"
        self._fd = _create(self.jsonl)

    def append(self, message: Message, /) -> None:
        t = round(time.time() - self._info.started_at, 6)
        encoded = json.dumps(message_to_json(message))
        self._times.append(t)
        self._encoded.append(encoded)
        line = f'{{"type": "message", "t": {t}, "message": {encoded}}}\n'
        if self._head:
            line, self._head = self._head + line, ""
        _write(self._fd, line)

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> Path:
        document: dict[str, JSON] = {
            "format": FORMAT,
            "outcome": outcome.text,
            "outcome_detail": _outcome_json(outcome),
            "info": _info_json(self._info),
            "stats": (stats_json := _stats_json(stats)),
            "stream": self.jsonl.name,
            "timestamps": list(self._times) if len(self._times) == len(messages) else [],
        }
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                end = {"type": "end", "outcome": outcome.text, "stats": stats_json}
                _write(fd, self._head + json.dumps(end) + "\n")
            finally:
                os.close(fd)
        if len(self._encoded) != len(messages):  # a plain-emit history, or one edited after
            self._encoded = [json.dumps(message_to_json(m)) for m in messages]
        _write_atomic(self.path, _render(document, self._encoded))
        return self.path

    def __del__(self) -> None:  # a sink dropped without close() leaks no descriptor
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            self._fd = -1
            with contextlib.suppress(OSError):
                os.close(fd)


def save_trajectory(output_dir: str | os.PathLike[str] = "trajectories") -> TrajectoryWriter:
    """The standard emit: a JSON Lines log while the run goes, one JSON document at its end.

    Each run gets its own ``<UTC time>-<random id>`` name, so many runs can share a
    folder. A killed process leaves the ``.jsonl`` with every completed message.

    >>> emit = save_trajectory("/tmp/four-doc-runs")
    >>> emit.output_dir.name
    'four-doc-runs'
    """
    return TrajectoryWriter(Path(output_dir).expanduser().absolute())


def _render(document: dict[str, JSON], messages: list[str]) -> str:
    """One key, and one message, per line: readable, and json's C encoder does the work
    (``indent=`` would switch to the pure-Python encoder, 10x slower)."""
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in document.items()]
    body = ",\n".join(messages)
    lines.append(f'"messages": [\n{body}\n]')
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _create(path: Path) -> int:
    """A new file (never an existing one), its folder made if missing: its descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o666)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, flags, 0o666)


def _write(fd: int, text: str) -> None:
    """Write all of ``text`` (os.write may write less than it is given)."""
    data = memoryview(text.encode("utf-8"))
    while data:
        data = data[os.write(fd, data) :]


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")  # the stem is already unique to this run
    try:
        fd = _create(tmp)
        try:
            _write(fd, text)  # no fsync: rename is atomic against a dying process, the risk here
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _outcome_json(outcome: Outcome) -> dict[str, JSON]:
    detail: dict[str, JSON] = {"kind": outcome.tag}
    for name in outcome.__match_args__:
        value = getattr(outcome, name)
        detail[name] = value if isinstance(value, str | int | float | bool) else str(value)
    return detail


def _info_json(info: RunInfo) -> dict[str, JSON]:
    return {
        "components": dict(info.components),
        "max_steps": info.max_steps,
        "max_format_errors": info.max_format_errors,
        "started_at": info.started_at,
        "resumed_from": info.resumed_from,
    }


def _stats_json(stats: RunStats) -> dict[str, JSON]:
    return {
        "steps": stats.steps,
        "format_errors": stats.format_errors,
        "usage": usage_to_json(stats.usage),
        "started_at": stats.started_at,
        "ended_at": stats.ended_at,
        "wall_time": round(stats.wall_time, 6),
        **stats.extra,
    }
