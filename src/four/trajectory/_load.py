"""Reading trajectories back: ours (final .json or the streaming .jsonl) and mini-swe-agent's.

Files come from disks, other tools and other people, so reading refuses, with one line
naming the file and what is wrong, anything that is not a regular file, is larger
than a limit, is not UTF-8 JSON, repeats a key, nests too deeply, or holds a value of
the wrong type. A large file is read a piece at a time: memory follows its largest
message, not its size, when the caller takes the messages one by one
(``scan_trajectory``).
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, NoReturn, cast

from four import _arguments as arguments
from four import _files as files
from four._types import JSON, Message
from four.trajectory._codec import message_from_json

MAX_BYTES = files.MAX_BYTES
"""The largest file read unless the caller raises it (``max_bytes=``; ``--max-size``)."""

MAX_DEPTH = 64
"""The deepest nesting accepted inside a message or a header value."""


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


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A saved run. ``outcome`` is None for a run that never ended (a killed process).

    ``timestamps`` are seconds since the run started, one per message, where the file
    records them (ours does; mini-swe-agent's does not).
    """

    messages: tuple[Message, ...]
    outcome: str | None
    format: str
    path: Path
    info: Mapping[str, JSON] = field(default_factory=dict)
    stats: Mapping[str, JSON] = field(default_factory=dict)
    detail: Mapping[str, JSON] = field(default_factory=dict)
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
    """Read a trajectory, handing each message to ``each`` as it is read; the record
    returned holds everything else (its ``messages`` are empty).

    >>> scan_trajectory("missing.json", print)
    Traceback (most recent call last):
    ...
    four.trajectory._load.TrajectoryError: cannot read missing.json: No such file or directory
    """
    arguments.path("load_trajectory", "path", path)
    arguments.count("load_trajectory", "max_bytes", max_bytes, minimum=1)
    name = os.fspath(path)
    p = Path(name)
    with _open_regular(name, max_bytes) as raw:
        try:
            if p.suffix == ".jsonl":
                return _from_jsonl(p, raw, each, max_bytes)
            return _from_json(p, _Chars(raw, name, max_bytes), each)
        except RecursionError:
            raise TrajectoryError(f"{name} nests deeper than this reader follows") from None


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
        data = raw.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew while read
        raise TrajectoryTooLarge(name, len(data), max_bytes)
    return data.decode("utf-8", errors="replace")


def stream_records(text: str) -> Iterator[dict[str, JSON]]:
    """The records of a ``.jsonl`` stream, up to a line cut short by a killed process.

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


# --- opening ---------------------------------------------------------------------------


def _open_regular(name: str, max_bytes: int) -> BinaryIO:
    """The file opened for reading, if it is a regular file within the limit (the
    shared opener: a FIFO is refused instead of waited on)."""
    try:
        return files.open_regular(name, max_bytes=max_bytes)
    except files.TooLarge as exc:
        raise TrajectoryTooLarge(name, exc.size, exc.limit) from None
    except files.Unreadable as exc:
        raise TrajectoryError(str(exc)) from None


# --- JSON, strictly ------------------------------------------------------------------


def _unique(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
    """An object, refused when it repeats a key (which one counts is anyone's guess)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return out


class _Duplicate(Exception):
    pass


_DECODER = json.JSONDecoder(object_pairs_hook=_unique)
_SCAN: Callable[[str, int], tuple[object, int]] = _DECODER.scan_once  # type: ignore[attr-defined]  # raw_decode without its wrapper: one call a message
_BLANK = re.compile(r"[ \t\n\r]*")


class _Chars:
    """A file's text read a piece at a time, for json's ``raw_decode``: memory follows
    the largest value taken, not the file."""

    CHUNK = 1 << 20

    def __init__(self, raw: BinaryIO, name: str, limit: int) -> None:
        self._raw, self.name, self._limit = raw, name, limit
        self._decode = codecs.getincrementaldecoder("utf-8")("strict").decode
        self._buf, self._pos, self._base, self._read, self._eof = "", 0, 0, 0, False

    def _more(self) -> bool:
        """Read on (at least as much as is buffered: a long value is parsed again only
        a few times); False at the end of the file."""
        if self._eof:
            return False
        data = self._raw.read(max(self.CHUNK, len(self._buf) - self._pos))
        self._read += len(data)
        if self._read > self._limit:  # it grew while read
            raise TrajectoryTooLarge(self.name, self._read, self._limit)
        self._eof = not data
        try:
            text = self._decode(data, final=self._eof)
        except UnicodeDecodeError as exc:
            at = self._read - len(data) + exc.start
            raise TrajectoryError(
                f"{self.name} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {at})"
            ) from None
        self._base += self._pos
        self._buf = self._buf[self._pos :] + text
        self._pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not blank ("" at the end)."""
        while True:
            match = _BLANK.match(self._buf, self._pos)
            self._pos = match.end() if match else self._pos
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._more():
                return ""

    def comma(self) -> bool:
        """Step over a comma that follows at once (the usual case, quickly)."""
        if self._buf.startswith(",", self._pos):
            self._pos += 1
            return True
        return False

    def take(self, expected: str, what: str) -> None:
        found = self.peek()
        if found != expected:
            self.fail(f"expected {what}, found {_shown(found)}")
        self._pos += 1

    def value(self) -> JSON:
        self.peek()
        while True:
            try:
                value, end = _SCAN(self._buf, self._pos)
            except StopIteration:  # what is left is not a value, or not all of one yet
                if self._more():
                    continue
                try:
                    _DECODER.raw_decode(self._buf, self._pos)
                except json.JSONDecodeError as exc:
                    self.fail(exc.msg, exc.pos)
                self.fail("expected a value")
            except json.JSONDecodeError as exc:
                if self._more():
                    continue
                self.fail(exc.msg, exc.pos)
            except _Duplicate as exc:
                self.fail(f"a key repeated in one object: {exc.args[0]!r}")
            if end >= len(self._buf) and self._more():  # a number may go on
                continue
            self._pos = end
            return cast(JSON, value)

    def fail(self, why: str, pos: int | None = None) -> NoReturn:
        at = self._base + (self._pos if pos is None else pos)
        raise TrajectoryError(f"{self.name} is not valid JSON: {why} (character {at})")


def _shown(char: str) -> str:
    return "the end of the file" if not char else repr(char)


def _from_json(path: Path, chars: _Chars, each: OnMessage) -> Trajectory:
    head: dict[str, JSON] = {}
    count = [0]

    def message(value: JSON) -> None:
        stamps = head.get("timestamps")
        i = count[0]
        t = stamps[i] if isinstance(stamps, list) and i < len(stamps) else None
        _hand(path, value, i, each, float(t) if isinstance(t, int | float) else None)
        count[0] += 1

    first = chars.peek()
    if first == "[":  # mini-swe-agent v1: a bare message list
        _elements(chars, message)
        _end(chars)
        return Trajectory((), None, "mini-swe-agent-1.0", path)
    if first != "{":
        raise TrajectoryError(
            f"{path} is not JSON of a trajectory: it starts with {_shown(first)}, not {{ or ["
        )
    chars.take("{", "{")
    while chars.peek() != "}":
        if head:
            chars.take(",", "',' or '}'")
        if chars.peek() != '"':
            chars.fail(f"expected a key, found {_shown(chars.peek())}")
        key = cast(str, chars.value())
        chars.take(":", "':'")
        if key in head:
            raise TrajectoryError(f"{path} has the key {key!r} twice")
        if key == "messages" and chars.peek() == "[":
            _elements(chars, message)
            head[key] = []
        else:
            head[key] = chars.value()
    chars.take("}", "'}'")
    _end(chars)
    return _header(path, head)


def _elements(chars: _Chars, each: Callable[[JSON], None]) -> None:
    chars.take("[", "[")
    if chars.peek() == "]":
        chars.take("]", "]")
        return
    while True:
        each(chars.value())
        if chars.comma():
            continue
        if chars.peek() == "]":
            chars.take("]", "]")
            return
        chars.take(",", "',' or ']'")


def _end(chars: _Chars) -> None:
    if chars.peek():
        chars.fail("more data after the document")


def _header(path: Path, head: dict[str, JSON]) -> Trajectory:
    if "messages" not in head:
        raise TrajectoryError(f"{path} has no message list")
    _list(path, head, "messages")
    info = _object(path, head, "info")
    if "trajectory_format" in head or "format" not in head:  # mini-swe-agent v2
        status = info.get("exit_status")
        fmt = _text(path, head, "trajectory_format")
        return Trajectory(
            (),
            str(status) if isinstance(status, str | int) else None,
            fmt or "mini-swe-agent",
            path,
            info,
        )
    fmt = _text(path, head, "format")
    outcome = _text(path, head, "outcome")
    stats = _object(path, head, "stats")
    detail = _object(path, head, "outcome_detail")
    stamps = _list(path, head, "timestamps")
    if not all(isinstance(t, int | float) and not isinstance(t, bool) for t in stamps):
        raise TrajectoryError(f"{path}: 'timestamps' holds something other than numbers")
    return Trajectory((), outcome, fmt or "", path, info, stats, detail)


def _typed(path: Path, data: Mapping[str, JSON], key: str, kind: type, name: str) -> JSON:
    """``data[key]`` if it is absent, null or of ``kind`` (and not nested too deeply)."""
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise TrajectoryError(f"{path}: {key!r} is {_json_type(value)}, not {name}")
    _shallow(path, key, value)
    return value


def _text(path: Path, data: Mapping[str, JSON], key: str) -> str | None:
    return cast("str | None", _typed(path, data, key, str, "text"))


def _object(path: Path, data: Mapping[str, JSON], key: str) -> dict[str, JSON]:
    value = cast("dict[str, JSON]", _typed(path, data, key, dict, "an object") or {})
    for name, shape in _FIELDS.get(key, {}).items():
        v = value.get(name)
        if v is not None and type(v) not in shape:
            raise TrajectoryError(f"{path}: {key}.{name} is {_json_type(v)}, not {_wanted(shape)}")
    if key == "stats" and isinstance(usage := value.get("usage"), dict):
        _usage_numbers(f"{path}: stats", usage)
    return value


_NUM: frozenset[type] = frozenset((int, float))
_FIELDS: dict[str, dict[str, frozenset[type]]] = {  # what the readers take from a header
    "info": {
        "components": frozenset((dict,)),
        "max_steps": frozenset((int,)),
        "max_format_errors": frozenset((int,)),
        "started_at": _NUM,
        "exit_status": frozenset((str,)),
        "model_stats": frozenset((dict,)),
        "config": frozenset((dict,)),
    },
    "stats": {
        "steps": frozenset((int,)),
        "format_errors": frozenset((int,)),
        "usage": frozenset((dict,)),
        "started_at": _NUM,
        "ended_at": _NUM,
        "wall_time": _NUM,
        "verdicts": frozenset((dict,)),
    },
    "outcome_detail": {"kind": frozenset((str,)), "output": frozenset((str,))},
}


def _list(path: Path, data: Mapping[str, JSON], key: str) -> list[JSON]:
    return cast("list[JSON]", _typed(path, data, key, list, "a list") or [])


def _shallow(path: Path, where: str, value: JSON) -> None:
    """Refuse values nested deeper than ``MAX_DEPTH`` (later code may walk them)."""
    level: list[JSON] = [value]
    for _ in range(MAX_DEPTH):
        level = [
            v
            for item in level
            if isinstance(item, dict | list)
            for v in (item.values() if isinstance(item, dict) else item)
            if isinstance(v, dict | list)
        ]
        if not level:
            return
    raise TrajectoryError(f"{path}: {where} nests deeper than {MAX_DEPTH} levels")


def _json_type(value: JSON) -> str:
    if isinstance(value, bool):
        return "a boolean"
    return {
        str: "text",
        int: "a number",
        float: "a number",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


# --- messages ------------------------------------------------------------------------

_ROLES = frozenset(("system", "user", "assistant", "tool", "exit"))
_TEXT: frozenset[type] = frozenset((str, type(None)))
_SHAPES: dict[str, frozenset[type]] = {
    "role": frozenset((str,)),
    "content": frozenset((str, list, type(None))),
    "tool_call_id": _TEXT,
    "name": _TEXT,
    "kind": _TEXT,
    "finish_reason": _TEXT,
    "model": _TEXT,
    "reasoning": _TEXT,
    "reasoning_content": _TEXT,
    "returncode": frozenset((int, type(None))),  # type(), so a boolean is refused
    "command": _TEXT,
    "usage": frozenset((dict, type(None))),
    "tool_calls": frozenset((list, type(None))),
    "thinking_blocks": frozenset((list, type(None))),
    "extra": frozenset((dict, type(None))),
    "cycle_break": frozenset((dict, type(None))),
}
_NUMBER: frozenset[type] = frozenset((int, float, type(None)))


def _hand(path: Path, value: JSON, index: int, each: OnMessage, t: float | None) -> None:
    """Check one message's shape and hand it on; mini-swe-agent's ``exit`` is skipped.
    Keys of other tools are let through; the keys this library reads must have their type."""
    if type(value) is not dict:
        raise TrajectoryError(f"{path}: message {index + 1} is {_json_type(value)}, not an object")
    nested = False
    for key, v in value.items():
        shape = _SHAPES.get(key)
        if shape is not None and type(v) not in shape:
            raise TrajectoryError(
                f"{path}: message {index + 1}: {key!r} is {_json_type(v)}, not {_wanted(shape)}"
            )
        nested = nested or type(v) is dict or type(v) is list
    if value.get("role") not in _ROLES:
        raise TrajectoryError(
            f"{path}: message {index + 1} has the role {value.get('role')!r:.40}; "
            f"expected one of {', '.join(sorted(_ROLES))}"
        )
    if nested:
        _nested(path, value, index)
    message = message_from_json(value)
    if message is not None:
        each(message, t)


def _nested(path: Path, value: dict[str, JSON], index: int) -> None:
    """The lists and objects of a message: usage numbers, text parts, tool calls, and
    no nesting deeper than ``MAX_DEPTH``."""
    where = f"{path}: message {index + 1}"
    deep = False
    for key, v in value.items():
        if key == "usage" and type(v) is dict:
            deep = _usage_numbers(where, v) or deep
        elif type(v) is dict or type(v) is list:
            deep = True
    content = value.get("content")
    if isinstance(content, list) and not all(
        isinstance(p, dict) and isinstance(p.get("text", ""), str) for p in content
    ):
        raise TrajectoryError(f"{where}: 'content' is a list, but not of text parts")
    calls = value.get("tool_calls")
    if isinstance(calls, list) and not all(_is_call(c) for c in calls):
        raise TrajectoryError(f"{where}: 'tool_calls' is not a list of tool calls")
    if deep:
        _shallow(path, f"message {index + 1}", value)


def _usage_numbers(where: str, usage: dict[str, JSON]) -> bool:
    """Refuse a usage record whose counts are not numbers; True if it nests further."""
    deep = False
    for name, n in usage.items():
        if type(n) in _NUMBER:
            continue
        if name in _USAGE:
            raise TrajectoryError(f"{where}: usage {name!r} is {_json_type(n)}, not a number")
        deep = deep or type(n) is dict or type(n) is list
    return deep


_USAGE = frozenset(("prompt_tokens", "completion_tokens", "cost", "calls", "cost_unknown_calls"))


def _wanted(shape: frozenset[type]) -> str:
    names = {str: "text", int: "a whole number", list: "a list", dict: "an object"}
    return " or ".join(sorted(names[t] for t in shape if t in names))


def _is_call(call: JSON) -> bool:
    if not isinstance(call, dict):
        return False
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(call.get("id", ""), str | None):
        return False
    return isinstance(function.get("name", ""), str | None) and isinstance(
        function.get("arguments", ""), str | dict | None
    )


# --- the streaming record --------------------------------------------------------------


def _from_jsonl(path: Path, raw: BinaryIO, each: OnMessage, limit: int) -> Trajectory:
    """Line by line; only the last line may be cut short (a killed process), and only
    when no newline ends it."""
    fmt: str | None = None
    info: dict[str, JSON] = {}
    outcome: str | None = None
    stats: dict[str, JSON] = {}
    count, read = 0, 0
    for number, line in enumerate(raw, 1):
        read += len(line)
        if read > limit:
            raise TrajectoryTooLarge(str(path), read, limit)
        try:
            record = _DECODER.decode(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if not line.endswith(b"\n"):
                break  # the line in flight when the process died
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else f"not JSON ({exc.msg})"
            raise TrajectoryError(f"{path}: line {number} is {why}") from None
        except _Duplicate as exc:
            raise TrajectoryError(
                f"{path}: line {number} repeats the key {exc.args[0]!r}"
            ) from None
        if not isinstance(record, dict):
            raise TrajectoryError(f"{path}: line {number} is {_json_type(record)}, not a record")
        kind = record.get("type")
        where = Path(f"{path}: line {number}")
        if fmt is None and kind != "start":
            raise TrajectoryError(f"{path} has no start record (line {number} is {kind!r:.40})")
        if kind == "start":
            if fmt is not None:
                raise TrajectoryError(f"{path}: line {number} is a second start record")
            fmt = _text(where, record, "format") or ""
            info = _object(where, record, "info")
            if not fmt:
                raise TrajectoryError(f"{path}: the start record names no format")
        elif kind == "message":
            t = record.get("t")
            _hand(
                path,
                record.get("message"),
                count,
                each,
                float(t) if isinstance(t, int | float) and not isinstance(t, bool) else 0.0,
            )
            count += 1
        elif kind == "end":
            outcome = _text(where, record, "outcome")
            stats = _object(where, record, "stats")
    if fmt is None:
        raise TrajectoryError(f"{path} has no start record")
    return Trajectory((), outcome, fmt, path, info, stats)
