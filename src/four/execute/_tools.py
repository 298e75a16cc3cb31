"""The tools a domain runs for the model (a kernel, a type checker, a compiler), started
by the run's environment as its commands are, so contained as they are; ``folder`` is
private and seen at the same path by the tools and this process (docs/security.md):

    host = tool_host("sandbox", workspace)          # "local", "sandbox" or "docker"
    host(Action("ls"))                              # a command of the model (V2)
    done = host.run(["gcc", "-o", "./t", "--", "./t.c"], timeout=60)   # a tool, to its end
    daemon = host.start(["python", "-m", "mypy.dmypy", ...])           # a long-lived one
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Literal

from four._checked import check_fields, checked
from four._secrets import SECRET_PATTERNS
from four._types import Action, Checked
from four.execute._contain import DEFAULT_LIMITS, Contained, Limits
from four.execute._docker import DockerEnv, docker_env
from four.execute._interrupt import running, stopped
from four.execute._kill import kill_group
from four.execute._local import LocalEnv, local_env
from four.execute._output import DEFAULT_INHERIT, ClosedOnExit, Executed, command_env
from four.execute._process import spawn
from four.execute._sandbox import SANDBOX_INHERIT, SYSTEM, SandboxEnv, sandbox_env

HostKind = Literal["local", "sandbox", "docker"]
HOST_KINDS: tuple[HostKind, ...] = ("local", "sandbox", "docker")

OUTPUT_LIMIT = 4 << 20
"""Bytes kept of each of a tool's two outputs (the head); the rest is read and dropped."""


@dataclass(frozen=True, slots=True)
class ToolRun(Checked):
    """How a tool run to its end ended: its exit status (None when it was killed at its
    timeout, or because the run was being stopped), and the head of its outputs."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stopped: bool = False  # the run was being stopped: the tool was killed, or not started


@dataclass(eq=False, slots=True)
class Started:
    """A long-lived tool started by ``ToolHost.start``: its launcher's ``Popen`` (stdin a
    pipe) and what ends it. ``stop()`` closes stdin, waits ``grace`` seconds, then kills."""

    proc: subprocess.Popen[bytes]
    contained: Contained

    def stop(self, grace: float = 5.0) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            kill_group(self.proc.pid)
            self.proc.wait()
        finally:
            self.contained.end()

    def kill(self) -> None:
        """Kill it now, with all it started."""
        kill_group(self.proc.pid)
        self.contained.kill_inside()


@dataclass(eq=False)
class ToolHost(ClosedOnExit):
    """The run's environment, for the model's commands and the domain's tools (``tool_host``)."""

    env: LocalEnv | SandboxEnv | DockerEnv
    workspace: str
    folder: str
    python: str = sys.executable  # the interpreter of the tools written in Python
    _remove: weakref.finalize[[str, bool], ToolHost] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        # The folder goes with the host, also when nobody closes it (a run never begun).
        self._remove = weakref.finalize(self, shutil.rmtree, self.folder, True)

    @property
    def kind(self) -> HostKind:
        if isinstance(self.env, SandboxEnv):
            return "sandbox"
        return "docker" if isinstance(self.env, DockerEnv) else "local"

    def __call__(self, action: Action, /) -> Executed:
        return self.env(action)

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The whole environment of a tool here: what a command of this environment gets,
        ``TMPDIR`` (and ``HOME`` outside the local host) in ``folder``, and ``extra``."""
        own = {"TMPDIR": os.path.join(self.folder, "tmp")}
        if self.kind != "local":
            own["HOME"] = os.path.join(self.folder, "home")
        inherit = {"local": DEFAULT_INHERIT, "sandbox": SANDBOX_INHERIT}.get(self.kind, ())
        return command_env(inherit, SECRET_PATTERNS, {**own, **(extra or {})})

    def contain(
        self, argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> Contained:
        """How to start ``argv`` here (see ``Contained``): in ``cwd`` (the workspace by
        default), with ``env`` (``environment()`` by default) as its whole environment.
        Raises OSError when it cannot start (no such program, no sandbox, no container)."""
        where = cwd or self.workspace
        variables = self.environment() if env is None else dict(env)
        return self.env.contain(list(argv), cwd=where, env=variables)

    def start(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        output: IO[bytes] | int = subprocess.DEVNULL,
    ) -> Started:
        """Start a long-lived tool: stdin a pipe from us, stdout and stderr to ``output``
        (never this process's own: a tool never writes to the user's terminal)."""
        contained = self.contain(argv, cwd=cwd, env=env)
        proc = spawn(contained, subprocess.PIPE, output, subprocess.STDOUT)
        return Started(proc, contained)

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        limit: int = OUTPUT_LIMIT,
    ) -> ToolRun:
        """Run a tool to its end (stdin closed) within ``timeout`` seconds, its stdout and
        stderr read apart, each up to ``limit`` bytes. A tool still running at its timeout,
        or when the run is being stopped, is killed with all it started. Raises OSError
        when it cannot start."""
        if stopped():
            return ToolRun(None, b"", b"", stopped=True)
        contained = self.contain(argv, cwd=cwd, env=env)
        proc = spawn(contained, subprocess.DEVNULL, subprocess.PIPE, subprocess.PIPE)
        command = running(proc.pid, contained.mark, contained.kill_inside)
        timed_out = True  # until it has ended: an exception (Ctrl-C) kills it too
        try:
            out, err, timed_out = _collect(proc, timeout, limit)
        finally:
            if timed_out:  # nothing of it may live on
                Started(proc, contained).kill()
            if command is not None:
                command.release()
            code = proc.wait()
            contained.release()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        # Killed because the run is being stopped: by a signal here, or inside a container
        # (where its wrapper says 128 + 9).
        if stopped() and (timed_out or code < 0 or code == 128 + signal.SIGKILL):
            return ToolRun(None, out, err, stopped=True)
        return ToolRun(None if timed_out else code, out, err, timed_out)

    def close(self) -> None:
        """End the environment (its commands, its container) and remove ``folder``; idempotent."""
        try:
            self.env.close()
        finally:
            self._remove()


class Tail:
    """A pipe for a long-lived tool's stdout and stderr, or an MCP server's stderr (``fd``),
    read by a thread that keeps the last few kilobytes (what a tool that failed to start
    said), never shown on the user's terminal nor written to a disk."""

    __slots__ = ("_kept", "_read", "_thread", "fd")

    KEEP = 4096

    def __init__(self) -> None:
        self._read, self.fd = os.pipe()
        self._kept = b""  # replaced whole by the one thread that reads: no lock
        self._thread = threading.Thread(target=self._drain, name="four-tool-output", daemon=True)
        self._thread.start()

    def started(self) -> None:
        """The tool holds the write end now: ours is closed (the read ends with it)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _drain(self) -> None:
        with contextlib.suppress(OSError):
            try:
                while data := os.read(self._read, 65536):
                    self._kept = (self._kept + data)[-self.KEEP :]
            finally:  # the pipe ends with the tool's processes: its read end with it
                os.close(self._read)

    def text(self, wait: float = 0.0) -> str:
        """The last of what was written, after waiting up to ``wait`` s for the pipe to end."""
        if wait:
            self._thread.join(wait)
        return self._kept.decode("utf-8", "replace").strip()[-1000:]

    def close(self) -> None:
        self.started()
        self._thread.join(timeout=2)


def _collect(
    proc: subprocess.Popen[bytes], timeout: float, limit: int
) -> tuple[bytes, bytes, bool]:
    """Read ``proc``'s stdout and stderr until both end or ``timeout`` passes: their
    heads, and whether the time ran out."""
    deadline = time.monotonic() + timeout
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as selector:
        for stream, kept in ((proc.stdout, out), (proc.stderr, err)):
            assert stream is not None
            selector.register(stream, selectors.EVENT_READ, kept)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(out), bytes(err), True
            for key, _ in selector.select(left):
                if data := os.read(key.fd, 1 << 16):  # readable: this read does not wait
                    key.data.extend(data[: max(0, limit - len(key.data))])
                else:
                    selector.unregister(key.fileobj)
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return bytes(out), bytes(err), True
    return bytes(out), bytes(err), False


@checked
def tool_host(
    kind: str,
    workspace: str | os.PathLike[str],
    *,
    timeout: float = 120.0,
    image: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    readable: Sequence[str] = (),
    hide: Sequence[str] = (),
    run_args: Sequence[str] = (),
    python: str | None = None,
) -> ToolHost:
    """The run's environment of ``kind`` (``local``, ``sandbox`` or ``docker``) for a
    domain working in ``workspace``, its tools contained as its commands are (the
    settings: docs/components.md). Raises ValueError for an unknown kind, or docker
    without an image.

    >>> import tempfile
    >>> with tool_host("local", tempfile.mkdtemp()) as host:
    ...     host.run(["echo", "hi"], timeout=10).stdout
    b'hi\\n'
    """
    if kind not in HOST_KINDS:
        raise ValueError(f"unknown environment {kind!r}: use {', '.join(HOST_KINDS)}")
    if kind == "docker" and not image:
        raise ValueError("--env docker needs an image: --image NAME or FOUR_IMAGE")
    root = os.path.abspath(workspace)
    folder = tempfile.mkdtemp(prefix="four-tools-")
    for sub in ("home", "tmp"):
        os.mkdir(os.path.join(folder, sub))
    env: LocalEnv | SandboxEnv | DockerEnv
    try:
        if kind == "local":
            env = local_env(timeout, cwd=root, limits=limits)
        elif kind == "sandbox":
            shown = [*readable, *python_prefixes()]
            unique = tuple(dict.fromkeys(p for p in shown if os.path.exists(p)))
            env = sandbox_env(
                timeout, workdir=root, binds=[folder], ro_binds=unique, hide=hide, limits=limits
            )
        else:
            assert image is not None
            env = docker_env(
                image, timeout, cwd=root, mounts=[root, folder], run_args=run_args, limits=limits
            )
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    chosen = python or ("python3" if kind == "docker" else sys.executable)
    return ToolHost(env, root, folder, chosen)


def python_prefixes() -> list[str]:
    """This interpreter's folders a sandbox must show for it to run there (its virtual
    environment and its base installation), unless the system folders hold them."""
    found = []
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        real = os.path.realpath(prefix)
        if not (real + "/").startswith(tuple(f"{path}/" for path in SYSTEM)):
            found.append(prefix)
            if real != prefix:
                found.append(real)
    return list(dict.fromkeys(found))
