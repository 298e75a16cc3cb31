"""The launcher program (why one per environment: ``_launcher``).

Run as ``python -I -S _spawner.py`` (the standard library only) with a clean environment.
Whatever a command leaves, however it detached (``setsid``, double fork, ``env -i``),
comes back to it (the namespace's init, or its subreaper) and is killed once no command
of the environment runs (``sweep``).

Protocol, over the SOCK_SEQPACKET socket whose fd is its first argument: each message is
one byte carrying a stream socket for one command and its output pipe. On the stream
socket the driver writes the request (a 4-byte length, then JSON: argv, env, cwd), and
later one byte, or its end, to kill the command. The launcher answers one JSON line once
the command and all it started have ended: ``{"exit": CODE}`` (negative: a signal), or
``errno``, ``what`` and ``filename`` when it could not start. At the SEQPACKET socket's
end (the driver closed it, or died) it kills every command and exits.
"""

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
from typing import Any

PR_SET_CHILD_SUBREAPER = 36

libc = ctypes.CDLL(None, use_errno=True)


def failure(exc: BaseException) -> dict[str, Any]:
    """What the driver raises for a command that could not start, as Popen would."""
    if isinstance(exc, OSError) and exc.errno:
        return {"errno": exc.errno, "what": exc.strerror, "filename": exc.filename}
    return {"errno": 0, "what": str(exc) or type(exc).__name__, "filename": None}


def read_exactly(conn: socket.socket, size: int) -> bytes:
    data = conn.recv(size, socket.MSG_WAITALL)  # short only at the stream's end
    if len(data) < size:
        raise EOFError("the request ended early")
    return data


class Running:
    """A command started: its pid, pidfd and socket."""

    __slots__ = ("conn", "pid", "pidfd")

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn, self.pid, self.pidfd = conn, pid, os.pidfd_open(pid)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def ended(self, others: int) -> None:
        """Reap it, kill all it left unless ``others`` commands still run, and tell the
        driver how it ended."""
        code = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        os.close(self.pidfd)
        if not others:
            sweep()
        answer(self.conn, {"exit": code})


def answer(conn: socket.socket, said: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the driver may have given up on it
        conn.sendall(json.dumps(said).encode() + b"\n")
    conn.close()


def sweep() -> None:
    """Kill and reap every child of the launcher (no command is running): what the
    commands left, which came back here when their first process ended; again until
    none is left (the children of a process killed come back in turn)."""
    path = f"/proc/self/task/{os.getpid()}/children"
    while True:
        with open(path) as f:
            left = [int(pid) for pid in f.read().split()]
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def start(conn: socket.socket, output: int, devnull: int) -> Running:
    """Start the command of ``conn``'s request in a new session (closing ``output`` here
    at once: the driver's end of it is to end when the command's does)."""
    try:
        size = struct.unpack("!I", read_exactly(conn, 4))[0]
        request = json.loads(read_exactly(conn, size))
        argv = [os.fsencode(a) for a in request["argv"]]
        env = {os.fsencode(k): os.fsencode(v) for k, v in request["env"].items()}
        # posix_spawn (vfork): nothing of this process is copied, the command runs at once.
        os.chdir(request["cwd"])
        try:
            pid = os.posix_spawn(
                argv[0],
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, devnull, 0),
                    (os.POSIX_SPAWN_DUP2, output, 1),
                    (os.POSIX_SPAWN_DUP2, output, 2),
                ],
                setsid=True,
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),  # as Popen: Python ignores them
            )
        finally:
            os.chdir("/")
    finally:
        os.close(output)
    return Running(conn, pid)


def main() -> None:
    # argv: the control socket's fd, the file size and process limits ("-": none), cgroups.
    control = socket.socket(fileno=int(sys.argv[1]))
    control.set_inheritable(False)
    for folder in sys.argv[4:]:
        with open(os.path.join(folder, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    for limit, value in zip(
        (resource.RLIMIT_FSIZE, resource.RLIMIT_NPROC), sys.argv[2:4], strict=True
    ):
        if value != "-":
            resource.setrlimit(limit, (int(value),) * 2)
    # Without a namespace of its own (not its first process), it is their subreaper still.
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), "prctl")
    devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    poller = select.poll()
    poller.register(control, select.POLLIN)
    exits: dict[int, Running] = {}  # by pidfd
    kills: dict[int, Running] = {}  # by the fd of its socket
    while True:
        for fd, _ in poller.poll():
            if fd in exits:
                command = exits.pop(fd)
                poller.unregister(fd)
                if kills.pop(command.conn.fileno(), None) is not None:
                    poller.unregister(command.conn)
                command.ended(len(exits))
            elif fd in kills:  # a byte, or the end: the driver wants it killed
                command = kills.pop(fd)
                poller.unregister(fd)
                command.kill()
            elif fd == control.fileno():  # a command to start, or the end: the driver's
                try:
                    _, fds, _, _ = socket.recv_fds(control, 1, 2)
                except OSError:
                    fds = []
                for received in fds:  # inheritable: no command may hold another's
                    os.set_inheritable(received, False)
                if len(fds) != 2:  # the end: the driver closed us, or died
                    for command in exits.values():
                        command.kill()
                    sweep()
                    sys.exit(0)
                conn = socket.socket(fileno=fds[0])
                try:
                    command = start(conn, fds[1], devnull)
                except (OSError, EOFError, ValueError) as exc:
                    answer(conn, failure(exc))
                    continue
                exits[command.pidfd] = command
                kills[conn.fileno()] = command
                poller.register(command.pidfd, select.POLLIN)
                poller.register(conn, select.POLLIN)
            # else: the socket of a command that ended earlier in this round


if __name__ == "__main__":
    main()
