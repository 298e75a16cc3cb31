"""One launcher process per environment (``_spawner``), started on its first command.

What containing a command costs is paid once per environment: the launcher is the first
process of the environment's PID namespace, has entered its cgroups and limits, and
starts each command with ``posix_spawn`` (no ``unshare`` per command, no move between
cgroups: on cgroup v1 that waits 10-20 ms). Its namespace ends with it: at ``close()``,
when collected, or when this process dies (its socket ends; the tether kills it too).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from four.execute._contain import Limits, contained, containment, launcher_env, place

SPAWNER = str(Path(__file__).with_name("_spawner.py"))


class Launched:
    """A command a launcher started (``exit_fd``: readable once it and all it started end)."""

    __slots__ = ("_conn", "exit_fd")

    pgid = None  # the launcher kills it, and all it started

    def __init__(self, conn: socket.socket) -> None:
        self._conn, self.exit_fd = conn, conn.fileno()

    def kill(self) -> None:
        """Ask the launcher to SIGKILL the command (then it kills all it started)."""
        with contextlib.suppress(OSError):
            self._conn.send(b"k")

    def wait(self) -> int:
        """The exit code (negative: the signal that killed it), once the launcher says it.
        A launcher gone first (its commands die with it) reads as SIGKILL; a command that
        could not start raises OSError, as Popen would have."""
        try:
            with self._conn.makefile("rb") as answer:
                line = answer.readline()
        except ConnectionResetError:  # killed before it read all it was sent
            line = b""
        if not line.endswith(b"\n"):
            return -signal.SIGKILL
        said = json.loads(line)
        if "errno" in said:  # it could not start: no such folder, no such program
            raise OSError(said["errno"] or None, said["what"], said["filename"])
        code: int = said["exit"]
        return code

    def close(self) -> None:
        self._conn.close()


class Launcher:
    """The launcher process of one environment, started when first needed (again if it
    died, or in a forked child) with the limits it is first given. Thread-safe;
    ``close()`` ends it and its commands."""

    __slots__ = ("__weakref__", "_finalizer", "_lock", "_state")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: _State | None = None
        self._finalizer: weakref.finalize[[_State], Launcher] | None = None

    def __reduce__(self) -> tuple[type[Launcher], tuple[()]]:
        return (Launcher, ())  # a copy (or a pickle) starts a launcher of its own

    def start(
        self,
        limits: Limits,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        output: int,
    ) -> Launched:
        """Start ``argv`` (its program an absolute path) with ``output`` as its stdout and
        stderr. Raises OSError as Popen would (no such folder, no such program)."""
        with self._lock:
            state = self._state
            if state is None or state.owner != os.getpid() or not state.alive():
                if state is not None and self._finalizer is not None:
                    self._finalizer()  # a dead launcher's cgroups go too
                state = self._state = _State(limits)
                self._finalizer = weakref.finalize(self, _State.stop, state)
        folder = os.getcwd() if cwd is None else cwd  # where Popen would start it
        request = json.dumps({"argv": list(argv), "env": dict(env), "cwd": folder}).encode()
        ours, theirs = socket.socketpair()
        try:
            try:
                socket.send_fds(state.control, [b"c"], [theirs.fileno(), output])
            finally:
                theirs.close()
            ours.sendall(struct.pack("!I", len(request)) + request)
        except BaseException:
            ours.close()
            raise
        return Launched(ours)

    def settle(self, seconds: float = 1.0) -> None:
        """After a command was killed (SIGKILL): the kernel may kill the launcher too, a
        moment later (past a memory limit it is in the cgroup); wait up to ``seconds`` for
        that, so the next command goes to a new launcher, not to the dying one."""
        with self._lock:
            state = self._state
        if state is not None:
            state.alive(seconds)

    def close(self) -> None:
        """End the launcher (and any command still running) and remove its cgroups."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._state = self._finalizer = None


class _State:
    """A launcher process started under ``limits``: its control socket, process, cgroups."""

    __slots__ = ("control", "owner", "placed", "proc")

    def __init__(self, limits: Limits) -> None:
        self.placed, self.owner = place(limits), os.getpid()
        processes = limits.processes if containment().processes == "rlimit" else None
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            env = {"PATH": os.environ.get("PATH", os.defpath)}  # no secret to show
            argv = [sys.executable, "-I", "-S", "-B", SPAWNER, str(theirs.fileno())]
            argv += ["-" if v is None else str(v) for v in (limits.file_size, processes)]
            argv += self.placed.folders
            self.proc = subprocess.Popen(
                contained(argv, env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # not the driver's: a pipe read to its end
                stderr=subprocess.DEVNULL,
                env=launcher_env(env),
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # a Ctrl-C of our terminal is ours to handle
            )
        except BaseException:
            self.control.close()
            self.placed.release()
            raise
        finally:
            theirs.close()

    def alive(self, wait: float = 0.0) -> bool:
        """Whether the launcher still takes commands: its process has not ended, nor closed
        its end of the control socket within ``wait`` seconds (see ``Launcher.settle``)."""
        if self.proc.poll() is not None:
            return False
        poller = select.poll()
        poller.register(self.control, select.POLLIN | select.POLLHUP)
        return not poller.poll(int(wait * 1000))  # it sends nothing unasked: any event is its end

    def stop(self) -> None:
        if self.owner != os.getpid():
            return  # a fork's copy: the launcher is the parent's
        self.control.close()  # the launcher kills its commands and exits
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.placed.release()
