"""The sender in a process of its own: what ``otel_watch()`` and ``four run --otel`` use.

Making, counting and encoding spans in the run's process would cost its CPU and hold its
lock (bench/README.md, "otel"); so it only notes each step (``_facts``) and a thread
pickles the notes down a pipe to a child (``main`` here), whose ``Sender`` does the rest.
The child starts with the first span, ends when the pipe closes, ignores the terminal's
interrupt, and says its counts back on its stdout as JSON lines (docs/otel.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from four.otel._facts import count, records
from four.otel._send import AT_EXIT, BATCH, Counts, Made, make_sender

log = logging.getLogger("four.otel")

_FRAME = struct.Struct(">I")
_WIDE = 14  # values a record takes at most (``_facts.WIDTHS``): the queue's bound
_TAKE = 4096 * _WIDE  # values a frame takes at most


class _Counted:
    """The ``counts`` a watch gives with a model call's facts: counted by the child."""

    def chat(self, span: object, /) -> None:
        """Nothing here: the child counts with its own metrics."""


COUNTED = _Counted()


class Sidecar:
    """A ``Sender``'s face (``put``, ``flush``, ``close``, ``where``, ``sent``,
    ``dropped``, ``failed``, ``warned``) to a sender in a child process. ``cpu``: the
    child's CPU seconds, as it last said."""

    def __init__(self, url: str, max_queue: int, delay: float) -> None:
        self.where = url
        self._max, self._delay = max_queue * _WIDE, delay  # (in values)
        # the facts put, one flat list of values (``_facts.records``): a step leaves no
        # object behind on the run's thread (its tuple is taken apart at once)
        self._queue: list[object] = []
        self._lock = threading.Condition()
        self._process: subprocess.Popen[bytes] | None = None
        self._writer: threading.Thread | None = None
        self._asked = self._acked = 0  # flushes asked of the child, and answered
        self._flushes: list[tuple[int, float]] = []  # asked, not yet written down the pipe
        self._closed = False
        self._open = False  # the child started, not closed nor gone: put's usual way
        self._gone = False  # the child is not there (never started, or ended)
        self._lost_here = self._dropped_here = 0
        self._handed = 0  # spans taken for the child (those lost on the way taken back)
        self._child = (0, 0, 0)  # sent, failed, dropped, as the child last said
        self.cpu = 0.0
        self.warned = False

    @property
    def sent(self) -> int:
        return self._child[0]

    @property
    def failed(self) -> int:
        return self._child[1] + self._lost_here

    @failed.setter
    def failed(self, value: int) -> None:
        self._lost_here += value - self.failed

    @property
    def dropped(self) -> int:
        return self._child[2] + self._dropped_here

    @property
    def encodes(self) -> bool:
        return True

    def put(self, span: Made, counts: Counts | None = None) -> None:
        """Queue ``span`` (or its facts) for the child; never waits. (A model call's
        facts say themselves whether it counts in the metrics: ``counts`` is not read.)"""
        queue = self._queue
        if self._open and len(queue) < self._max:
            queue += span if type(span) is tuple else ("span", span)  # no lock: atomic
            return
        with self._lock:
            if self._writer is None and not (self._closed or self._gone):
                self._start()  # once: a child that could not start is not tried again
            if self._gone or self._closed or len(queue) >= self._max:
                self._dropped_here += 1
                gone = self._gone and not self._closed
                self._warn("no sender's process" if gone else "the queue is full")
                return
            queue += span if type(span) is tuple else ("span", span)

    def flush(self, timeout: float) -> bool:
        """Wait until the child has answered for every span put so far (sent or lost),
        ``timeout`` seconds at most; whether it has."""
        with self._lock:
            if self._writer is None or self._gone:
                return not self._queue or self._gone  # (the child's end counted what it lost)
            if not self._queue and self._handed == sum(self._child):
                return True  # the child has answered for all
            self._asked += 1
            asked = self._asked
            self._flushes.append((asked, timeout))
            self._lock.notify_all()
            return self._lock.wait_for(lambda: self._acked >= asked or self._gone, timeout)

    def close(self, timeout: float = AT_EXIT) -> None:
        """Flush, then close the pipe: the child ends (``timeout`` seconds at most, then
        it is killed). What comes later is dropped."""
        self.flush(timeout)
        with self._lock:
            self._closed, self._open = True, False
            self._lock.notify_all()
            writer, process = self._writer, self._process
        if writer is not None:
            writer.join(timeout)
        if process is not None:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    # --- the run's process: the pipe's two ends -------------------------------------

    def _start(self) -> None:
        """The child, and the threads that write to it and read its counts."""
        import four

        here = str(Path(four.__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", "from four.otel._sidecar import main; main()", self.where],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                start_new_session=True,  # the terminal's ^C is the run's, not the child's
            )  # fmt: skip
        except (OSError, ValueError) as exc:  # no interpreter to start (embedded...)
            self._gone = True
            self._warn(f"the sender's process could not start ({exc})")
            return
        self._process = process
        self._writer = threading.Thread(target=self._write, name="four-otel", daemon=True)
        reader = threading.Thread(target=self._read, name="four-otel-said", daemon=True)
        self._open = True  # (under the lock: the child's end, if at once, comes after)
        self._writer.start()
        reader.start()

    def _write(self) -> None:
        process = self._process
        assert process is not None and process.stdin is not None
        pipe = process.stdin
        while True:
            with self._lock:
                self._lock.wait_for(
                    lambda: len(self._queue) >= BATCH * _WIDE or self._flushes or self._closed,
                    self._delay,
                )
                queue = self._queue
                # whole records (a put adds its values in one step, under the GIL), as
                # many as fit in a frame
                spans, end = count(queue, _TAKE)
                taken = queue[:end]
                del queue[:end]
                self._handed += spans  # on their way: the child will answer for them
                flushes = self._flushes if not queue else []  # after all that was put
                if flushes:
                    self._flushes = []
                ending = self._closed and not queue
            if taken:
                self._send(pipe, ("put", taken), spans)
            for asked, timeout in flushes:
                self._send(pipe, ("flush", asked, timeout), 0)
            if ending:
                with contextlib.suppress(OSError):
                    pipe.close()
                return

    def _send(self, pipe: IO[bytes], frame: tuple[object, ...], spans: int) -> None:
        """One frame down the pipe (its spans lost, counted, if it cannot go)."""
        try:
            data = pickle.dumps(frame, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a value that does not pickle: a bug, counted
            with self._lock:
                self._lost_here, self._handed = self._lost_here + spans, self._handed - spans
            log.debug("four: otel: spans not sent: %s", exc)
            return
        try:
            pipe.write(_FRAME.pack(len(data)) + data)
            pipe.flush()
        except (OSError, ValueError):  # the child is gone
            self._ended()

    def _read(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        with process.stdout:  # closed at its end
            self._hear(process.stdout)
        self._ended()

    def _hear(self, lines: IO[bytes]) -> None:
        """The child's counts, as it says them; until it ends."""
        for line in lines:
            try:
                said = json.loads(line)
                counts = (int(said["sent"]), int(said["failed"]), int(said["dropped"]))
            except (ValueError, KeyError, TypeError):
                continue
            why = said.get("why")
            if isinstance(why, str):
                self._warn(why)  # before the flush it answers returns
            with self._lock:
                self._child = counts
                self.cpu = max(self.cpu, float(said.get("cpu") or 0.0))
                ack = said.get("ack")
                if isinstance(ack, int):
                    self._acked = max(self._acked, ack)
                self._lock.notify_all()

    def _ended(self) -> None:
        """The child is gone: what it was given and did not answer for, and what waits
        for it, is lost (counted); what comes later is dropped."""
        with self._lock:
            if self._gone:
                return
            self._gone, self._open = True, False
            self._lost_here += count(self._queue)[0] + self._handed - sum(self._child)
            self._handed = sum(self._child)
            self._queue.clear()
            closed = self._closed
            self._lock.notify_all()
        if not closed:
            self._warn("the sender's process ended")

    def _warn(self, why: str) -> None:
        if not self.warned:
            self.warned = True
            log.warning(
                "four: otel: spans lost: %s by %s (the runs go on; later losses are counted, "
                "not said)", why, self.where,
            )  # fmt: skip


# --- the child ----------------------------------------------------------------------


def serve(url: str, source: IO[bytes], said: IO[bytes]) -> None:
    """The child's work: frames from ``source`` to a ``Sender`` to ``url``, its counts
    said on ``said``; until ``source`` ends, then what it holds is sent."""
    from four.otel._metrics import metrics

    out = make_sender(url)
    measures = metrics(url)
    lock = threading.Lock()

    def tell(ack: int | None = None) -> None:
        with lock:  # the counts read and said in one order: each line says no less
            found: dict[str, object] = {
                "sent": out.sent, "failed": out.failed, "dropped": out.dropped,
                "why": out.said, "cpu": time.process_time(),
            }  # fmt: skip
            if ack is not None:
                found["ack"] = ack
            with contextlib.suppress(OSError, ValueError):
                said.write(json.dumps(found).encode() + b"\n")
                said.flush()

    out.told = tell
    while True:
        head = source.read(_FRAME.size)
        if len(head) < _FRAME.size:
            break
        (size,) = _FRAME.unpack(head)
        data = source.read(size)
        if len(data) < size:
            break
        frame = pickle.loads(data)
        if frame[0] == "put":
            for item in records(frame[1]):
                counted = isinstance(item, tuple) and item[0] == "chat" and item[1][6]
                out.put(item, measures if counted else None)
        elif frame[0] == "flush":
            out.flush(float(frame[2]))
            tell(int(frame[1]))
    out.close(AT_EXIT)  # the metrics' last export: the SDK's, as the process exits
    tell()


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet = logging.getLogger("four.otel")  # the run's process says what is lost, once
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    serve(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
