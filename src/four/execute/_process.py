"""Run one process to completion with a deadline, reading its output into a bounded buffer.

The process starts in a new session (so its process group holds everything it starts),
with stdin closed and stderr merged into stdout. Its exit is watched through a pidfd,
so a background child that keeps the output pipe open cannot stall the read.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from four.execute._interrupt import running, stopped
from four.execute._kill import MARK, kill_group, kill_marked
from four.execute._output import OutputBuffer, Ran

Process = subprocess.Popen[bytes]

CHUNK = 1 << 16
LINGER = 0.25
"""Seconds to wait for the output pipe to close after the command's own process exits."""
DRAIN = 1.0
"""Seconds to wait for the pipe to close after a kill (an escaped process may hold it)."""

HELD_OPEN = (
    "Background processes still writing to the output when the command ended were "
    "stopped. To keep one running, redirect its output: cmd > log.txt 2>&1 &"
)


def pipe_holders(fd: int) -> list[int]:
    """Other processes that hold the pipe read through ``fd`` (its write end, then).

    The pipe was made for one command, so every holder is that command's: whatever
    process group or session it moved to. Linux only (it reads /proc); elsewhere, or
    when /proc cannot be read, returns [].
    """
    target = f"pipe:[{os.fstat(fd).st_ino}]"
    found: list[int] = []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if pid == os.getpid():  # we hold the read end
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{n}") == target for n in fds):
                found.append(pid)
        except OSError:
            continue
    return found


def run_captured(
    argv: Sequence[str],
    output: OutputBuffer,
    timeout: float,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    on_timeout: Callable[[subprocess.Popen[bytes]], None] | None = None,
    mark: str | None = None,
) -> Ran:
    """Run ``argv`` and read its output into ``output`` until it ends or ``timeout`` passes.

    With ``mark``, the command's environment gets ``FOUR_RUN=mark`` too (after ``env``).
    At the timeout ``on_timeout`` runs first (a container kills inside itself), then the
    process group is killed, and with ``mark`` every process tagged ``FOUR_RUN=mark``.
    When the process exits but children still hold the output open, after ``LINGER``
    seconds those children are killed and a note says so.
    Raises OSError when the process cannot start (no such program, no such cwd).
    """
    start = time.monotonic()
    if stopped():  # the run was interrupted (four.batch): the command ends as killed, unstarted
        output.finish()
        return Ran(-signal.SIGKILL, output, 0.0, False, timeout)
    proc, fd = _spawn(argv, cwd, env, mark)
    try:
        pidfd = os.pidfd_open(proc.pid)
    except BaseException:  # out of descriptors: nothing may run unwatched, or unreaped
        os.close(fd)
        kill_group(proc.pid)
        if mark is not None:
            kill_marked(mark)
        proc.wait()
        raise
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    deadline = start + timeout
    exited_at: float | None = None
    timed_out = False
    notes: list[str] = []
    completed = False
    # Under a supervisor (four.batch), another thread may kill this command.
    command = running(proc.pid, mark, None if on_timeout is None else _bind(on_timeout, proc))
    try:
        while True:
            now = time.monotonic()
            until = deadline if exited_at is None else min(deadline, exited_at + LINGER)
            if now >= until:
                if exited_at is None:
                    timed_out = True
                    _timed_out(proc, on_timeout, mark)
                else:
                    notes.append(HELD_OPEN)
                    _stop_holders(proc.pid, fd)
                _drain(fd, output, DRAIN)
                break
            more, exited = _pump(poller, fd, pidfd, output, until - now)
            if exited and exited_at is None:
                poller.unregister(pidfd)
                exited_at = time.monotonic()
            if not more:
                break  # end of output
        if exited_at is None and not timed_out:
            # The output closed before the exit was seen: wait for it on the pidfd
            # (Popen.wait with a timeout polls with sleeps, a millisecond or more too late).
            poller.unregister(fd)
            if not poller.poll(_ms(deadline - time.monotonic())):
                timed_out = True
                _timed_out(proc, on_timeout, mark)
        completed = True
    finally:
        os.close(pidfd)
        os.close(fd)
        if not completed:  # an exception (Ctrl-C): leave nothing running
            kill_group(proc.pid)
            if mark is not None:
                kill_marked(mark)
        if command is not None:
            command.release()
        returncode = proc.wait()
    output.finish()
    return Ran(
        None if timed_out else returncode,
        output,
        time.monotonic() - start,
        timed_out,
        timeout,
        tuple(notes),
    )


def _spawn(
    argv: Sequence[str], cwd: str | None, env: Mapping[str, str] | None, mark: str | None
) -> tuple[Process, int]:
    """Start ``argv`` in a new session, stdin closed, stdout and stderr on a fresh pipe,
    its environment ``env`` and ``FOUR_RUN=mark``: the process and the pipe's read end.

    The pipe is ours, not Popen's: no file object, a non-blocking read end.
    """
    if mark is not None:
        env = {**(os.environ if env is None else env), MARK: mark}
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    os.set_blocking(read_fd, False)
    return proc, read_fd


def _ms(seconds: float) -> int:
    """A poll timeout in milliseconds, rounded up (never 0 for time left, never negative)."""
    return max(0, math.ceil(seconds * 1000))


def _bind(
    on_timeout: Callable[[subprocess.Popen[bytes]], None], proc: Process
) -> Callable[[], None]:
    return lambda: on_timeout(proc)


def _timed_out(
    proc: Process,
    on_timeout: Callable[[subprocess.Popen[bytes]], None] | None,
    mark: str | None,
) -> None:
    if on_timeout is not None:
        _bind(on_timeout, proc)()
    kill_group(proc.pid)
    if mark is not None:
        kill_marked(mark)


def _stop_holders(pgid: int, fd: int) -> None:
    """Kill the processes that keep the pipe open (the whole group if none is found)."""
    holders = pipe_holders(fd)
    for pid in holders:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    if not holders:
        kill_group(pgid)


def _pump(
    poller: select.poll, fd: int, pidfd: int, output: OutputBuffer, wait: float
) -> tuple[bool, bool]:
    """Wait up to ``wait`` s and read what is there: (output may go on, the process exited).

    One poll reports both: a command that prints little and exits costs one wait."""
    more, exited = True, False
    for ready, _ in poller.poll(_ms(wait)):  # a loop, not any() and all() of generators
        if ready == pidfd:
            exited = True
        elif ready == fd:
            more = _read(fd, output)
    return more, exited


def _drain(fd: int, output: OutputBuffer, wait: float) -> None:
    """Read what is left in the pipe until it closes or ``wait`` seconds pass."""
    end = time.monotonic() + wait
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while (left := end - time.monotonic()) > 0:
        if poller.poll(_ms(left)) and not _read(fd, output):
            return


def _read(fd: int, output: OutputBuffer) -> bool:
    """Read what the pipe holds into ``output``: False once the output has ended."""
    try:
        data = os.read(fd, CHUNK)
    except BlockingIOError:
        return True
    if not data:
        return False
    output.feed(data)
    return True
