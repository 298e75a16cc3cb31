"""V2 under bubblewrap: a read-only system, one writable folder, no network unless asked."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from returns.result import Failure, Success

from four import _arguments as arguments
from four._secrets import SECRET_PATTERNS
from four._types import Action, Checked, ExecutionError
from four.execute._contain import (
    DEFAULT_LIMITS,
    Contained,
    Limits,
    find_program,
    launcher_env,
    under_limits,
)
from four.execute._kill import MARK, new_mark
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

SANDBOX_INHERIT: tuple[str, ...] = ("PATH", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM")
"""Host variables passed into the sandbox by default (HOME is the work folder)."""

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
"""Host folders shown read-only (a symlink, as /bin -> usr/bin, is recreated as one)."""

ETC = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "group",
    "host.conf",
    "hostname",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "profile",
    "protocols",
    "python3",
    "python3.11",
    "resolv.conf",
    "services",
    "ssl",
    "timezone",
)
"""Entries of /etc shown read-only; the rest of /etc (shadow, keys, credentials) is not."""


@dataclass(eq=False, slots=True, weakref_slot=True)
class SandboxEnv(ClosedOnExit, Checked):
    """V2: each command in a fresh bubblewrap sandbox (see ``sandbox_env``)."""

    timeout: float = 120.0
    max_output: int = 10_000
    exit_signal: str = EXIT_SIGNAL
    workdir: str | None = None
    network: bool = False
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    inherit: tuple[str, ...] = SANDBOX_INHERIT
    deny: tuple[str, ...] = SECRET_PATTERNS
    ro_binds: tuple[str, ...] = ()
    bwrap: str = "bwrap"
    limits: Limits = DEFAULT_LIMITS
    hide: tuple[str, ...] = ()
    binds: tuple[str, ...] = ()
    _folder: str | None = field(default=None, repr=False)
    _checked: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _finalizer: weakref.finalize[[str, bool], SandboxEnv] | None = field(default=None, repr=False)

    @property
    def folder(self) -> str:
        """The writable folder (made on first use when ``workdir`` is None)."""
        with self._lock:
            if self._folder is None:
                if self.workdir is not None:
                    self._folder = os.path.abspath(self.workdir)
                    os.makedirs(self._folder, exist_ok=True)
                else:
                    self._folder = tempfile.mkdtemp(prefix="four-sandbox-")
                    self._finalizer = weakref.finalize(self, shutil.rmtree, self._folder, True)
            return self._folder

    def close(self) -> None:
        """Delete the work folder if this env made it. Commands leave no process behind."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._finalizer = self._folder = None

    def argv(self, command: str) -> list[str]:
        """The bwrap command line that runs ``command``."""
        folder = self.folder
        variables = command_env(self.inherit, self.deny, {"HOME": folder, **self.env})
        return self._policy(folder, variables, ["bash", "-c", command])

    def _policy(self, cwd: str, variables: Mapping[str, str], argv: Sequence[str]) -> list[str]:
        """bwrap (found on our PATH: its environment has none) running ``argv``: what a
        process of this sandbox sees, where it starts, its whole environment."""
        folder = self.folder
        args = [
            find_program(self.bwrap),
            "--die-with-parent",
            "--new-session",  # no TIOCSTI into a terminal outside
            # Its own pid (so its own /proc: no other process's environment), ipc, uts,
            # user (where it can), cgroup and network namespaces; no capability at all.
            "--unshare-all",
            *(["--share-net"] if self.network else []),
            "--cap-drop",
            "ALL",
            "--hostname",
            "sandbox",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
        ]
        for path in SYSTEM:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.exists(path):
                args += ["--ro-bind", path, path]
        for name in ETC:
            path = os.path.join("/etc", name)
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        for path in self.ro_binds:
            args += ["--ro-bind", path, path]
        # The sandbox's own root is a tmpfs: make it read-only too, so only /tmp, the
        # work folder and ``binds`` take writes.
        for path in (folder, *self.binds):
            args += ["--bind", path, path]
        for path in self.hide:  # an empty read-only folder over it: its files are not there
            args += ["--tmpfs", path, "--remount-ro", path]
        args += ["--remount-ro", "/", "--chdir", cwd, "--clearenv"]
        for name, value in variables.items():
            args += ["--setenv", name, value]
        return [*args, "--", *argv]

    def usable(self) -> str | None:
        """Why bwrap cannot make this sandbox here (user namespaces, the binds), or None.
        Asked once: a failure then is the environment's; later, a command's own."""
        if not self._checked:
            probe = run_captured(self.argv("true"), OutputBuffer(2_000), 60.0, env=launcher_env({}))
            if probe.returncode != 0:
                return f"{self.bwrap} cannot run here: {probe.output.text().strip()}"
            self._checked = True
        return None

    def contain(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> Contained:
        """``ToolHost.contain`` in this sandbox. Raises OSError when bwrap cannot start."""
        if (problem := self.usable()) is not None:
            raise OSError(problem)
        mark = new_mark()
        return under_limits(self._policy(cwd, {**env, MARK: mark}, argv), self.limits, None, mark)

    def __call__(self, action: Action, /) -> Executed:
        if (refusal := refused(self, action)) is not None:
            return Success(refusal)
        output = OutputBuffer(self.max_output, self.exit_signal)
        try:
            if (problem := self.usable()) is not None:
                return Failure(ExecutionError(problem))
            # bwrap itself starts with no variable but the tether's mark: it is PID 1 in
            # the sandbox, and its /proc/1/environ is readable there.
            limited = under_limits(self.argv(action.command), self.limits, None, "")
            try:
                ran = run_captured(limited.argv, output, self.timeout, env=limited.env)
            finally:
                limited.release()
        except OSError as exc:
            return Failure(ExecutionError(f"cannot start {self.bwrap}: {exc}"))
        return conclude(ran)


def sandbox_env(
    timeout: float = 120.0,
    max_output: int = 10_000,
    exit_signal: str = EXIT_SIGNAL,
    workdir: str | None = None,
    *,
    network: bool = False,
    env: Mapping[str, str] | None = None,
    inherit: Sequence[str] = SANDBOX_INHERIT,
    deny: Sequence[str] = SECRET_PATTERNS,
    ro_binds: Sequence[str] = (),
    hide: Sequence[str] = (),
    binds: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
) -> SandboxEnv:
    """V2 that runs each command with bash inside a bubblewrap sandbox (Linux, ``bwrap``):
    the system read-only, ``workdir`` the one writable place (docs/components.md).

    >>> from four import Action
    >>> with sandbox_env() as env:
    ...     env(Action("touch /usr/x 2>/dev/null || echo read-only")).unwrap().content.splitlines()[2]
    'read-only'
    """
    where = "sandbox_env"
    arguments.environment_options(where, timeout, max_output, exit_signal, workdir, env)
    for name, value in (
        ("inherit", inherit), ("deny", deny), ("ro_binds", ro_binds), ("hide", hide),
        ("binds", binds),
    ):  # fmt: skip
        arguments.names(where, name, value)
    return SandboxEnv(
        timeout,
        max_output,
        exit_signal,
        workdir,
        network,
        dict(env or {}),
        tuple(inherit),
        tuple(deny),
        tuple(ro_binds),
        limits=limits,
        hide=tuple(os.path.abspath(p) for p in hide),
        binds=tuple(os.path.abspath(p) for p in binds),
    )
