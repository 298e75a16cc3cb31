"""emit: trajectories written as the run goes, then sealed as one JSON document."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from four import _arguments as arguments
from four._outcomes import Outcome
from four._types import JSON, NO_USAGE, Message, RunInfo, RunStats
from four.trajectory._codec import (
    encode_json,
    encode_message,
    encode_text,
    number_json,
    usage_text,
    usage_to_json,
)

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
    once), and ``<stem>.json`` appears whole when the run ends."""

    __slots__ = (
        "_dir",
        "_encoded",
        "_fd",
        "_head",
        "_info",
        "_pending",
        "_size",
        "_started",
        "_stem",
        "_times",
        "_written",
        "failure",
    )

    def __init__(self, directory: Path, info: RunInfo) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(info.started_at))
        self._stem = f"{stamp}-{os.urandom(6).hex()}"  # unique without looking at the folder
        self._dir = directory
        self._started = info.started_at
        self._info = encode_json(_info_json(info))  # encoded once: start line and document
        self._times: list[str] = []  # each message's time, as JSON text
        self._encoded: list[str] = []  # each message's JSON, reused for the final document
        self._fd = _create(directory, f"{self._stem}.jsonl")
        # Written with the first message: a run's first messages follow at once.
        self._head = f'{{"type": "start", "format": "{FORMAT}", "info": {self._info}}}\n'
        self.failure: OSError | None = None
        """Why the stream stopped being written (a full disk...); its lines are kept in
        memory from then on, and written when the run ends."""
        self._size = 0  # bytes of whole lines in the stream
        self._written = 0  # messages in the stream
        self._pending: list[bytes] = []  # lines not written, once it failed

    @property
    def jsonl(self) -> Path:
        """The JSON Lines record, written as the run goes."""
        return self._dir / f"{self._stem}.jsonl"

    @property
    def path(self) -> Path:
        """The sealed document, there once the run has ended."""
        return self._dir / f"{self._stem}.json"

    def __del__(self) -> None:  # a sink dropped without close() leaks no descriptor
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            self._fd = -1
            with contextlib.suppress(OSError):
                os.close(fd)

    def append(self, message: Message, /) -> None:
        t = f"{time.time() - self._started:.6f}"  # seconds to the microsecond, as JSON
        encoded = encode_message(message)
        self._times.append(t)
        self._encoded.append(encoded)
        line = f'{self._head}{{"type": "message", "t": {t}, "message": {encoded}}}\n'.encode()
        self._head = ""
        if self.failure is not None:
            self._pending.append(line)  # for the end
            return
        # Unbuffered: a killed process keeps every line written. A short write is rare.
        try:
            if (n := os.write(self._fd, line)) < len(line):
                _write_rest(self._fd, line, n)
        except OSError as exc:  # the disk is full...: kept, and the run decides
            self._failed(exc, [line])
            return
        self._size += len(line)
        self._written += 1

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> Path:
        stats_json = _stats_text(stats)
        outcome_text = encode_text(outcome.text)
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                end = f'{{"type": "end", "outcome": {outcome_text}, "stats": {stats_json}}}'
                self._end_stream(fd, f"{self._head}{end}\n".encode())
            finally:
                os.close(fd)
        if len(self._encoded) != len(messages):  # a plain-emit history, or one edited after
            self._encoded = [encode_message(m) for m in messages]
        timed = len(self._times) == len(messages)
        document = {
            "format": f'"{FORMAT}"',
            "outcome": outcome_text,
            "outcome_detail": encode_json(_outcome_json(outcome)),
            "info": self._info,
            "stats": stats_json,
            "stream": f'"{self._stem}.jsonl"',  # the stem needs no escaping
            "timestamps": f"[{', '.join(self._times)}]" if timed else "[]",
        }
        try:
            _write_atomic(
                self._dir, f"{self._stem}.json", _render(document, self._encoded).encode()
            )
        except OSError as exc:
            raise TrajectoryNotSaved(self, exc, len(self._encoded)) from exc
        return self.path

    def _failed(self, exc: OSError, pending: list[bytes]) -> None:
        """The stream could not take a line: cut it back to its last whole line (so it
        stays readable), and keep what it lacks in memory."""
        self.failure = exc
        self._pending.extend(pending)
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._size)

    def _end_stream(self, fd: int, end: bytes) -> None:
        """Write what the stream lacks, then the end record. A stream deleted while the
        run went (the agent's own ``rm -rf``) is written again: copied from the open
        file, which outlives its name."""
        rest = b"".join(self._pending) + end
        try:
            if os.fstat(fd).st_nlink == 0:  # unlinked: the open file is no one's now
                self._relink(fd)
            else:
                os.ftruncate(fd, self._size)
            _write(fd, rest)
        except OSError as exc:
            if self.failure is None:
                self.failure = exc
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._size)
            return
        self._written += len(self._pending)
        self.failure, self._pending = None, []

    def _relink(self, fd: int) -> None:
        """Give the open, unlinked stream a name again: a new file with its content."""
        self._dir.mkdir(parents=True, exist_ok=True)
        with open(f"/proc/self/fd/{fd}", "rb") as old:  # the unlinked file, read
            data = old.read(self._size)
        fresh = os.open(self.jsonl, _FLAGS | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666)
        try:
            _write(fresh, data)
        except BaseException:
            os.close(fresh)
            raise
        os.dup2(fresh, fd, inheritable=False)  # the rest goes to the new file
        os.close(fresh)


class TrajectoryNotSaved(OSError):
    """The sealed document could not be written (a full disk, a folder that went). What
    the stream kept, if anything, is named: ``kept`` exists, or is None."""

    def __init__(self, sink: TrajectorySink, error: OSError, messages: int) -> None:
        reason = (error.strerror or str(error)).lower()
        kept = sink.jsonl if sink.jsonl.is_file() else None
        held = sink._written if sink.failure is not None else messages
        what = f"{kept} keeps {held} of {messages} messages" if kept else "nothing was kept"
        self.message = f"{reason}: the run could not be saved in {sink.path.parent} ({what})"
        super().__init__(error.errno, self.message)
        self.reason, self.kept, self.path = reason, kept, sink.path

    def __str__(self) -> str:
        return self.message


def save_trajectory(output_dir: str | os.PathLike[str] = "trajectories") -> TrajectoryWriter:
    """The standard emit: a JSON Lines log while the run goes, one JSON document at its end.

    Each run gets its own ``<UTC time>-<random id>`` name, so many runs can share a
    folder. A killed process leaves the ``.jsonl`` with every completed message.

    >>> emit = save_trajectory("/tmp/four-doc-runs")
    >>> emit.output_dir.name
    'four-doc-runs'
    """
    arguments.path("save_trajectory", "output_dir", output_dir)
    path = output_dir if isinstance(output_dir, Path) else Path(output_dir)  # not parsed again
    return TrajectoryWriter(path.expanduser().absolute())


def _render(document: dict[str, str], messages: list[str]) -> str:
    """One key, and one message, per line, from values already encoded: readable, and
    json's C encoder does the work (``indent=`` would switch to the pure-Python encoder,
    10x slower)."""
    lines = [f'"{k}": {v}' for k, v in document.items()]
    body = ",\n".join(messages)
    lines.append(f'"messages": [\n{body}\n]')
    return "{\n" + ",\n".join(lines) + "\n}\n"


_FLAGS = os.O_WRONLY | os.O_CLOEXEC  # not inherited by the commands the run starts


def _create(folder: Path, name: str) -> int:
    """Create the run's ``.jsonl`` (never an existing file), making its folder if needed."""
    flags = _FLAGS | os.O_CREAT | os.O_EXCL | os.O_APPEND
    try:
        return os.open(f"{folder}/{name}", flags, 0o666)
    except FileNotFoundError:  # the folder is made on first use, not checked every run
        folder.mkdir(parents=True, exist_ok=True)
        return os.open(f"{folder}/{name}", flags, 0o666)


def _write(fd: int, data: bytes) -> None:
    if (n := os.write(fd, data)) < len(data):
        _write_rest(fd, data, n)


def _write_rest(fd: int, data: bytes, done: int) -> None:
    """Finish a short write (a full disk, or a signal): raises if the disk stays full."""
    view = memoryview(data)[done:]
    while view:
        view = view[os.write(fd, view) :]


def _write_atomic(path: Path, name: str, data: bytes) -> None:
    """``path/name`` appears whole or not at all. The file is written unnamed (``O_TMPFILE``)
    and then linked in: one entry in the folder instead of a temporary and a rename,
    and nothing to clean up after a crash. Elsewhere: a temporary file and a rename."""
    folder = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if not _linked(folder, name, data):
            _renamed(folder, name, data)
    finally:
        os.close(folder)


_TMPFILE: list[bool] = [hasattr(os, "O_TMPFILE")]  # cleared once it proves unsupported


def _linked(folder: int, name: str, data: bytes) -> bool:
    if not _TMPFILE[0]:
        return False
    try:
        fd = os.open(".", _FLAGS | os.O_TMPFILE, 0o666, dir_fd=folder)
    except OSError:  # a filesystem without O_TMPFILE (EOPNOTSUPP, EISDIR on old kernels)
        _TMPFILE[0] = False
        return False
    try:
        _write(fd, data)
        # linkat(AT_SYMLINK_FOLLOW) through /proc: how an unnamed file gets a name.
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=folder)
    except FileExistsError:  # sealed twice: replace it, as a rename would
        return False
    except FileNotFoundError:  # no /proc
        _TMPFILE[0] = False
        return False
    finally:
        os.close(fd)
    return True


def _renamed(folder: int, name: str, data: bytes) -> None:
    tmp = f".{name}.tmp"  # the stem is already unique to this run
    try:
        fd = os.open(tmp, _FLAGS | os.O_CREAT | os.O_EXCL, 0o666, dir_fd=folder)
        try:
            _write(fd, data)  # no fsync: rename is atomic against a dying process, the risk here
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder)
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


def _stats_text(stats: RunStats) -> str:
    """``encode_json(_stats_json(stats))``, written directly when nothing extra is recorded."""
    if stats.extra:
        return encode_json(_stats_json(stats))
    n = number_json
    return (
        f'{{"steps": {n(stats.steps)}, "format_errors": {n(stats.format_errors)}, '
        f'"usage": {usage_text(stats.usage)}, "started_at": {n(stats.started_at)}, '
        f'"ended_at": {n(stats.ended_at)}, "wall_time": {n(round(stats.wall_time, 6))}}}'
    )


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
