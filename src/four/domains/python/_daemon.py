"""One ``dmypy`` daemon for one run: its own status file, stopped whatever ends the run.

The daemon (``dmypy daemon``, and with it every mypy plugin the workspace's configuration
names) is a tool of the run's environment (``four.execute``'s ``ToolHost``): here in a
PID namespace of its own, in the sandbox, or in the run's container, with an environment
made for it (no secret of the driver's), its status file and socket in the host's shared
folder. It runs in the foreground with a pipe from us on its stdin and a thread reading
that pipe: when the pipe closes (``stop()``) the daemon removes its status file and
socket and exits; if this process dies, even by SIGKILL, its launcher is killed and the
daemon with it. mypy's own ``--timeout`` stops an idle daemon too, as a last resort.
Checks go to the daemon with mypy's own client: in this process when the daemon runs
this interpreter, else through ``dmypy check`` in the same place as the daemon.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from returns.result import Failure, Result, Success

from four._files import Unreadable, read_regular
from four.execute._interrupt import running, stopped
from four.execute._tools import Started, Tail, ToolHost

# Run as `python -c _SERVE STATUS TIMEOUT FLAG...` in the workspace.
_SERVE = """
import json, os, sys, threading
status = sys.argv[1]
def watch():
    try:
        while os.read(0, 4096):
            pass
    finally:
        try:
            with open(status) as f:
                sock = json.load(f).get("connection_name", "")
            os.unlink(status)
            if sock.startswith("/"):
                os.unlink(sock)
                os.rmdir(os.path.dirname(sock))
        except Exception:
            pass
        os._exit(0)
threading.Thread(target=watch, daemon=True).start()
from mypy.dmypy.client import main
main(["--status-file", status, "daemon", "--timeout", sys.argv[2], "--", *sys.argv[3:]])
"""


ANSWER_LIMIT = 16 << 20
"""Bytes of the largest answer taken from the daemon (its plugins may be hostile)."""


def ask_daemon(socket_path: str, files: list[str], timeout: float) -> dict[str, object]:
    """One ``check`` request to a dmypy daemon, in mypy's framing (a 4-byte length, then
    JSON), within ``timeout`` seconds. Not mypy's own client: that one writes what the
    daemon says its plugins printed to this process's stdout and stderr (a plugin's
    escape sequences would reach the user's terminal) and takes an answer of any size.
    Raises OSError or ValueError when the daemon does not answer as it should."""
    deadline = time.monotonic() + timeout
    request = {"command": "check", "files": files, "export_types": False,
               "is_tty": False, "terminal_width": 100}  # fmt: skip
    data = json.dumps(request).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(socket_path)
        conn.sendall(struct.pack("!L", len(data)) + data)
        while True:
            (size,) = struct.unpack("!L", _read(conn, 4, deadline))
            if size > ANSWER_LIMIT:
                raise ValueError(f"an answer of {size} bytes, over the {ANSWER_LIMIT} taken")
            answer = json.loads(_read(conn, size, deadline))
            if not isinstance(answer, dict):
                raise ValueError("an answer that is not a JSON object")
            if answer.get("final"):  # earlier frames: what its plugins printed; not shown
                return answer


def _read(conn: socket.socket, size: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("it took too long")
        conn.settimeout(left)
        more = conn.recv(min(size - len(data), 1 << 20))
        if not more:
            raise ConnectionError("it closed the connection")
        data += more
    return bytes(data)


class Dmypy:
    """A ``dmypy`` daemon serving one workspace in ``host``, started on the first ``check``.

    ``flags`` are mypy's (``--strict``...); ``-O json`` is added. ``env`` is the daemon's
    whole environment (mypy plugins run inside it, so no secrets go there).
    """

    def __init__(
        self,
        workspace: Path,
        flags: Sequence[str],
        *,
        host: ToolHost,
        env: Mapping[str, str],
        timeout: float = 120.0,
        idle_timeout: float = 3600.0,
    ) -> None:
        self.workspace = workspace
        self.flags = (*flags, "-O", "json")
        self.host = host
        self.python = host.python
        self.env = dict(env)
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self._folder: Path | None = None
        self._daemon: Started | None = None
        self._said: Tail | None = None

    @property
    def pid(self) -> int | None:
        """The process id of the daemon's launcher (here: the daemon's namespace) while
        it runs."""
        daemon = self._daemon
        return daemon.proc.pid if daemon is not None and daemon.proc.poll() is None else None

    @property
    def status_file(self) -> Path | None:
        return None if self._folder is None else self._folder / "dmypy.json"

    def check(self, files: Sequence[str]) -> Result[str, str]:
        """mypy's output for ``files`` (relative to the workspace), or why it could not run.

        A daemon that died is started again, once (not when the run is being stopped).
        """
        if not files:
            return Success("")
        for attempt in (1, 2):
            if stopped():
                return Failure("the run is being stopped")
            started = self._start()
            if isinstance(started, Failure):
                return started
            daemon = self._daemon
            assert daemon is not None
            # Under a supervisor (four.batch, four run --timeout) the daemon can be killed.
            command = running(daemon.proc.pid, daemon.contained.mark, daemon.contained.kill_inside)
            try:
                asked = self._ask(files)
            finally:
                if command is not None:
                    command.release()
            if isinstance(asked, Success) or attempt == 2:
                return asked
            self.stop()  # a daemon that crashed or lost its status: a fresh one
        raise AssertionError("unreachable")

    def _ask(self, files: Sequence[str]) -> Result[str, str]:
        """One ``check`` request: in this process when the daemon runs our interpreter
        (its client module costs half a second to start in a process of its own), else
        through ``dmypy check`` where the daemon runs."""
        if self.python == sys.executable:
            socket_path = self._socket()
            if isinstance(socket_path, Failure):
                return socket_path
            try:
                response = ask_daemon(socket_path.unwrap(), list(files), self.timeout)
            except (OSError, ValueError) as exc:
                return Failure(f"the mypy daemon did not answer: {exc}")
            status, output = response.get("status"), str(response.get("out", ""))
            if status in (0, 1):
                return Success(output)
            return Failure(
                f"mypy failed (exit {status}): {(output + str(response.get('err', '')))[-500:]}"
            )
        try:
            done = self.host.run(
                [*self._client(), "check", "--", *files],
                cwd=str(self.workspace),
                env=self.env,
                timeout=self.timeout,
            )
        except OSError as exc:
            return Failure(f"cannot run dmypy: {exc}")
        if done.returncode is None:
            self.stop()
            return Failure(f"mypy did not finish within {self.timeout:g}s")
        output = done.stdout.decode("utf-8", "replace")
        if done.returncode in (0, 1):
            return Success(output)
        problem = (output + done.stderr.decode("utf-8", "replace")).strip()
        return Failure(f"dmypy failed (exit {done.returncode}): {problem[-500:]}")

    def _socket(self) -> Result[str, str]:
        """The daemon's socket, named by its status file. That file lies in the folder the
        tools share with us (a tool may write there): the socket must be in that folder."""
        try:
            status = json.loads(_status(self.status_file or Path()))
            socket_path = str(status["connection_name"])
        except (OSError, Unreadable, ValueError, KeyError, TypeError):
            return Failure("the mypy daemon is gone: its status file cannot be read")
        folder = os.path.realpath(self.host.folder)
        if not os.path.realpath(socket_path).startswith(folder + os.sep):
            return Failure("the mypy daemon's status file names a socket outside its folder")
        return Success(socket_path)

    def _client(self) -> list[str]:
        return [self.python, "-m", "mypy.dmypy", "--status-file", str(self.status_file)]

    def _start(self) -> Result[None, str]:
        if self.pid is not None:
            return Success(None)
        self.stop()
        folder = Path(tempfile.mkdtemp(prefix="four-dmypy-", dir=self.host.folder))
        self._folder = folder
        status = folder / "dmypy.json"
        said = self._said = Tail()
        try:
            self._daemon = self.host.start(
                [self.python, "-c", _SERVE, str(status), f"{self.idle_timeout:g}", *self.flags],
                cwd=str(self.workspace),
                env=self.env,
                output=said.fd,
            )
        except OSError as exc:
            self.stop()
            return Failure(f"cannot start the mypy daemon: {exc}")
        said.started()
        process = self._daemon.proc
        deadline = time.monotonic() + self.timeout
        while not _written(status):  # (mypy writes it in place: it can be seen half written)
            if process.poll() is not None or time.monotonic() > deadline or stopped():
                self.stop()
                return Failure(f"the mypy daemon did not start: {said.text() or 'no output'}")
            time.sleep(0.01)
        return Success(None)

    def stop(self) -> None:
        """End the daemon (closing its pipe; killed if it lingers) and remove its files."""
        daemon, self._daemon = self._daemon, None
        if daemon is not None:
            daemon.stop(grace=5)
        said, self._said = self._said, None
        if said is not None:
            said.close()
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _written(status: Path) -> bool:
    """Whether the daemon's status file is there and whole (names its socket)."""
    try:
        return "connection_name" in json.loads(_status(status))
    except (OSError, Unreadable, ValueError, TypeError):
        return False


def _status(path: Path) -> bytes:
    """The status file's bytes: a regular file only (a tool shares its folder: a FIFO
    put in its place must not hang us)."""
    return read_regular(path, max_bytes=1 << 16, follow=False)
