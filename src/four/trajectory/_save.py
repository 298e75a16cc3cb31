"""emit: trajectories written as the run goes, then sealed as one JSON document."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from four import _arguments as arguments
from four._checked import checked
from four._outcomes import Outcome
from four._types import JSON, NO_USAGE, Assistant, Checked, Message, RunInfo, RunStats
from four.trajectory._driver import this_driver
from four.trajectory._durable import WRITE_FLAGS, write_all, write_atomic, write_atomic_async
from four.trajectory._record import message_json, usage_json
from four.trajectory._seal import ALGORITHM, Chain, canonical_text, encode_parts, verdict_facts
from four.trajectory._sign import SigningError, SigningKey

FORMAT = "four.trajectory/1"


@dataclass(frozen=True, slots=True)
class TrajectoryWriter(Checked):
    """The emit made by ``save_trajectory``. One writer may serve many runs at once."""

    output_dir: Path
    signing_key: SigningKey | None = None

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> Path:
        """Save a finished history with no streaming record (plain emit use)."""
        now = time.time()
        info = RunInfo({}, 0, 0, now)
        sink = self.open(info)
        for message in messages:
            sink.append(message)
        return sink.close(messages, outcome, RunStats(0, NO_USAGE, now, now))

    def open(self, info: RunInfo, /) -> TrajectorySink:
        return TrajectorySink(self.output_dir, info, self.signing_key)


class TrajectorySink:
    """One run's files: ``<stem>.jsonl`` grows a line per message (written through at
    once), and ``<stem>.json`` appears whole when the run ends. Each stream record
    carries the seal's running digest (and, with a key, its signature); the document
    carries the final one (see ``four.trajectory._seal``).

    The run's head names its driver (host, pid and the pid's start time); ``beat()``
    adds a heartbeat record between messages (a timer thread of the driver may call it
    while a step runs long), so a reader can tell a live run from a dead one."""

    __slots__ = (
        "_chain",
        "_dir",
        "_fd",
        "_head",
        "_info",
        "_info_parts",
        "_info_text",
        "_key",
        "_lock",
        "_messages",
        "_pending",
        "_seal",
        "_size",
        "_started",
        "_stem",
        "_times",
        "_written",
        "failure",
    )

    @checked
    def __init__(self, directory: Path, info: RunInfo, key: SigningKey | None = None) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(info.started_at))
        self._stem = f"{stamp}-{os.urandom(6).hex()}"  # unique without looking at the folder
        self._dir = directory
        self._started = info.started_at
        self._info = _info_json(info)
        self._info["driver"] = this_driver().to_json()
        self._key = key
        self._lock = threading.Lock()  # a heartbeat from another thread comes between lines
        self._seal: dict[str, JSON] = {"algorithm": ALGORITHM}
        if key is not None:
            self._seal["signer"] = key.public
        # Each value is encoded once (canonical JSON), for its links, lines and document.
        # Info's parts wait for the model's first reply: thousands of runs of a batch
        # start together and end together, and between the two the loop has time.
        self._info_text = canonical_text(self._info)
        self._info_parts: list[tuple[str, str]] | None = None
        self._chain = Chain()
        self._chain.start_encoded(FORMAT, self._seal, self._info_text)
        self._times: list[float] | None = []  # each message's time; None: not known
        self._messages: list[str] = []  # each message's canonical JSON, for the document
        self._fd = _create(directory, f"{self._stem}.jsonl")
        # Written with the first message: a run's first messages follow at once.
        start = {
            "type": '"start"',
            "format": canonical_text(FORMAT),
            "info": self._info_text,
            "seal": canonical_text(self._seal),
        }
        self._head = self._line(start, self._chain)
        self.failure: OSError | None = None
        """Why the stream stopped being written (a full disk...); its lines are kept in
        memory from then on, and written when the run ends."""
        self._size = 0  # bytes of whole lines in the stream
        self._written = 0  # messages in the stream
        self._pending: list[bytes] = []  # lines not written, once it failed

    @classmethod
    def reopen(
        cls,
        jsonl: Path,
        info: dict[str, JSON],
        seal: dict[str, JSON],
        chain: Chain,
        messages: list[str],
        times: list[float],
        size: int,
        key: SigningKey | None,
    ) -> TrajectorySink:
        """The sink of a stream whose driver is gone (``seal_stream``): ``chain``,
        ``messages`` and ``times`` were read off its first ``size`` bytes (its whole
        lines; a last line cut short is dropped when the end record is written)."""
        sink = cls.__new__(cls)
        started = info.get("started_at")
        sink._stem = jsonl.name.removesuffix(".jsonl")
        sink._dir = jsonl.parent
        sink._started = float(started) if isinstance(started, int | float) else time.time()
        sink._info, sink._info_text, sink._info_parts = info, canonical_text(info), None
        sink._key, sink._lock, sink._seal, sink._chain = key, threading.Lock(), seal, chain
        sink._times, sink._messages = times, messages
        sink._fd = os.open(jsonl, WRITE_FLAGS | os.O_APPEND)
        sink._head, sink.failure, sink._pending = "", None, []
        sink._size, sink._written = size, len(messages)
        return sink

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
        with self._lock:
            self._append(message)

    def beat(self) -> None:
        """Write a heartbeat record (its time, and a digest off the running one: see
        ``four.trajectory._seal``); nothing before the first message or after the end,
        or once the stream failed. Safe to call from another thread."""
        with self._lock:
            if self._head or self._fd < 0 or self.failure is not None:
                return
            t = repr(round(time.time() - self._started, 6))
            digest = self._chain.beat(t)
            record = f'{{"type": "beat", "t": {t}, "digest": "{digest.hex()}"'
            if self._key is not None:
                record += f', "signature": "{self._key.sign(digest)}"'
            data = f"{record}}}\n".encode()
            try:
                write_all(self._fd, data)
            except OSError as exc:
                self._failed(exc, [])
                return
            self._size += len(data)

    def _append(self, message: Message, /) -> None:
        t = repr(round(time.time() - self._started, 6))  # to the microsecond, as JSON
        text = canonical_text(message_json(message))  # encoded once: link, line, document
        label = f"messages[{len(self._messages)}]"
        digest = self._chain.link_encoded(label, f'"{label}"', f'{{"message":{text},"t":{t}}}')
        if self._times is not None:
            self._times.append(float(t))
        self._messages.append(text)
        line = f'{{"type": "message", "t": {t}, "message": {text}, "digest": "{digest}"'
        if self._key is not None:
            line += f', "signature": "{self._key.sign(self._chain.digest)}"'
        data = f"{self._head}{line}}}\n".encode()
        self._head = ""
        if self._info_parts is None and isinstance(message, Assistant):
            self._info_parts = self._parts_of_info()
        if self.failure is not None:
            self._pending.append(data)  # for the end
            return
        try:  # unbuffered: a killed process keeps every line written
            write_all(self._fd, data)
        except OSError as exc:  # the disk is full...: kept, and the run decides
            self._failed(exc, [data])
            return
        self._size += len(data)
        self._written += 1

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> Path:
        stats_json = _stats_json(stats)
        data = self._document(messages, outcome, stats_json)
        try:
            write_atomic(self._dir, f"{self._stem}.json", data)
        except OSError as exc:
            raise TrajectoryNotSaved(self, exc, len(self._messages)) from exc
        return _remember(self.path, outcome, stats_json)

    async def aclose(
        self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /
    ) -> Path:
        """``close`` for ``arun``: the document is made on the event loop; the waits on
        a disk happen in a thread of the process that takes all the documents waiting."""
        stats_json = _stats_json(stats)
        data = self._document(messages, outcome, stats_json)
        try:
            await write_atomic_async(self._dir, f"{self._stem}.json", data)
        except OSError as exc:
            raise TrajectoryNotSaved(self, exc, len(self._messages)) from exc
        return _remember(self.path, outcome, stats_json)

    def _document(
        self, messages: Sequence[Message], outcome: Outcome, stats_json: dict[str, JSON]
    ) -> bytes:
        """End the stream, and render the sealed document."""
        detail = _outcome_json(outcome)
        stream = f"{self._stem}.jsonl"
        done = self._info_parts  # info's parts (then these), once the model has replied
        found = list(done) if done is not None else self._parts_of_info()
        end = {  # the values encoded once: the stream's end, the links, the document
            "type": '"end"',
            "outcome": canonical_text(outcome.text),
            "outcome_detail": encode_parts("outcome_detail", detail, 1, found),
            "stats": encode_parts("stats", stats_json, 2, found),
            "stream": canonical_text(stream),
        }
        shorts = [short for _, short in found]
        ended = self._ended(end, len(self._messages), stats_json)
        with self._lock:  # no heartbeat from now on
            fd, self._fd = self._fd, -1
        if fd >= 0:
            try:
                self._end_stream(fd, (self._head + self._line(end, ended)).encode())
            finally:
                os.close(fd)
        if len(self._messages) != len(messages):  # a plain-emit history, or one edited after
            encoded = [message_json(m) for m in messages]
            self._messages = [canonical_text(m) for m in encoded]
            self._times = None
            self._chain = Chain()
            self._chain.start_encoded(FORMAT, self._seal, self._info_text)
            for i, data in enumerate(encoded):
                self._chain.message(i, None, data)
            ended = self._ended(end, len(messages), stats_json)
        document = {  # the fields as JSON text, in the document's order
            "format": canonical_text(FORMAT),
            "outcome": end["outcome"],
            "outcome_detail": end["outcome_detail"],
            "info": self._info_text,
            "stats": end["stats"],
            "stream": end["stream"],
            "timestamps": canonical_text(cast(JSON, self._times or [])),
        }
        links = list(ended.links)
        ended.close(shorts)
        seal = {
            **self._seal,
            "messages": len(self._messages),
            "receipts": verdict_facts(stats_json)[0],
            "links": cast(JSON, links),
            "parts": cast(JSON, shorts),
            "digest": ended.digest.hex(),
        }
        if self._key is not None:
            seal["signature"] = self._key.sign(ended.digest)
        document["seal"] = canonical_text(seal)
        return _render(document, self._messages).encode()

    def _parts_of_info(self) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        encode_parts("info", self._info, 2, found)
        return found

    def _ended(self, end: dict[str, str], messages: int, stats: JSON) -> Chain:
        """The chain so far, ended with the end record's (encoded) values."""
        chain = self._chain.copy()
        chain.end_encoded(
            end["outcome"], end["outcome_detail"], end["stats"], end["stream"], messages,
            verdict_facts(stats),
        )  # fmt: skip
        return chain

    def _line(self, record: dict[str, str], chain: Chain) -> str:
        """A stream record (its fields as JSON text) with the chain's digest after it,
        signed with a key."""
        fields = [f'"{name}": {text}' for name, text in record.items()]
        fields.append(f'"digest": "{chain.digest.hex()}"')
        if self._key is not None:
            fields.append(f'"signature": "{self._key.sign(chain.digest)}"')
        return "{" + ", ".join(fields) + "}\n"

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
            write_all(fd, rest)
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
        fresh = os.open(self.jsonl, WRITE_FLAGS | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666)
        try:
            write_all(fresh, data)
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


def save_trajectory(
    output_dir: str | os.PathLike[str] = "trajectories",
    *,
    signing_key: str | os.PathLike[str] | SigningKey | None = None,
) -> TrajectoryWriter:
    """The standard emit: a JSON Lines log while the run goes, one JSON document at its end,
    both under one seal (a digest chained over the whole record; ``four.audit`` checks it).

    Each run gets its own ``<UTC time>-<random id>`` name, so many runs can share a
    folder. A killed process leaves the ``.jsonl`` with every completed message.
    ``signing_key`` (a private key file made by ``four keygen``, or a ``SigningKey``;
    needs ``four-loop[sign]``) signs the seal, so that a holder of the public key can
    tell the record from a forged one.

    >>> emit = save_trajectory("/tmp/four-doc-runs")
    >>> emit.output_dir.name
    'four-doc-runs'
    """
    arguments.path("save_trajectory", "output_dir", output_dir)
    path = output_dir if isinstance(output_dir, Path) else Path(output_dir)  # not parsed again
    key = signing_key
    if key is not None and not isinstance(key, SigningKey):
        try:
            key = SigningKey.load(key)
        except SigningError as exc:
            raise SigningError(f"signing_key: {exc}") from None
    return TrajectoryWriter(path.expanduser().absolute(), key)


REMEMBERED = 1024
"""How many of this process's latest seals ``sealed_here`` keeps."""
_sealed: dict[Path, tuple[str, dict[str, JSON]]] = {}


def sealed_here(path: Path) -> tuple[str, dict[str, JSON]] | None:
    """The outcome and stats of the document this process sealed at ``path`` lately
    (told once), or None: a batch learns how its run ended without reading back the
    document just written (ten thousand runs ending together read less).

    >>> sealed_here(Path("/nowhere.json")) is None
    True
    """
    return _sealed.pop(path, None)


def _remember(path: Path, outcome: Outcome, stats: dict[str, JSON]) -> Path:
    if len(_sealed) >= REMEMBERED:  # the oldest goes (a batch asks at once)
        _sealed.pop(next(iter(_sealed), path), None)
    _sealed[path] = (outcome.text, stats)
    return path


def _render(document: dict[str, str], messages: list[str]) -> str:
    """One key, and one message, per line (all already encoded): readable, and cheap for
    a reader that wants only the keys before the messages (``indent=`` would put every
    value on its own line)."""
    lines = [f'"{k}": {v}' for k, v in document.items()]
    body = ",\n".join(messages)
    lines.append(f'"messages": [\n{body}\n]')
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _create(folder: Path, name: str) -> int:
    """Create the run's ``.jsonl`` (never an existing file), making its folder if needed."""
    flags = WRITE_FLAGS | os.O_CREAT | os.O_EXCL | os.O_APPEND
    try:
        return os.open(folder / name, flags, 0o666)
    except FileNotFoundError:  # the folder is made on first use, not checked every run
        folder.mkdir(parents=True, exist_ok=True)
        return os.open(folder / name, flags, 0o666)


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
        "usage": usage_json(stats.usage),
        "started_at": stats.started_at,
        "ended_at": stats.ended_at,
        "wall_time": round(stats.wall_time, 6),
        **stats.extra,
    }
