"""V2 in a Docker container: one container per env, one ``docker exec`` per command
(docs/components.md); at a timeout the command's processes are killed from inside (the
client's death leaves them running)."""

from __future__ import annotations

import functools
import os
import subprocess
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from returns.result import Failure, Result, Success

from four import _arguments as arguments
from four._secrets import SECRET_PATTERNS
from four._types import Action, Checked, ExecutionError
from four.execute._contain import DEFAULT_LIMITS, Contained, Limits, nothing
from four.execute._interrupt import stopped
from four.execute._kill import KILL_MARKED, MARK, Tether, new_mark
from four.execute._output import (
    EXIT_SIGNAL,
    ClosedOnExit,
    Executed,
    OutputBuffer,
    command_env,
    conclude,
    refused,
)
from four.execute._process import run_captured

LABEL = "four.env"
"""Every container made by ``docker_env`` has this label (value: the creating pid)."""

_INIT = "trap 'exit 0' TERM; while :; do sleep 86400 & wait $!; done"
# Run the command, then kill what still holds the output open (as local_env does: a
# background job left writing to the exec's pipe would keep `docker exec` waiting).
# The command is the OOM killer's first choice: past the memory limit, the kernel kills
# it, never the container's first process (which would end the container, and its files).
_WRAP = r"""{ echo 1000 >/proc/self/oom_score_adj; } 2>/dev/null
bash -c "$1"; rc=$?
for d in /proc/[0-9]*; do
  [ "${d#/proc/}" = "$$" ] && continue
  for f in "$d"/fd/*; do
    [[ "$f" -ef /proc/$$/fd/1 ]] && { kill -9 "${d#/proc/}"; break; }
  done
done 2>/dev/null
exit $rc"""
_TOOL = _WRAP.replace('bash -c "$1"', '"$@"')  # for a tool: its program and arguments
# In a container of our own: kill every process but its first (the reaper) and this one,
# however it detached from the command (setsid, env -i). Commands run one at a time.
_KILL_ALL = r"""for d in /proc/[0-9]*; do
  p=${d#/proc/}; [ "$p" = 1 ] || [ "$p" = "$$" ] || kill -9 "$p"
done 2>/dev/null; true"""


@dataclass(eq=False, slots=True, weakref_slot=True)
class DockerEnv(ClosedOnExit, Checked):
    """V2: commands in one Docker container, removed at ``close()`` (see ``docker_env``)."""

    image: str
    timeout: float = 120.0
    max_output: int = 10_000
    exit_signal: str = EXIT_SIGNAL
    cwd: str = "/"
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    network: bool = False
    run_args: tuple[str, ...] = ()
    docker: str = "docker"
    start_timeout: float = 300.0
    deny: tuple[str, ...] = SECRET_PATTERNS
    container_name: str | None = None
    limits: Limits = DEFAULT_LIMITS
    mounts: tuple[str, ...] = ()
    _container: str | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _finalizer: weakref.finalize[[str, str, Tether], DockerEnv] | None = field(
        default=None, repr=False
    )

    def __enter__(self) -> DockerEnv:
        started = self.start()
        if isinstance(started, Failure):
            raise RuntimeError(started.failure().message)
        return self

    @property
    def container(self) -> str | None:
        """The container in use, or None before the first command."""
        return self._container

    def start(self) -> Result[str, ExecutionError]:
        """Start the container if it is not running; its name, or why it cannot start."""
        with self._lock:
            if self._container is not None:
                return Success(self._container)
            if self.container_name is not None:  # someone else's container: use, never remove
                if not self._running(self.container_name):
                    return Failure(
                        ExecutionError(f"the container {self.container_name} is not running")
                    )
                self._container = self.container_name
                return Success(self._container)
            name = f"four-{os.urandom(6).hex()}"
            argv = [
                "run",
                "-d",
                "--name",
                name,
                "--label",
                f"{LABEL}={os.getpid()}",
                *(["--network", "none"] if not self.network else []),
                *_limit_args(self.limits),
                *(a for path in self.mounts for a in ("-v", f"{path}:{path}")),
                "-w",
                self.cwd,
                *self.run_args,
                self.image,
                "bash",
                "-c",
                _INIT,
            ]
            # Before the container exists: an interrupt mid-start still removes it, and so
            # does our death (SIGKILL included), through the tether.
            tether = Tether(
                '"$1" rm -f -v "$2" >/dev/null 2>&1', [self.docker, name], _docker_env()
            )
            finalizer = weakref.finalize(self, _remove, self.docker, name, tether)
            try:
                ok, said = run_docker(self.docker, *argv, timeout=self.start_timeout)
            except BaseException:
                finalizer()
                raise
            if not ok:
                finalizer()
                return Failure(ExecutionError(f"cannot start a container of {self.image}: {said}"))
            self._container, self._finalizer = name, finalizer
            return Success(name)

    def close(self) -> None:
        """Remove the container (``docker rm -f``) and everything in it, unless it was given."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._finalizer = self._container = None

    def __call__(self, action: Action, /) -> Executed:
        if (refusal := refused(self, action)) is not None:
            return Success(refusal)
        started = self.start()
        if isinstance(started, Failure):
            return started
        name = started.unwrap()
        mark = new_mark()
        argv = self._exec(name, ["-w", self.cwd], self.env, mark, _WRAP, "four", action.command)
        killed = threading.Event()  # by us: its timeout, or a supervisor's interrupt

        def kill_inside() -> None:
            killed.set()  # first: the client may see the end before this returns
            self._kill_inside(name, None if self.container_name is None else mark)

        output = OutputBuffer(self.max_output, self.exit_signal)
        try:
            ran = run_captured(
                argv, output, self.timeout, env=_docker_env(), on_timeout=kill_inside
            )
        except OSError as exc:
            return Failure(ExecutionError(f"docker exec failed: {exc}"))
        # It failed and nobody killed it: the container may be gone (removed, its first
        # process dead). A command we killed ended by our kill, whatever `docker inspect`
        # says meanwhile; a container really gone is found by the next command.
        unexplained = ran.returncode not in (0, None) and not killed.is_set() and not stopped()
        if unexplained and not self._running(name):
            text = ran.output.text().strip()[:500]
            return Failure(ExecutionError(f"the container {name} is gone: {text}"))
        return conclude(ran)

    def contain(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> Contained:
        """``ToolHost.contain`` here (``docker exec -i``; ``end()`` kills inside what carries
        its mark). Raises OSError when the container cannot start."""
        started = self.start()
        if isinstance(started, Failure):
            raise OSError(started.failure().message)
        name, mark = started.unwrap(), new_mark()
        wrapped = self._exec(name, ["-i", "-w", cwd], env, mark, _TOOL, "four-tool", *argv)
        kill_inside = functools.partial(self._kill_inside, name, mark)
        return Contained(wrapped, _docker_env(), None, mark, kill_inside, nothing)

    def _exec(
        self, name: str, options: list[str], env: Mapping[str, str], mark: str, *bash: str
    ) -> list[str]:
        """``docker exec`` of ``bash -c`` with ``bash``, its variables ``env`` (secrets
        filtered) and the ``mark`` its processes carry."""
        variables = {**command_env((), self.deny, env), MARK: mark}
        pairs = [a for key, value in variables.items() for a in ("-e", f"{key}={value}")]
        return [self.docker, "exec", *options, *pairs, name, "bash", "-c", *bash]

    def _kill_inside(self, name: str, mark: str | None) -> None:
        """Kill in the container the processes that carry ``mark`` (None: all but its reaper)."""
        kill = [_KILL_ALL, "kill"] if mark is None else [KILL_MARKED, "kill", f"{MARK}={mark}"]
        run_docker(self.docker, "exec", name, "bash", "-c", *kill, timeout=30)

    def _running(self, name: str) -> bool:
        ok, state = run_docker(self.docker, "inspect", "-f", "{{.State.Running}}", name, timeout=30)
        return ok and state == "true"


def docker_env(
    image: str,
    timeout: float = 120.0,
    max_output: int = 10_000,
    exit_signal: str = EXIT_SIGNAL,
    cwd: str = "/",
    *,
    env: Mapping[str, str] | None = None,
    network: bool = False,
    run_args: Sequence[str] = (),
    docker: str = "docker",
    container: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    mounts: Sequence[str] = (),
) -> DockerEnv:
    """V2 that runs each command with bash in one Docker container of ``image``, removed
    at ``close()`` (the settings: docs/components.md).

    >>> from four import Action
    >>> with docker_env("four-test:latest") as env:  # doctest: +SKIP
    ...     env(Action("echo hi")).unwrap().content
    '<returncode>0</returncode>\\n<output>\\nhi\\n</output>'
    """
    where = "docker_env"
    arguments.text(where, "image", image)
    arguments.environment_options(where, timeout, max_output, exit_signal, cwd, env)
    arguments.names(where, "run_args", run_args)
    arguments.text(where, "docker", docker)
    arguments.text(where, "container", container, optional=True)
    arguments.names(where, "mounts", mounts)
    return DockerEnv(
        image,
        timeout,
        max_output,
        exit_signal,
        cwd,
        dict(env or {}),
        network,
        tuple(run_args),
        docker,
        container_name=container,
        limits=limits,
        mounts=tuple(os.path.abspath(p) for p in mounts),
    )


def _limit_args(limits: Limits) -> list[str]:
    """``docker run`` options for ``limits``."""
    args = []
    if limits.processes is not None:
        args += ["--pids-limit", str(limits.processes)]
    if limits.memory is not None:
        args += ["--memory", str(limits.memory), "--memory-swap", str(limits.memory)]
    if limits.file_size is not None:
        args += ["--ulimit", f"fsize={limits.file_size}:{limits.file_size}"]
    return args


def _docker_env() -> dict[str, str]:
    """What the docker client needs of our environment to reach the daemon (no secret)."""
    return command_env(("PATH", "HOME", "DOCKER_*"))


def _remove(docker: str, name: str, tether: Tether) -> None:
    tether.release()
    run_docker(docker, "rm", "-f", "-v", name)


def run_docker(docker: str, *args: str, timeout: float = 60) -> tuple[bool, str]:
    """``docker args`` run: whether it worked, and what it said (its error, or why not)."""
    try:
        done = subprocess.run(
            [docker, *args],
            env=_docker_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    if done.returncode == 0:
        return True, done.stdout.strip()
    return False, done.stderr.strip() or done.stdout.strip()
