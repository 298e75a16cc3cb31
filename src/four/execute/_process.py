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
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from four.execute._interrupt import running, stopped
from four.execute._output import OutputBuffer, Ran
from four.execute._spawn import Spawned, spawn

Process = subprocess.Popen[bytes] | Spawned
"""A running command: what ``run_captured`` needs of it is its pid and ``wait()``."""

CHUNK = 1 << 16
LINGER = 0.25
"""Seconds to wait for the output pipe to close after the command's own process exits."""
DRAIN = 1.0
"""Seconds to wait for the pipe to close after a kill (an escaped process may hold it)."""

HELD_OPEN = (
    "Background processes still writing to the output when the command ended were "
    "stopped. To keep one running, redirect its output: cmd > log.txt 2>&1 &"
)


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


MARK = "FOUR_RUN"
"""The variable that tags every process of a command (it is inherited by all it starts)."""


def new_mark() -> str:
    """A fresh random value for ``MARK``."""
    return os.urandom(8).hex()


def kill_marked(mark: str) -> None:
    """SIGKILL every process whose environment has ``FOUR_RUN=mark``.

    This reaches what a process group does not: children that called setsid or
    daemonised. Linux only (it reads /proc/*/environ); elsewhere it does nothing.
    """
    entry = f"{MARK}={mark}".encode()
    for _ in range(2):  # a second pass for children forked during the first
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return
        for pid in pids:
            if pid == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if entry not in f.read().split(b"\0"):
                        continue
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                continue


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
    proc, fd = _spawn(argv, cwd, env, mark, popen=on_timeout is not None)
    # Few system calls per command: under a thread pool each one hands the GIL over.
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
    argv: Sequence[str],
    cwd: str | None,
    env: Mapping[str, str] | None,
    mark: str | None,
    *,
    popen: bool,
) -> tuple[Process, int]:
    """Start ``argv`` in a new session, stdin closed, stdout and stderr on a fresh pipe,
    its environment ``env`` and ``FOUR_RUN=mark``: the process and the pipe's read end.

    The pipe is ours, not Popen's (no file object: fewer system calls), and the program
    is looked up on the command's PATH once per PATH, not by a failed exec in each of
    its folders before the one that has it. It is started by ``posix_spawn`` when it can
    be (see ``_spawn.spawn``), else (or with ``popen``: a caller that wants the Popen) by
    ``Popen``.
    """
    args = list(argv)
    read_fd, write_fd = os.pipe()
    try:
        executable = _lookup(args[0], env)
        path = executable if executable is not None or os.sep not in args[0] else args[0]
        proc: Process | None = None
        if path is not None and not popen:
            proc = spawn(path, args, env, write_fd, cwd, None if mark is None else (MARK, mark))
        if proc is None:  # not spawned, or it could not start: Popen raises the usual error
            if mark is not None:
                env = {**(os.environ if env is None else env), MARK: mark}
            try:
                proc = _popen(args, executable, write_fd, cwd, env)
            except FileNotFoundError:
                if executable is None:
                    raise
                _found.clear()  # the program moved: look it up again
                proc = _popen(args, None, write_fd, cwd, env)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    os.set_blocking(read_fd, False)
    return proc, read_fd


def _popen(
    args: list[str],
    executable: str | None,
    stdout: int,
    cwd: str | None,
    env: Mapping[str, str] | None,
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args,
        executable=executable,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        start_new_session=True,
        close_fds=True,
    )


_found: dict[tuple[str, str], str] = {}
"""Programs found on a PATH: (name, PATH) -> absolute path."""


def _lookup(name: str, env: Mapping[str, str] | None) -> str | None:
    """The absolute path of ``name`` on the command's PATH, or None to let exec search.

    Only a bare name on a PATH of absolute folders is looked up (a relative folder
    depends on the working folder); the answer is kept per PATH.
    """
    if os.sep in name:
        return None
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    key = (name, path)
    found = _found.get(key)
    if found is None:
        if not all(os.path.isabs(folder) for folder in path.split(os.pathsep)):
            return None
        found = shutil.which(name, path=path)
        if found is None:
            return None  # exec reports it, with the usual error
        if len(_found) > 64:
            _found.clear()
        _found[key] = found
    return found


def _ms(seconds: float) -> int:
    """A poll timeout in milliseconds, rounded up (never 0 for time left, never negative)."""
    return max(0, math.ceil(seconds * 1000))


def _bind(
    on_timeout: Callable[[subprocess.Popen[bytes]], None], proc: Process
) -> Callable[[], None]:
    assert isinstance(proc, subprocess.Popen)  # a caller with on_timeout gets a Popen
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
