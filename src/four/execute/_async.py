"""V2 for ``arun``: ``local_env`` and ``shell_env`` awaited.

Each holds the sync environment it mirrors and takes from it its parameters and how a
command starts (``LocalEnv.starter``: its launcher; ``ShellEnv.launch``: its own PID
namespace, tether, limits, environment rule), so the rules exist once; what differs is
only the waiting. Cancelling the task that awaits a
command kills the command with every process it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import shutil
import subprocess
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from returns.result import Failure, Success

from four._types import Action, ExecutionError
from four.execute._aprocess import awatch
from four.execute._command import Executed, check_command, unrunnable
from four.execute._contain import Placed, private_folder, read_exit
from four.execute._interrupt import running
from four.execute._kill import kill_group, kill_marked, new_mark
from four.execute._local import LocalEnv, local_env, shell_env
from four.execute._output import OutputBuffer, Ran, conclude
from four.execute._process import CHUNK, DRAIN
from four.execute._shell import (
    RESTARTED,
    Scanner,
    ShellEnv,
    command_line,
    ended,
    write_protocol,
)

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class AsyncLocalEnv:
    """``local`` awaited: each command in a fresh ``bash -c``, started by ``local``'s
    launcher. ``aclose()`` ends the launcher (``arun`` calls it)."""

    local: LocalEnv

    async def aclose(self) -> None:
        """End the launcher, if one runs (and any command still running with it)."""
        await asyncio.to_thread(self.local.close)

    async def __call__(self, action: Action, /) -> Executed:
        problem = check_command(action.command)
        if problem:
            return Success(unrunnable(problem))
        local = self.local
        output = OutputBuffer(local.max_output, local.exit_signal)
        try:
            ran = await awatch(local.starter(action.command), output, local.timeout)
        except OSError as exc:
            return Failure(local.cannot_start(exc))
        return conclude(read_exit(ran))


def _settings_of(
    settings: Callable[P, object],
) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Give an async factory the parameters of the sync one it wraps (``shell_env``'s:
    ``local_env``'s but ``persistent``), for mypy and ``help()``: they are written once."""

    def share(factory: Callable[..., R]) -> Callable[P, R]:
        returns = inspect.signature(factory).return_annotation
        factory.__signature__ = inspect.signature(settings).replace(  # type: ignore[attr-defined]
            return_annotation=returns
        )
        return factory

    return share


@_settings_of(shell_env)
def alocal_env(*args: Any, **kwargs: Any) -> AsyncLocalEnv:
    """``local_env`` for ``arun``: the same parameters and guarantees, awaited (cancelling
    kills); ``arun`` calls ``aclose``.

    >>> import asyncio
    >>> from four import Action
    >>> asyncio.run(alocal_env()(Action("echo hi"))).unwrap().content
    '<returncode>0</returncode>\\n<output>\\nhi\\n</output>'
    """
    return AsyncLocalEnv(local_env(*args, **kwargs))


@dataclass(eq=False, slots=True, weakref_slot=True)
class AsyncShellEnv:
    """``shell`` awaited: one persistent bash, an asyncio subprocess. ``aclose()`` ends it.

    ``shell`` is never started: it holds the settings and the rule to start a shell.
    """

    shell: ShellEnv
    restarts: int = field(default=0, repr=False)
    _proc: asyncio.subprocess.Process | None = field(default=None, repr=False)
    _mark: str = field(default="", repr=False)
    _marker: bytes = field(default=b"", repr=False)
    _placed: Placed | None = field(default=None, repr=False)
    _dir: str | None = field(default=None, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    _finalizer: weakref.finalize[[str, list[tuple[int, str]]], AsyncShellEnv] | None = field(
        default=None, repr=False
    )
    _running: list[tuple[int, str]] = field(default_factory=list, repr=False)

    async def __aenter__(self) -> AsyncShellEnv:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the shell and everything it started, and delete its private folder."""
        async with self._lock:
            await self._stop()
            if self._finalizer is not None:
                self._finalizer()
                self._finalizer = None
            self._dir = None

    async def __call__(self, action: Action, /) -> Executed:
        problem = check_command(action.command)
        if problem:
            return Success(unrunnable(problem))
        async with self._lock:
            try:
                notes: tuple[str, ...] = ()
                if self._proc is not None and self._proc.returncode is not None:
                    code = self._proc.returncode  # it died between commands
                    await self._stop()
                    self.restarts += 1
                    notes = (RESTARTED.format(why=f" because it had exited with code {code}"),)
                if self._proc is None:
                    await self._start()
                assert self._proc is not None
                # Under a supervisor (four.batch), its thread may kill the shell.
                command = running(self._proc.pid, self._mark)
                try:
                    ran = await self._run(action.command, notes)
                finally:
                    if command is not None:
                        command.release()
            except OSError as exc:
                await self._stop()
                return Failure(ExecutionError(f"the shell {self.shell.shell} failed: {exc}"))
            except BaseException:  # cancelled mid-command: nothing of it may live on
                self._kill_processes()
                with contextlib.suppress(BaseException):  # reaped: nothing left open
                    await asyncio.shield(self._stop())
                raise
        return conclude(ran)

    async def _start(self) -> None:
        if self._dir is None:
            self._dir = private_folder()
            self._finalizer = weakref.finalize(self, _cleanup, self._dir, self._running)
        mark = new_mark()
        launched = self.shell.launch(mark)
        try:
            proc = await asyncio.create_subprocess_exec(
                *launched.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=self.shell.cwd,
                env=launched.env,
                start_new_session=True,
            )
        except BaseException:
            launched.placed.release()
            raise
        self._proc, self._mark, self._placed = proc, mark, launched.placed
        self._running.append((proc.pid, mark))
        self._marker, restore = write_protocol(self._dir, mark)
        if restore is not None:
            self._send(restore)

    def _send(self, line: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(line.encode())  # a short line: the pipe takes it at once

    async def _run(self, command: str, notes: tuple[str, ...]) -> Ran:
        assert self._proc is not None and self._proc.stdout is not None and self._dir
        start = time.monotonic()
        self._send(command_line(self._dir, command))
        output = OutputBuffer(self.shell.max_output, self.shell.exit_signal)
        scanner = Scanner(self._marker, output)
        stdout = self._proc.stdout
        try:
            async with asyncio.timeout(self.shell.timeout):
                while data := await stdout.read(CHUNK):
                    code = scanner.feed(data)
                    if code is not None:
                        return Ran(code, output, time.monotonic() - start, notes=notes)
        except TimeoutError:  # the shell and all it started go; a new shell comes later
            output.feed(scanner.pending + await self._drain_and_stop())
            self.restarts += 1
            output.finish()
            restarted = RESTARTED.format(why="")
            return Ran(
                None,
                output,
                time.monotonic() - start,
                True,
                self.shell.timeout,
                (*notes, restarted),
            )
        # The output ended: the shell exited during the command (`exit 3`, `exec`...).
        proc = self._proc
        last = scanner.pending + await self._drain_and_stop()
        self.restarts += 1
        code, last, why = ended(proc.returncode, last)
        output.feed(last)
        output.finish()
        return Ran(code, output, time.monotonic() - start, notes=(*notes, *why))

    async def _drain_and_stop(self) -> bytes:
        """Kill the shell and all it started; what it still printed."""
        assert self._proc is not None and self._proc.stdout is not None
        self._kill_processes()
        stdout = self._proc.stdout
        drained = []
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(DRAIN):
                while data := await stdout.read(CHUNK):
                    drained.append(data)
        await self._stop()
        return b"".join(drained)

    def _kill_processes(self) -> None:
        if self._proc is not None:
            kill_group(self._proc.pid)
            kill_marked(self._mark)

    async def _stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        self._kill_processes()
        with contextlib.suppress(ProcessLookupError):
            await proc.wait()
        self._forget()

    def _forget(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(ValueError):
                self._running.remove((proc.pid, self._mark))
            if proc.stdin is not None:
                proc.stdin.close()
        if self._placed is not None:
            self._placed.release()
            self._placed = None


@_settings_of(shell_env)
def ashell_env(*args: Any, **kwargs: Any) -> AsyncShellEnv:
    """``shell_env`` for ``arun``: the same parameters, one persistent bash, awaited;
    ``arun`` calls ``aclose``.

    >>> import asyncio
    >>> from four import Action
    >>> async def main() -> str:
    ...     async with ashell_env() as env:
    ...         _ = await env(Action("cd /tmp"))
    ...         return (await env(Action("pwd"))).unwrap().content.splitlines()[2]
    >>> asyncio.run(main())
    '/tmp'
    """
    return AsyncShellEnv(shell_env(*args, **kwargs))


def _cleanup(folder: str, running: list[tuple[int, str]]) -> None:
    """The last resort if nobody awaited ``aclose``: kill the shells, delete the folder."""
    while running:
        pid, mark = running.pop()
        kill_group(pid)
        kill_marked(mark)
    shutil.rmtree(folder, ignore_errors=True)
