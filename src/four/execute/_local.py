"""V2 on this machine: each command in a fresh ``bash -c`` (or one persistent shell)."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

from returns.result import Failure, Success

from four import _arguments as arguments
from four._coroutine import to_end
from four._secrets import SECRET_PATTERNS
from four._types import Action, Checked, ExecutionError
from four.execute._contain import (
    DEFAULT_LIMITS,
    KILLED,
    Contained,
    Limits,
    contained,
    find_program,
    launcher_env,
    under_limits,
)
from four.execute._kill import MARK, new_mark
from four.execute._launcher import Launcher
from four.execute._output import (
    DEFAULT_INHERIT,
    EXIT_SIGNAL,
    Executed,
    OutputBuffer,
    command_env,
    conclude,
    refused,
)
from four.execute._process import BLOCKED, Wait, blocking, watching
from four.execute._shell import ShellEnv


@dataclass(frozen=True, slots=True)
class LocalEnv(Checked):
    """V2: every command in a fresh ``bash -c`` on this machine (see ``local_env``)."""

    timeout: float = 120.0
    max_output: int = 10_000
    exit_signal: str = EXIT_SIGNAL
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    inherit: tuple[str, ...] = DEFAULT_INHERIT
    deny: tuple[str, ...] = SECRET_PATTERNS
    shell: str = "bash"
    limits: Limits = DEFAULT_LIMITS
    _launcher: Launcher = field(default_factory=Launcher, init=False, repr=False, compare=False)

    def __call__(self, action: Action, /) -> Executed:
        return to_end(self.execute(action, blocking), BLOCKED)

    async def execute(self, action: Action, wait: Wait) -> Executed:
        """Run ``action``, waiting by ``wait`` (``AsyncLocalEnv`` awaits)."""
        if (refusal := refused(self, action)) is not None:
            return Success(refusal)
        output = OutputBuffer(self.max_output, self.exit_signal)
        try:  # no bash on the command's PATH, or the working folder is gone
            env = launcher_env(command_env(self.inherit, self.deny, self.env))
            argv = [find_program(self.shell, env.get("PATH", os.defpath)), "-c", action.command]
            ran = await watching(
                lambda out: self._launcher.start(self.limits, argv, env, self.cwd, out),
                output,
                self.timeout,
                None,
                wait,
            )
        except OSError as exc:
            return Failure(ExecutionError(f"cannot start {self.shell}: {exc}"))
        if ran.returncode == -signal.SIGKILL:  # its shell killed: most likely its memory limit
            ran = dataclasses.replace(ran, notes=(*ran.notes, KILLED))
            self._launcher.settle()
        return conclude(ran)

    def close(self) -> None:
        """End the launcher, if one runs (and any command still running with it)."""
        self._launcher.close()

    def contain(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> Contained:
        """``ToolHost.contain`` here. Raises FileNotFoundError when ``env``'s PATH lacks it."""
        mark = new_mark()
        variables = {**env, MARK: mark}
        program = find_program(argv[0], variables.get("PATH", os.defpath))
        pairs = [f"{name}={value}" for name, value in variables.items()]
        # env -i: the tool's environment is exactly ``variables`` (the launchers' own, the
        # tether's mark and the limits, are not passed on).
        tool = [find_program("env"), "-i", "--", *pairs, program, *argv[1:]]
        launcher = contained(tool, {"PATH": os.environ.get("PATH", os.defpath)})
        return under_limits(launcher, self.limits, cwd, mark)


@overload
def local_env(
    timeout: float = ...,
    max_output: int = ...,
    exit_signal: str = ...,
    cwd: str | None = ...,
    env: Mapping[str, str] | None = ...,
    *,
    persistent: Literal[False] = ...,
    inherit: Sequence[str] = ...,
    deny: Sequence[str] = ...,
    limits: Limits = ...,
) -> LocalEnv: ...
@overload
def local_env(
    timeout: float = ...,
    max_output: int = ...,
    exit_signal: str = ...,
    cwd: str | None = ...,
    env: Mapping[str, str] | None = ...,
    *,
    persistent: Literal[True],
    inherit: Sequence[str] = ...,
    deny: Sequence[str] = ...,
    limits: Limits = ...,
) -> ShellEnv: ...
def local_env(
    timeout: float = 120.0,
    max_output: int = 10_000,
    exit_signal: str = EXIT_SIGNAL,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    persistent: bool = False,
    inherit: Sequence[str] = DEFAULT_INHERIT,
    deny: Sequence[str] = SECRET_PATTERNS,
    limits: Limits = DEFAULT_LIMITS,
) -> LocalEnv | ShellEnv:
    """V2 that runs each command with bash on this machine, in the environment's own PID
    namespace (``persistent=True``: one ``ShellEnv``); the settings: docs/components.md.

    >>> from four import Action
    >>> local_env()(Action("echo hi")).unwrap().content
    '<returncode>0</returncode>\\n<output>\\nhi\\n</output>'
    """
    where = "local_env"
    arguments.environment_options(where, timeout, max_output, exit_signal, cwd, env)
    arguments.names(where, "inherit", inherit)
    arguments.names(where, "deny", deny)
    settings = (timeout, max_output, exit_signal, cwd, dict(env or {}), tuple(inherit))
    return (ShellEnv if persistent else LocalEnv)(*settings, tuple(deny), limits=limits)


def shell_env(
    timeout: float = 120.0,
    max_output: int = 10_000,
    exit_signal: str = EXIT_SIGNAL,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    inherit: Sequence[str] = DEFAULT_INHERIT,
    deny: Sequence[str] = SECRET_PATTERNS,
    limits: Limits = DEFAULT_LIMITS,
) -> ShellEnv:
    """V2 with one persistent bash: ``cd`` and exported variables carry over (the same
    guarantees as ``local_env``; a new shell after a timeout or an exit).

    >>> from four import Action
    >>> with shell_env() as env:
    ...     _ = env(Action("cd /tmp"))
    ...     env(Action("pwd")).unwrap().content.splitlines()[2]
    '/tmp'
    """
    return local_env(
        timeout,
        max_output,
        exit_signal,
        cwd,
        env,
        persistent=True,
        inherit=inherit,
        deny=deny,
        limits=limits,
    )


@overload
def super_env(
    timeout: float = ...,
    max_output: int = ...,
    exit_signal: str = ...,
    cwd: str | None = ...,
    env: Mapping[str, str] | None = ...,
    *,
    persistent: Literal[False] = ...,
) -> LocalEnv: ...
@overload
def super_env(
    timeout: float = ...,
    max_output: int = ...,
    exit_signal: str = ...,
    cwd: str | None = ...,
    env: Mapping[str, str] | None = ...,
    *,
    persistent: Literal[True],
) -> ShellEnv: ...
def super_env(
    timeout: float = 300.0,
    max_output: int = 100_000,
    exit_signal: str = EXIT_SIGNAL,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    persistent: bool = False,
) -> LocalEnv | ShellEnv:
    """``local_env`` with larger limits: 300 s per command, 100 000 characters of output.

    >>> super_env().max_output
    100000
    """
    if persistent:
        return local_env(timeout, max_output, exit_signal, cwd, env, persistent=True)
    return local_env(timeout, max_output, exit_signal, cwd, env)
