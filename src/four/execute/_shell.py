"""V2 with one long-lived bash: ``cd`` and exported variables persist between commands.

Protocol: the command is written to a private file, and the shell is sent one short
line, ``. FOLDER/run``. That file, written once per shell, sources the command with stdin
from /dev/null, saves ``export -p`` and the working folder (for a new shell after a
timeout or an exit), and prints a random per-shell sentinel with the return code, which
the reader scans the shell's output for. A command never reads the protocol, and its
text never passes through the shell's input, so an unbalanced quote in it is only a
syntax error.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from returns.result import Failure, Success

from four._coroutine import to_end
from four._secrets import SECRET_PATTERNS
from four._types import Action, Checked, ExecutionError
from four.execute._contain import (
    DEFAULT_LIMITS,
    KILLED,
    Limits,
    launch,
    launcher_exit,
    private_folder,
)
from four.execute._interrupt import running
from four.execute._kill import MARK, kill_group, kill_marked, new_mark
from four.execute._output import (
    DEFAULT_INHERIT,
    EXIT_SIGNAL,
    ClosedOnExit,
    Executed,
    OutputBuffer,
    Ran,
    command_env,
    conclude,
    refused,
)
from four.execute._process import BLOCKED, DRAIN, Wait, blocking, drain, read_some, spawn

_TAIL = 64  # bytes kept back while scanning: a sentinel line may straddle two reads

# Braces with 2>/dev/null: a user's `set -x` must not trace the protocol; `builtin`: a
# user's function named printf must not replace it. `source` inside a sourced file (not
# a function) keeps `declare` global.
_PROTOCOL = (
    "builtin source {folder}/command </dev/null\n"
    "{{ __four_rc=$?; builtin export -p >{folder}/state; "
    'builtin printf "cd -- %q\\n" "$PWD" >>{folder}/state; '
    "builtin printf '\\n{token} %d\\n' \"$__four_rc\"; }} 2>/dev/null\n"
)

_Shell = tuple[subprocess.Popen[bytes], str, Callable[[], None]]
"""A running shell: its process, its mark, and what removes its cgroups once it is over."""

RESTARTED = (
    "The shell was restarted{why}: the working directory and exported variables "
    "of the last finished command were kept; shell functions, aliases and "
    "unexported variables were lost, and background processes were stopped."
)


@dataclass(eq=False, slots=True, weakref_slot=True)
class ShellEnv(ClosedOnExit, Checked):
    """V2: one persistent bash (see ``shell_env``), ended by ``close()``. ``restarts``
    counts shells replaced after a timeout or an exit. Commands run one at a time."""

    timeout: float = 120.0
    max_output: int = 10_000
    exit_signal: str = EXIT_SIGNAL
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    inherit: tuple[str, ...] = DEFAULT_INHERIT
    deny: tuple[str, ...] = SECRET_PATTERNS
    shell: str = "bash"
    limits: Limits = DEFAULT_LIMITS
    restarts: int = field(default=0, repr=False)
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _dir: str | None = field(default=None, repr=False)
    _pidfd: int = field(default=-1, repr=False)
    _marker: bytes = field(default=b"", repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _procs: list[_Shell] = field(default_factory=list, repr=False)  # the one running, if any
    _mark: str = field(default="", repr=False)
    _finalizer: weakref.finalize[[str, list[_Shell]], ShellEnv] | None = field(
        default=None, repr=False
    )

    def close(self) -> None:
        """End the shell and everything it started, and delete its private folder."""
        with self._lock:
            self._stop()
            if self._finalizer is not None:
                self._finalizer()  # removes the folder
            self._finalizer = self._dir = None

    @property
    def pid(self) -> int | None:
        """The running shell's pid (its process group id too), or None."""
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> None:
        if self._dir is None:
            self._dir = private_folder()
            # The last resort if nobody closes us: the folder goes, the shell is killed.
            self._finalizer = weakref.finalize(self, _cleanup, self._dir, self._procs)
        # Every process the shell starts inherits the mark: a timeout or close() finds
        # them all, even those that left the process group.
        mark = new_mark()
        env = {**command_env(self.inherit, self.deny, self.env), MARK: mark}
        launched = launch([self.shell, "--noprofile", "--norc"], env, self.limits, self.cwd)
        proc = spawn(launched, subprocess.PIPE, subprocess.PIPE, subprocess.STDOUT)
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        self._proc, self._pidfd, self._mark = proc, os.pidfd_open(proc.pid), mark
        self._procs.append((proc, mark, launched.release))
        # A new sentinel for each shell (a shell that may have left stale output behind is
        # replaced); after a restart, the last state comes back, with this shell's mark.
        token = "__FOUR_" + os.urandom(12).hex()
        with open(os.path.join(self._dir, "run"), "w") as f:
            f.write(_PROTOCOL.format(folder=shlex.quote(self._dir), token=token))
        self._marker = f"\n{token} ".encode()
        state = os.path.join(self._dir, "state")
        if os.path.exists(state):
            self._send(f"source {shlex.quote(state)} >/dev/null 2>&1; export {MARK}={mark}\n")

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        _end(*self._procs.pop())
        os.close(self._pidfd)
        self._pidfd = -1

    def _send(self, line: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        os.write(self._proc.stdin.fileno(), line.encode())  # short: the pipe takes it at once

    def __call__(self, action: Action, /) -> Executed:
        with self._lock:
            return to_end(self.execute(action, blocking), BLOCKED)

    async def execute(self, action: Action, wait: Wait) -> Executed:
        """Run ``action`` in the shell, waiting by ``wait`` (``AsyncShellEnv`` awaits);
        the caller keeps the commands one at a time."""
        if (refusal := refused(self, action)) is not None:
            return Success(refusal)
        try:
            notes: tuple[str, ...] = ()
            if self._proc is not None and self._proc.poll() is not None:
                # The shell died between commands (killed from outside, `kill $$ &`...).
                code = self._proc.returncode
                self._stop()
                self.restarts += 1
                notes = (RESTARTED.format(why=f" because it had exited with code {code}"),)
            if self._proc is None:
                self._start()
            assert self._proc is not None
            # Under a supervisor (four.batch), another thread may kill the shell.
            command = running(self._proc.pid, self._mark)
            try:
                ran = await self._run(action.command, notes, wait)
            finally:
                if command is not None:
                    command.release()
        except OSError as exc:
            self._stop()
            return Failure(ExecutionError(f"the shell {self.shell} failed: {exc}"))
        except BaseException:
            self._stop()  # Ctrl-C or a cancelled task mid-command: nothing of it may live on
            raise
        return conclude(ran)

    async def _run(self, command: str, notes: tuple[str, ...], wait: Wait) -> Ran:
        assert self._proc is not None and self._proc.stdout is not None and self._dir
        start = time.monotonic()
        # Bash reads a pipe one byte at a time: the command goes in a file, the line is short.
        with open(os.path.join(self._dir, "command"), "w", errors="surrogateescape") as f:
            f.write(command if command.endswith("\n") else command + "\n")
        self._send(f". {shlex.quote(self._dir)}/run\n")
        output = OutputBuffer(self.max_output, self.exit_signal)
        fd = self._proc.stdout.fileno()
        pending = b""  # not yet fed to ``output``: it may hold the start of the sentinel
        deadline = start + self.timeout
        died = False  # the shell ended during the command (``exit 3``, ``exec``, the kernel)
        while not died and (left := deadline - time.monotonic()) > 0:
            ready = await wait([fd, self._pidfd], left)
            data = read_some(fd) if fd in ready else None
            if data:
                pending += data
                found = pending.find(self._marker)
                end = pending.find(b"\n", found + len(self._marker)) if found >= 0 else -1
                if end >= 0:  # the sentinel line, whole: the command's end and return code
                    output.feed(pending[:found])
                    output.finish()
                    code: int | None = int(pending[found + len(self._marker) : end])
                    return Ran(code, output, time.monotonic() - start, notes=notes)
                keep = found if found >= 0 else max(len(pending) - _TAIL, 0)
                output.feed(pending[:keep])
                pending = pending[keep:]
            died = self._pidfd in ready or data == b""
        # It died, or the timeout came: the command, the shell and all they started go (a
        # new shell comes with the next command), what it still printed is read.
        proc = self._proc
        kill_group(proc.pid)
        kill_marked(self._mark)
        drained = [pending]
        await drain(fd, drained.append, DRAIN, wait)
        self._stop()
        self.restarts += 1
        last = b"".join(drained)
        code, last = launcher_exit(proc.returncode, last) if died else (None, last)
        output.feed(last)  # (launcher_exit: without unshare's words)
        output.finish()
        why = RESTARTED.format(why=f" because it exited with code {code}" if died else "")
        notes += (KILLED, why) if code == -signal.SIGKILL else (why,)
        return Ran(code, output, time.monotonic() - start, not died, self.timeout, notes)


def _end(proc: subprocess.Popen[bytes], mark: str, release: Callable[[], None]) -> None:
    """Kill a shell and all it started (before reaping it: a reaped pid may be reused),
    then remove its cgroups."""
    kill_group(proc.pid)
    kill_marked(mark)
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
    proc.wait()
    release()


def _cleanup(folder: str, procs: list[_Shell]) -> None:
    while procs:
        _end(*procs.pop())
    shutil.rmtree(folder, ignore_errors=True)
