"""Reading trajectories back: ours (final .json or the streaming .jsonl) and mini-swe-agent's.

Files come from disks, other tools and other people, so reading refuses, with one line
naming the file, the line and what is wrong, anything that is not a regular file, is
larger than a limit, is not UTF-8 JSON, nests too deeply, or holds a value of the wrong
type: the file is decoded straight into the typed record (``four.trajectory._record``).
A key repeated in one object counts with its last value here; ``four audit`` refuses
the file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, TypeVar

import msgspec

from four import _arguments as arguments
from four import _files as files
from four._types import JSON, Checked, Message
from four.trajectory._record import (
    FILE,
    HEAD,
    MESSAGE,
    RECORD,
    Beat,
    Detail,
    Document,
    End,
    Head,
    Info,
    Line,
    Start,
    Stats,
    StreamRecord,
    message_of,
    stats_of,
)

T = TypeVar("T")

MAX_BYTES = files.MAX_BYTES
"""The largest file read unless the caller raises it (``max_bytes=``; ``--max-size``)."""


class TrajectoryError(ValueError):
    """The file is not a trajectory this library can read."""


class TrajectoryTooLarge(TrajectoryError):
    """The file is larger than the limit the reader was given."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(
            f"{path} is {files.size_text(size)}, over the limit of {files.size_text(limit)} "
            "(raise max_bytes)"
        )
        self.path, self.size, self.limit = path, size, limit


NO_INFO, NO_STATS, NO_DETAIL = Info(), Stats(), Detail()


@dataclass(frozen=True, slots=True)
class Trajectory(Checked):
    """A saved run. ``outcome`` is None for a run that never ended (a killed process).

    ``info``, ``stats`` and ``detail`` are the typed record (``four.trajectory._record``):
    ``stats.usage.cost``, ``stats.verdicts.log``, ``info.components``... ``timestamps``
    are seconds since the run started, one per message, where the file records them
    (ours does; mini-swe-agent's does not).
    """

    messages: tuple[Message, ...]
    outcome: str | None
    format: str
    path: Path
    info: Info = NO_INFO
    stats: Stats = NO_STATS
    detail: Detail = NO_DETAIL
    timestamps: tuple[float, ...] = ()


OnMessage = Callable[[Message, "float | None"], object]
"""What ``scan_trajectory`` hands each message to, with its time if the file has one."""


def load_trajectory(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES) -> Trajectory:
    """Read a trajectory: our ``.json`` or ``.jsonl`` (also one cut short by a kill),
    or a mini-swe-agent ``.traj.json`` (v1 list or v2 document). A file larger than
    ``max_bytes`` (256 MiB unless raised) is refused, as is anything but a regular file.

    >>> load_trajectory("missing.json")
    Traceback (most recent call last):
    ...
    four.trajectory._load.TrajectoryError: cannot read missing.json: No such file or directory
    """
    messages: list[Message] = []
    times: list[float] = []

    def keep(message: Message, t: float | None) -> None:
        messages.append(message)
        if t is not None:
            times.append(t)

    head = scan_trajectory(path, keep, max_bytes=max_bytes)
    stamps = tuple(times) if len(times) == len(messages) else ()
    return replace(head, messages=tuple(messages), timestamps=stamps)


def scan_trajectory(
    path: str | os.PathLike[str], each: OnMessage, *, max_bytes: int = MAX_BYTES
) -> Trajectory:
    """Read a trajectory, handing each message to ``each`` as it is decoded; the record
    returned holds everything else (its ``messages`` are empty): memory follows the
    file and the messages ``each`` keeps.

    >>> scan_trajectory("missing.json", print)
    Traceback (most recent call last):
    ...
    four.trajectory._load.TrajectoryError: cannot read missing.json: No such file or directory
    """
    return _load(path, max_bytes, each)


def load_head(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES) -> Trajectory:
    """``load_trajectory`` without the messages: how a run ended, its info and stats,
    for readers of many runs. Of a document as we write it (one key a line, the
    messages last), only the part before the messages is read.

    >>> load_head("missing.json")
    Traceback (most recent call last):
    ...
    four.trajectory._load.TrajectoryError: cannot read missing.json: No such file or directory
    """
    return _load(path, max_bytes, None)


def _load(path: str | os.PathLike[str], max_bytes: int, each: OnMessage | None) -> Trajectory:
    arguments.path("load_trajectory", "path", path)
    arguments.count("load_trajectory", "max_bytes", max_bytes, minimum=1)
    name = os.fspath(path)
    p = Path(name)
    with _open_regular(name, max_bytes) as raw:
        if p.suffix == ".jsonl":
            return _from_jsonl(p, raw, max_bytes, each)
        if each is None and (head := _head(p, raw, max_bytes)) is not None:
            return head
        raw.seek(0)
        data = files.read_at_most(raw, max_bytes + 1)
    if len(data) > max_bytes:  # it grew while read
        raise TrajectoryTooLarge(name, len(data), max_bytes)
    try:
        decoded = decode(HEAD, data) if each is None else decode(FILE, data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise TrajectoryError(_refusal(name, data, exc)) from None
    if isinstance(decoded, tuple):  # mini-swe-agent v1: a bare message list
        if each is not None:
            _hand(p, data, decoded, (), each)
        return Trajectory((), None, "mini-swe-agent-1.0", p)
    return _document(p, decoded, data, each)


_MESSAGES = b'\n"messages": ['


def _head(path: Path, raw: BinaryIO, limit: int) -> Trajectory | None:
    """The keys before the messages, in our layout; None for another."""
    data = bytearray()
    while len(data) <= limit and (block := raw.read(1 << 16)):
        seen = max(0, len(data) - len(_MESSAGES))
        data += block
        cut = data.find(_MESSAGES, seen)
        if cut >= 0:
            try:
                head = decode(HEAD, data[:cut] + b'\n"messages": []}')
                return _document(path, head, b"", None)
            except (msgspec.DecodeError, RecursionError):
                return None
    return None


def decode(decoder: msgspec.json.Decoder[T], data: bytes | bytearray | str | msgspec.Raw) -> T:
    """``decoder.decode(data)``; JSON that escapes a lone surrogate (as ``json.dumps``
    writes a reply's broken text), which msgspec refuses, goes through ``json`` first."""
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:
        why = str(exc)  # msgspec: "...surrogate..." or "unexpected end of hex escape"
        lone = "surrogate" in why or "hex escape" in why
        if not lone or isinstance(exc, msgspec.ValidationError):
            raise
        try:
            value = json.loads(bytes(data) if isinstance(data, msgspec.Raw) else data)
        except ValueError:
            raise exc from None
        if decoder is FILE or decoder is HEAD:  # the messages stay encoded (Raw)
            listed = value.get("messages") if isinstance(value, dict) else value
            if isinstance(listed, list):
                raws = [msgspec.Raw(json.dumps(m).encode()) for m in listed]
                whole = msgspec.Raw(json.dumps(listed).encode())
                encoded = whole if decoder is HEAD else raws
                value = {**value, "messages": encoded} if isinstance(value, dict) else raws
        converted: T = msgspec.convert(value, decoder.type)
        return converted


def _document(path: Path, doc: Head, data: bytes, each: OnMessage | None) -> Trajectory:
    mini = doc.trajectory_format is not None or doc.format is None  # mini-swe-agent v2
    if each is not None and isinstance(doc, Document):
        _hand(path, data, doc.messages, () if mini else doc.timestamps, each)
    if mini:
        status = doc.info.exit_status
        fmt = doc.trajectory_format or "mini-swe-agent"
        return Trajectory((), None if status is None else str(status), fmt, path, doc.info)
    return Trajectory(
        (), doc.outcome, doc.format or "", path, doc.info, _stats(path, doc.stats, ""),
        doc.outcome_detail,
    )  # fmt: skip


def _hand(
    path: Path,
    data: bytes,
    records: tuple[msgspec.Raw, ...],
    stamps: tuple[float, ...],
    each: OnMessage,
) -> None:
    """Decode each message and hand it on (mini-swe-agent's ``exit`` is no message)."""
    for i, raw in enumerate(records):
        try:
            message = message_of(decode(MESSAGE, raw))
        except (msgspec.DecodeError, RecursionError) as exc:
            raise TrajectoryError(_refusal(str(path), data, exc, f".messages[{i}]")) from None
        if message is not None:
            each(message, stamps[i] if i < len(stamps) else None)


def read_text(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES) -> str:
    """A trajectory file's whole text, refused as ``load_trajectory`` refuses what is not
    a regular file or is over ``max_bytes`` (undecodable bytes are replaced).

    >>> read_text("missing.json")
    Traceback (most recent call last):
    ...
    four.trajectory._load.TrajectoryError: cannot read missing.json: No such file or directory
    """
    name = os.fspath(path)
    with _open_regular(name, max_bytes) as raw:
        data = files.read_at_most(raw, max_bytes + 1)
    if len(data) > max_bytes:  # it grew while read
        raise TrajectoryTooLarge(name, len(data), max_bytes)
    return data.decode("utf-8", errors="replace")


def stream_records(text: str) -> Iterator[dict[str, JSON]]:
    """The records of a ``.jsonl`` stream as JSON values (what the seal hashes), up to
    a line cut short by a killed process.

    >>> [r["type"] for r in stream_records('{"type": "start"}\\n[1]\\n{"type": "mess')]
    ['start']
    """
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            return  # the line in flight when the process died
        if isinstance(record, dict):
            yield record


def stream_lines(text: str) -> Iterator[StreamRecord]:
    """The typed records of a ``.jsonl`` stream, up to a line cut short by a killed
    process (or any line that is not a record).

    >>> [type(r).__name__ for r in stream_lines('{"type": "start", "format": "f"}\\n{"type"')]
    ['Start']
    """
    for line in text.splitlines():
        try:
            yield decode(RECORD, line)
        except (msgspec.DecodeError, RecursionError):
            return


# --- refusals ----------------------------------------------------------------------------

_AT = re.compile(r"(?: - at `\$(?P<path>[^`]*)`)?$")
_BYTE = re.compile(r"\(byte (\d+)\)")
_MESSAGE = re.compile(r"^\.messages\[(\d+)\]")


def _refusal(name: str, data: bytes, exc: Exception, within: str = "") -> str:
    """One line naming the file, the line and what is wrong."""
    if isinstance(exc, RecursionError):
        return f"{name} nests deeper than this reader follows"
    why = str(exc)
    try:
        data.decode()
    except UnicodeDecodeError as bad:
        line = data.count(b"\n", 0, bad.start) + 1
        return (
            f"{name}: line {line} is not UTF-8 text "
            f"(byte {data[bad.start]:#04x} at offset {bad.start})"
        )
    if isinstance(exc, msgspec.ValidationError):
        where, what = _invalid(why)
        where = within + where
        if what == "object missing required field `messages`" and not where:
            return f"{name} has no message list"
        return f"{name}: {_line_of(data, where)}{where.lstrip('.') or 'the file'}: {what}"
    why = why.removeprefix("JSON is malformed: ")
    byte = _BYTE.search(why)
    if byte is None:  # cut short, or empty
        lines = data.count(b"\n") + 1
        return f"{name}: line {lines} is not JSON ({_lower(why)}: cut short?)"
    line = data.count(b"\n", 0, int(byte[1])) + 1
    return f"{name}: line {line} is not JSON ({_lower(why[: byte.start()].strip())})"


def _invalid(why: str) -> tuple[str, str]:
    """A msgspec ValidationError's path (``.messages[3].role``) and its complaint."""
    match = _AT.search(why)
    where = match["path"] if match and match["path"] else ""
    return where, _lower(why[: match.start()] if match else why)


def _stats(path: Path, data: dict[str, JSON], where: str) -> Stats:
    try:
        return stats_of(data)
    except msgspec.ValidationError as exc:
        at, what = _invalid(str(exc))
        raise TrajectoryError(f"{path}: {where}stats{at}: {what}") from None


def _line_of(data: bytes, where: str) -> str:
    """``line N: `` of a message, in a document laid out as we write it (one message a
    line after the line opening the list); "" otherwise."""
    match = _MESSAGE.match(where)
    opening = data.find(b'\n"messages": [\n')
    if match is None or opening < 0:
        return ""
    start = data.count(b"\n", 0, opening) + 3  # the line of message 0
    return f"line {start + int(match[1])}: "


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:]


# --- opening -----------------------------------------------------------------------------


def _open_regular(name: str, max_bytes: int) -> BinaryIO:
    """The file opened for reading, if it is a regular file within the limit (the
    shared opener: a FIFO is refused instead of waited on)."""
    try:
        return files.open_regular(name, max_bytes=max_bytes)
    except files.TooLarge as exc:
        raise TrajectoryTooLarge(name, exc.size, exc.limit) from None
    except files.Unreadable as exc:
        raise TrajectoryError(str(exc)) from None


# --- the streaming record ----------------------------------------------------------------


def _from_jsonl(path: Path, raw: BinaryIO, limit: int, each: OnMessage | None) -> Trajectory:
    """Line by line; only the last line may be cut short (a killed process), and only
    when no newline ends it."""
    start: Start | None = None
    end: End | None = None
    read = 0
    for number, line in enumerate(raw, 1):
        read += len(line)
        if read > limit:
            raise TrajectoryTooLarge(str(path), read, limit)
        try:
            record = decode(RECORD, line)
        except (msgspec.DecodeError, RecursionError) as exc:
            if not line.endswith(b"\n"):
                break  # the line in flight when the process died
            raise TrajectoryError(
                _refusal(str(path), line, exc).replace(": line 1", f": line {number}", 1)
            ) from None
        if start is None and not isinstance(record, Start):
            raise TrajectoryError(
                f"{path} has no start record (line {number} is {type(record).__name__.lower()})"
            )
        if isinstance(record, Line):
            if each is not None and (message := message_of(record.message)) is not None:
                each(message, record.t or 0.0)
        elif isinstance(record, Start):
            if start is not None:
                raise TrajectoryError(f"{path}: line {number} is a second start record")
            start = record
        elif isinstance(record, End):
            end = record
        else:
            assert isinstance(record, Beat)
    if start is None:
        raise TrajectoryError(f"{path} has no start record")
    if end is None:
        return Trajectory((), None, start.format, path, start.info)
    stats = _stats(path, end.stats, "the end record: ")
    return Trajectory((), end.outcome, start.format, path, start.info, stats, end.outcome_detail)
