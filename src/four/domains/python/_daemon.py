"""One ``dmypy`` daemon for one run: its own status file, stopped whatever ends the run.

The daemon runs in the foreground of a child process we start (``dmypy daemon``), in a
session of its own, with a pipe from us on its stdin and a thread reading that pipe:
when the pipe closes (``stop()``, or this process dying, even by SIGKILL) the child
removes its status file and socket and exits. mypy's own ``--timeout`` stops an idle
daemon too, as a last resort. Checks go to the daemon with mypy's own client: in this
process when the daemon runs this interpreter, else through ``dmypy check``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from returns.result import Failure, Result, Success

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


class Dmypy:
    """A ``dmypy`` daemon serving one workspace, started on the first ``check``.

    ``flags`` are mypy's (``--strict``...); ``-O json`` is added. ``env`` is the daemon's
    whole environment (mypy plugins run inside it, so no secrets go there).
    """

    def __init__(
        self,
        workspace: Path,
        flags: Sequence[str],
        *,
        python: str,
        env: Mapping[str, str],
        timeout: float = 120.0,
        idle_timeout: float = 3600.0,
    ) -> None:
        self.workspace = workspace
        self.flags = (*flags, "-O", "json")
        self.python = python
        self.env = dict(env)
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self._folder: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The daemon's process id while it runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    @property
    def status_file(self) -> Path | None:
        return None if self._folder is None else self._folder / "dmypy.json"

    def check(self, files: Sequence[str]) -> Result[str, str]:
        """mypy's output for ``files`` (relative to the workspace), or why it could not run.

        A daemon that died is started again, once.
        """
        if not files:
            return Success("")
        for attempt in (1, 2):
            started = self._start()
            if isinstance(started, Failure):
                return started
            asked = self._ask(files)
            if isinstance(asked, Success) or attempt == 2:
                return asked
            self.stop()  # a daemon that crashed or lost its status: a fresh one
        raise AssertionError("unreachable")

    def _ask(self, files: Sequence[str]) -> Result[str, str]:
        """One ``check`` request: in this process when the daemon runs our interpreter
        (its client module costs half a second to start in a process of its own), else
        through ``dmypy check``."""
        if self.python == sys.executable:
            from mypy.dmypy.client import request
            from mypy.ipc import BadStatus

            try:
                response = request(
                    str(self.status_file),
                    "check",
                    timeout=int(self.timeout),
                    files=list(files),
                    export_types=False,
                )
            except BadStatus as exc:
                return Failure(f"the mypy daemon is gone: {exc}")
            if "error" in response:
                return Failure(f"the mypy daemon did not answer: {response['error']}")
            status, output = response.get("status"), str(response.get("out", ""))
            if status in (0, 1):
                return Success(output)
            return Failure(
                f"mypy failed (exit {status}): {(output + str(response.get('err', '')))[-500:]}"
            )
        try:
            done = subprocess.run(
                [*self._client(), "check", "--", *files],
                cwd=self.workspace,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired:
            self.stop()
            return Failure(f"mypy did not finish within {self.timeout:g}s")
        except OSError as exc:
            return Failure(f"cannot run dmypy: {exc}")
        output = done.stdout.decode("utf-8", "replace")
        if done.returncode in (0, 1):
            return Success(output)
        problem = (output + done.stderr.decode("utf-8", "replace")).strip()
        return Failure(f"dmypy failed (exit {done.returncode}): {problem[-500:]}")

    def _client(self) -> list[str]:
        return [self.python, "-m", "mypy.dmypy", "--status-file", str(self.status_file)]

    def _start(self) -> Result[None, str]:
        if self.pid is not None:
            return Success(None)
        self.stop()
        folder = Path(tempfile.mkdtemp(prefix="four-dmypy-"))
        self._folder = folder
        status = folder / "dmypy.json"
        log = open(folder / "daemon.log", "wb")  # noqa: SIM115 (the child keeps it)
        try:
            self._process = subprocess.Popen(
                [self.python, "-c", _SERVE, str(status), f"{self.idle_timeout:g}", *self.flags],
                cwd=self.workspace,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C at the terminal is for us, not for it
            )
        except OSError as exc:
            return Failure(f"cannot start the mypy daemon: {exc}")
        finally:
            log.close()
        deadline = time.monotonic() + self.timeout
        while not status.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                reason = (folder / "daemon.log").read_text("utf-8", "replace").strip()
                self.stop()
                return Failure(f"the mypy daemon did not start: {reason[-500:] or 'no output'}")
            time.sleep(0.01)
        return Success(None)

    def stop(self) -> None:
        """End the daemon (closing its pipe; killed if it lingers) and remove its files."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError):
                if process.stdin is not None:
                    process.stdin.close()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        folder, self._folder = self._folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
