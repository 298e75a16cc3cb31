"""V2 on this machine: each command in a fresh ``bash -c`` (or one persistent shell)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

from returns.result import Failure, Result, Success

from four import _arguments as arguments
from four._types import Action, ExecutionError, Observation, Submitted
from four.execute._output import (
    DEFAULT_INHERIT,
    EXIT_SIGNAL,
    SECRET_PATTERNS,
    OutputBuffer,
    command_env,
    conclude,
)
from four.execute._process import new_mark, run_captured
from four.execute._shell import ShellEnv

Executed = Result[Observation, Submitted | ExecutionError]


def unrunnable(reason: str) -> Observation:
    """The observation for a command that could not even start (the model's fault, not ours)."""
    return Observation(f"<returncode>126</returncode>\n<output>\n{reason}\n</output>", 126)


def check_command(command: str) -> str | None:
    """Why a command cannot be handed to a process, or None."""
    if "\0" in command:
        return "The command contains a NUL character, which no shell command can hold."
    if not command.strip():
        return "The command is empty."
    return None


@dataclass(frozen=True, slots=True)
class LocalEnv:
    """V2: every command in a fresh ``bash -c`` on this machine. Holds nothing, closes nothing.

    See ``local_env`` for the guarantees. ``env`` is not recorded in the trajectory.
    """

    timeout: float = 120.0
    max_output: int = 10_000
    exit_signal: str = EXIT_SIGNAL
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    inherit: tuple[str, ...] = DEFAULT_INHERIT
    deny: tuple[str, ...] = SECRET_PATTERNS
    shell: str = "bash"

    def __call__(self, action: Action, /) -> Executed:
        if not isinstance(action, Action):  # V2("echo hi"): say so, not 'no attribute command'
            raise arguments.not_an_action(type(self).__name__, action)
        problem = check_command(action.command)
        if problem:
            return Success(unrunnable(problem))
        output = OutputBuffer(self.max_output, self.exit_signal)
        mark = new_mark()
        try:
            ran = run_captured(
                [self.shell, "-c", action.command],
                output,
                self.timeout,
                cwd=self.cwd,
                env=command_env(self.inherit, self.deny, self.env),
                mark=mark,
            )
        except OSError as exc:  # no bash, or the working folder is gone
            return Failure(ExecutionError(f"cannot start {self.shell}: {exc}"))
        return conclude(ran)


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
) -> LocalEnv | ShellEnv:
    """V2 that runs each command with bash on this machine.

    Each command runs as ``bash -c`` in a new process group, stdin closed, stderr merged
    into stdout. A command still running after ``timeout`` seconds is killed with every
    process of its group; the model sees return code 124, the output so far and a note.
    Output is decoded as UTF-8 with bad bytes replaced, and bounded while it is read:
    at most ``max_output`` characters are shown (head and tail around an elision
    marker; 0 shows none). If the first non-blank output line is ``exit_signal`` and
    the command returns 0, the run ends with the rest of the output as the submission.

    The command's environment is ``command_env(inherit, deny, env)``: host variables
    named in ``inherit`` (PATH, HOME, locale... by default) minus those matching
    ``deny`` (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``...), plus ``env``.

    ``persistent=True`` gives a ``ShellEnv`` instead: one bash that keeps ``cd`` and
    exported variables between commands (close it, or use it in a ``with`` block).

    >>> from four import Action
    >>> local_env()(Action("echo hi")).unwrap().content
    '<returncode>0</returncode>\\n<output>\\nhi\\n</output>'
    """
    _check_options("local_env", timeout, max_output, exit_signal, cwd, env, inherit, deny)
    if persistent:
        return ShellEnv(
            timeout, max_output, exit_signal, cwd, dict(env or {}), tuple(inherit), tuple(deny)
        )
    return LocalEnv(
        timeout, max_output, exit_signal, cwd, dict(env or {}), tuple(inherit), tuple(deny)
    )


def _check_options(
    where: str,
    timeout: object,
    max_output: object,
    exit_signal: object,
    cwd: object,
    env: object,
    inherit: object,
    deny: object,
) -> None:
    arguments.environment_options(where, timeout, max_output, exit_signal, cwd, env)
    arguments.names(where, "inherit", inherit)
    arguments.names(where, "deny", deny)


def shell_env(
    timeout: float = 120.0,
    max_output: int = 10_000,
    exit_signal: str = EXIT_SIGNAL,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    inherit: Sequence[str] = DEFAULT_INHERIT,
    deny: Sequence[str] = SECRET_PATTERNS,
) -> ShellEnv:
    """V2 with one persistent bash: ``cd`` and exported variables carry over.

    The same guarantees as ``local_env`` (timeout, kill, bounded output, exit signal,
    environment filter). A timeout kills the shell with everything it started; a new
    shell then starts in the last working directory with the last exported variables
    (functions, aliases and unexported variables are lost, and the model is told).
    Same for a command that ends the shell (``exit 3``). Use it in a ``with`` block,
    or let ``run`` close it.

    >>> from four import Action
    >>> with shell_env() as env:
    ...     _ = env(Action("cd /tmp"))
    ...     env(Action("pwd")).unwrap().content.splitlines()[2]
    '/tmp'
    """
    return local_env(
        timeout, max_output, exit_signal, cwd, env, persistent=True, inherit=inherit, deny=deny
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
