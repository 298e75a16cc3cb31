"""Run one command to its end or its deadline, its output read into a bounded buffer.

Its exit is watched through a pidfd, so a background child holding the output pipe
cannot stall the read. The waiting is written once, through a ``Wait``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import select
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import IO

from four._coroutine import to_end
from four.execute._contain import Contained, nothing
from four.execute._interrupt import running, stopped
from four.execute._kill import kill_group, other_pids
from four.execute._launcher import Launched
from four.execute._output import OutputBuffer, Ran

Process = subprocess.Popen[bytes]
BLOCKED = "a blocking wait suspended"
Wait = Callable[[Sequence[int], float], Awaitable[list[int]]]
"""Wait up to some seconds for any of the descriptors to be readable: those that are."""

CHUNK = 1 << 16
LINGER = 0.25
"""Seconds to wait for the output pipe to close after the command's own process exits."""
DRAIN = 1.0
"""Seconds to wait for the pipe to close after a kill (an escaped process may hold it)."""

HELD_OPEN = (
    "Background processes still writing to the output when the command ended were "
    "stopped. To keep one running, redirect its output: cmd > log.txt 2>&1 &"
)


async def blocking(fds: Sequence[int], timeout: float) -> list[int]:
    """``Wait`` by poll(2), for a plain call: the coroutine never suspends."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    # In milliseconds, rounded up: never 0 for time left, never negative.
    return [fd for fd, _ in poller.poll(max(0, math.ceil(timeout * 1000)))]


async def awaited(fds: Sequence[int], timeout: float) -> list[int]:
    """``Wait`` on the running event loop: other tasks run meanwhile."""
    loop = asyncio.get_running_loop()
    ready: set[int] = set()  # all that one turn of the loop saw, as poll(2) gives them
    woken: asyncio.Future[None] = loop.create_future()

    def seen(fd: int) -> None:
        ready.add(fd)
        if not woken.done():
            woken.set_result(None)

    for fd in fds:
        loop.add_reader(fd, seen, fd)
    try:
        await asyncio.wait((woken,), timeout=max(0.0, timeout))
    finally:
        for fd in fds:
            loop.remove_reader(fd)
    return list(ready)


def read_some(fd: int) -> bytes | None:
    """What a non-blocking pipe holds: b"" at its end, None when nothing is there yet."""
    try:
        return os.read(fd, CHUNK)
    except BlockingIOError:
        return None


async def drain(fd: int, into: Callable[[bytes], object], seconds: float, wait: Wait) -> None:
    """Read what is left in the pipe into ``into`` until it closes or ``seconds`` pass."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if await wait([fd], left):
            data = read_some(fd)
            if data == b"":
                return
            if data:
                into(data)


class Popened:
    """A command ``spawn`` started: killed by process group, watched by pidfd (readable at exit)."""

    __slots__ = ("exit_fd", "pgid", "proc")

    def __init__(self, command: Contained, stdout: int) -> None:
        self.proc = spawn(command, subprocess.DEVNULL, stdout, subprocess.STDOUT)
        self.pgid = self.proc.pid
        try:
            self.exit_fd = os.pidfd_open(self.pgid)
        except BaseException:  # out of descriptors: nothing may run unwatched, or unreaped
            self.kill()
            self.proc.wait()
            raise

    def kill(self) -> None:
        kill_group(self.pgid)

    def wait(self) -> int:
        return self.proc.wait()

    def close(self) -> None:
        os.close(self.exit_fd)


Child = Popened | Launched
"""A started command as ``watching`` sees it: a Popen, or a launcher's."""


def run_captured(
    argv: Sequence[str],
    output: OutputBuffer,
    timeout: float,
    *,
    env: Mapping[str, str] | None = None,
    on_timeout: Callable[[], None] | None = None,
) -> Ran:
    """``watching`` ``argv`` run in a new session (stdin closed, stderr merged into stdout),
    waiting by blocking. Raises OSError when the process cannot start (no such program)."""
    given = dict(os.environ if env is None else env)
    start = functools.partial(Popened, Contained(list(argv), given, None, "", nothing, nothing))
    return to_end(watching(start, output, timeout, on_timeout, blocking), BLOCKED)


async def watching(
    start: Callable[[int], Child],
    output: OutputBuffer,
    timeout: float,
    on_timeout: Callable[[], None] | None,
    wait: Wait,
) -> Ran:
    """Start a command with ``start(stdout)`` and read its output into ``output`` until
    it ends or ``timeout`` passes.

    At the timeout ``on_timeout`` runs first (a container kills inside itself), then the
    child is killed with all it started. When the command's first process exits but
    others still hold the output open, after ``LINGER`` seconds those are killed and a
    note says so. Raises what ``start`` raises (OSError: it could not start); an
    exception or a cancellation while it waits kills the child with all it started.
    """
    begin = time.monotonic()
    if stopped():  # the run was interrupted (four.batch): the command ends as killed, unstarted
        output.finish()
        return Ran(-signal.SIGKILL, output, 0.0, False, timeout)
    fd, write_fd = os.pipe()  # the output's: this process keeps no write end
    try:
        child = start(write_fd)
    except BaseException:
        os.close(fd)
        raise
    finally:
        os.close(write_fd)
    os.set_blocking(fd, False)
    deadline = begin + timeout
    exited_at: float | None = None
    timed_out = False
    notes: list[str] = []
    completed = False

    def kill() -> None:  # at the timeout, or a supervisor's (four.batch)
        if on_timeout is not None:
            on_timeout()
        child.kill()

    # Under a supervisor (four.batch), another thread may kill this command.
    command = running(child.pgid, None, kill)
    try:
        while True:
            now = time.monotonic()
            until = deadline if exited_at is None else min(deadline, exited_at + LINGER)
            if now >= until:
                if exited_at is None:
                    timed_out = True
                    kill()
                else:
                    notes.append(HELD_OPEN)
                    stop_holders(child, fd)
                await drain(fd, output.feed, DRAIN, wait)
                break
            # One wait sees both: a command that prints little and exits costs one.
            ready = await wait([fd] if exited_at is not None else [fd, child.exit_fd], until - now)
            if child.exit_fd in ready:
                exited_at = time.monotonic()
            if fd in ready:
                data = read_some(fd)
                if data == b"":
                    break  # end of output
                if data:
                    output.feed(data)
        # The output closed before the exit was seen: wait for it on the exit fd
        # (Popen.wait with a timeout polls with sleeps, a millisecond or more too late).
        if (
            exited_at is None
            and not timed_out
            and not await wait([child.exit_fd], deadline - time.monotonic())
        ):
            timed_out = True
            kill()
        completed = True
    finally:
        os.close(fd)
        if not completed:  # an exception (Ctrl-C), or a cancelled task: leave nothing running
            child.kill()
        if command is not None:
            command.release()
        try:
            returncode = child.wait()
        finally:
            child.close()
    output.finish()
    return Ran(
        None if timed_out else returncode,
        output,
        time.monotonic() - begin,
        timed_out,
        timeout,
        tuple(notes),
    )


def spawn(contained: Contained, stdin: int, stdout: IO[bytes] | int, stderr: int) -> Process:
    """Start a contained launcher in a session of its own (its group holds all it starts; a
    Ctrl-C at the terminal is ours to handle), with no descriptor of ours but those given;
    if it cannot start, what was made for it goes."""
    try:
        return subprocess.Popen(
            contained.argv, stdin=stdin, stdout=stdout, stderr=stderr, cwd=contained.cwd,
            env=contained.env, start_new_session=True, close_fds=True,
        )  # fmt: skip
    except BaseException:
        contained.end()
        raise


def stop_holders(child: Child, fd: int) -> None:
    """Kill the other processes that hold the pipe read through ``fd`` (its write end: the
    pipe was made for this command, so each is the command's, whatever process group or
    session it moved to); all the child's when none is found (/proc unreadable)."""
    target = f"pipe:[{os.fstat(fd).st_ino}]"
    found = False
    for pid in other_pids():  # we hold the read end
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours to see
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{n}") == target for n in fds):
                found = True
                os.kill(pid, signal.SIGKILL)
    if not found:
        child.kill()
