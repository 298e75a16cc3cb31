"""Containment of a command's processes, one rule for every environment that runs them here
(docs/components.md): a PID namespace of its own (``unshare``), a tether (``_kill``) that
kills every launcher marked ``FOUR_DRIVER`` when this process dies, however it dies, and
``Limits`` entered by the first process itself (cgroups, rlimits).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from four._types import Checked
from four.execute._kill import KILL_MARKED, Tether

DRIVER = "FOUR_DRIVER"
"""The variable every launcher of this process carries (its tether kills them)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one command, or shell (None: no limit): processes, bytes of one
    file, bytes of memory (docs/components.md; ``containment()`` says what is enforced).

    >>> Limits(processes=64).processes
    64
    """

    processes: int | None = 512
    file_size: int | None = 4 << 30
    memory: int | None = 8 << 30

    def __post_init__(self) -> None:
        for name in ("processes", "file_size", "memory"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 1):
                raise ValueError(
                    f"Limits({name}=...) must be a positive int or None, not {value!r}"
                )


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Containment(Checked):
    """What this machine lets ``local_env`` and ``shell_env`` enforce (see ``containment``)."""

    namespace: bool
    """Each command in its own PID namespace: no other process visible, none outlives it."""
    processes: Literal["cgroup", "rlimit", "none"]
    memory: Literal["cgroup", "none"]
    notes: tuple[str, ...] = ()
    """What is weaker here, and why."""


@functools.cache
def containment() -> Containment:
    """Probe once what this machine allows (a namespace, cgroups); warn about what not.

    >>> containment().namespace in (True, False)
    True
    """
    notes = []
    namespace = _namespace_flags() is not None
    if not namespace:
        notes.append(
            "no PID namespace can be made here (unshare failed): commands can read the "
            "environment of other processes of this user in /proc, and a process that "
            "leaves the process group and drops FOUR_RUN (setsid with env -i) can outlive "
            "its command"
        )
    groups = _cgroup_parents()
    processes: Literal["cgroup", "rlimit", "none"] = "none"
    if "pids" in groups:
        processes = "cgroup"
    elif os.geteuid() != 0 and namespace:
        processes = "rlimit"  # counted in the command's own user namespace
    else:
        notes.append("no pids cgroup can be made here: the process limit is not enforced")
    memory: Literal["cgroup", "none"] = "cgroup" if "memory" in groups else "none"
    if memory == "none":
        notes.append("no memory cgroup can be made here: the memory limit is not enforced")
    for note in notes:
        warnings.warn(f"four.execute: {note}", RuntimeWarning, stacklevel=2)
    return Containment(namespace, processes, memory, tuple(notes))


def contained(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``argv`` run as the first process of a PID namespace of its own (as is, without).
    A program missing from ``env``'s PATH raises FileNotFoundError here, as Popen would."""
    program = find_program(argv[0], env.get("PATH", os.defpath))
    flags = _namespace_flags() if containment().namespace else None
    return [*flags, "--", program, *argv[1:]] if flags else [program, *argv[1:]]


def find_program(name: str, path: str | None = None) -> str:
    """``shutil.which``, or the FileNotFoundError Popen raises for a missing program."""
    found = shutil.which(name, path=path)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", name)
    return found


KILLED = (
    "The command's shell was killed (SIGKILL), most likely for using more memory than its limit."
)


_UNSHARE_KILLED = b"unshare: sigprocmask unblock failed: Invalid argument\n"


def launcher_exit(code: int | None, last: bytes) -> tuple[int | None, bytes]:
    """The exit of the first process under a launcher, and its last output without the
    launcher's own words. util-linux's ``unshare`` (2.38) cannot pass a SIGKILL on (it
    may not reset that signal's action): it exits 1 with those words instead.

    >>> launcher_exit(1, b"x\\n" + _UNSHARE_KILLED)
    (-9, b'x\\n')
    """
    if code == 1 and last.endswith(_UNSHARE_KILLED):
        return -signal.SIGKILL, last[: -len(_UNSHARE_KILLED)]
    return code, last


@dataclass(frozen=True, slots=True)
class Contained(Checked):
    """How to start one tool (a kernel, a compiler) in a run's environment as its commands
    are: what ``Popen`` is given (a launcher: ``unshare``, ``bwrap`` or ``docker exec``,
    which sets the tool's own environment), the ``FOUR_RUN`` mark its processes carry, and
    what ends it (kill the launcher's process group, then ``end()``)."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    mark: str
    kill_inside: Callable[[], None]
    """Kill the tool's processes that its launcher's death does not end (a container's)."""
    release: Callable[[], None]
    """Remove its cgroups (once it has ended)."""

    def end(self) -> None:
        """Kill what is left of the tool, then release its cgroups."""
        try:
            self.kill_inside()
        finally:
            self.release()


def nothing() -> None:
    """Nothing to do (a ``Contained`` whose launcher's death ends every process)."""


def launch(
    argv: Sequence[str], env: dict[str, str], limits: Limits, cwd: str | None = None
) -> Contained:
    """How to start ``argv`` with the environment ``env`` here: in its own PID namespace,
    tethered, under ``limits`` (its first process, a bash, enters them, then becomes
    ``argv``). Raises FileNotFoundError when ``env``'s PATH lacks it."""
    program = find_program(argv[0], env.get("PATH", os.defpath))
    wrapped = contained(["bash", *_PLACING, program, *argv[1:]], env)
    placed = place(limits)
    variables = {**env, **placed.env}
    variables.pop("BASH_ENV", None)  # a bash would run it before it enters the limits
    return Contained(wrapped, launcher_env(variables), cwd, "", nothing, placed.release)


def under_limits(launcher: Sequence[str], limits: Limits, cwd: str | None, mark: str) -> Contained:
    """``launcher`` started by a bash that first puts itself under ``limits`` (``PLACE``),
    with nothing in its environment but what says them and the tether's mark."""
    placed = place(limits)
    wrapped = [find_program("bash"), *_PLACING, *launcher]
    return Contained(wrapped, launcher_env(placed.env), cwd, mark, nothing, placed.release)


_PRIVATE = "four-shell-"


def private_folder() -> str:
    """A new folder (mode 0700) for a shell's own files, in memory where there is a
    tmpfs (on ext4, truncating a file costs up to a millisecond; on tmpfs, microseconds).
    Its name holds this process's pid: when the process dies, SIGKILL included, its
    tether removes it (a normal end removes it first)."""
    return tempfile.mkdtemp(prefix=f"{_PRIVATE}{os.getpid()}-", dir=_private_parent())


def _private_parent() -> str:
    shm = "/dev/shm"
    usable = os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK)
    return shm if usable else tempfile.gettempdir()


_lock = threading.Lock()
_tether: tuple[Tether, str] | None = None


def launcher_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` plus the mark this process's tether kills by (starting the tether once)."""
    global _tether
    with _lock:
        if _tether is None or not _tether[0].alive():
            mark = os.urandom(8).hex()
            # When we die: kill the launchers (and with each its namespace), remove what is
            # left of our private folders (a shell's last command and exported variables),
            # then the cgroups our commands were in.
            parents = list(_cgroup_parents().values())
            pid = os.getpid()
            script = (
                f'{KILL_MARKED}\nrm -rf -- "$2"/{_PRIVATE}{pid}-*\n'
                f'sleep 0.5; for d in "${{@:3}}"; do rmdir "$d"/four-{pid}-*; done'
            )
            _tether = (Tether(script, [f"{DRIVER}={mark}", _private_parent(), *parents]), mark)
        return {**env, DRIVER: _tether[1]}


@functools.cache
def _namespace_flags() -> tuple[str, ...] | None:
    """The unshare command line that works here, or None."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    base: tuple[str, ...] = (unshare, "--pid", "--fork", "--kill-child", "--mount-proc")
    tries = [base] if os.geteuid() == 0 else []
    tries.append((*base, "--map-current-user"))
    for flags in tries:
        try:
            done = subprocess.run(
                [*flags, "--", "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env={},
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return flags
    return None


# --- cgroups -------------------------------------------------------------------------

_LIMIT_FILES = {"pids": ("pids.max",), "memory": ("memory.max", "memory.limit_in_bytes")}


@functools.cache
def _cgroup_parents() -> dict[str, str]:
    """For each of pids and memory, a cgroup folder of ours where we can make children
    that enforce it (this process's own cgroup in that hierarchy)."""
    found: dict[str, str] = {}
    for controller, files in _LIMIT_FILES.items():
        for folder in _own_cgroups(controller):
            probe = os.path.join(folder, f"four-probe-{os.getpid()}")
            try:
                os.mkdir(probe)
            except OSError:
                continue
            try:
                if any(os.path.exists(os.path.join(probe, f)) for f in files):
                    found[controller] = folder
                    break
            finally:
                with contextlib.suppress(OSError):
                    os.rmdir(probe)
    return found


def _own_cgroups(controller: str) -> list[str]:
    """Folders of this process's cgroup in hierarchies that may hold ``controller``."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
        with open("/proc/self/mountinfo") as f:
            mounts = f.read().splitlines()
    except OSError:
        return []
    # controller list ("" for v2) -> our path in it
    paths = dict(line.split(":", 2)[1:] for line in lines)
    folders = []
    for mount in mounts:
        left, _, right = mount.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point, kind, options = fields[4], tail[0], tail[2].split(",")
        if kind == "cgroup" and controller in options:
            hierarchy = next((n for n in paths if controller in n.split(",")), None)
            if hierarchy is not None:
                folders.append(point + paths[hierarchy])
        elif kind == "cgroup2" and "" in paths:
            folders.append(point + paths[""])
    return folders


_count = itertools.count()

PLACE = """for __four_d in $FOUR_CGROUPS; do builtin echo $$ >"$__four_d/cgroup.procs"; done 2>/dev/null
[ -n "$FOUR_ULIMIT" ] && builtin ulimit $FOUR_ULIMIT 2>/dev/null
builtin unset BASH_ENV FOUR_CGROUPS FOUR_ULIMIT __four_d
"""
"""Bash that puts itself under the limits its environment names, then runs its arguments
(``_PLACING``). Done by the process itself, nothing it starts can escape them."""
_PLACING = ("-c", f'{PLACE}exec "$@"', "four-limits")


@dataclass(slots=True)
class Placed:
    """The limits of one command (or one shell): cgroups made for it, and the variables
    that tell its first bash to enter them (``PLACE``). ``release()`` once it is over."""

    folders: list[str]
    env: dict[str, str]

    def release(self) -> None:
        """Remove the cgroups (killing what is left in them: nothing, in a namespace)."""
        for folder in self.folders:
            for _ in range(50):  # the last processes of a dead namespace may still be exiting
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    _kill_all(folder)
                    time.sleep(0.002)
        self.folders = []


def place(limits: Limits) -> Placed:
    """Make the cgroups for ``limits`` and the variables that put a bash under them."""
    groups = _cgroup_parents() if limits.processes or limits.memory else {}
    folders = []
    name = f"four-{os.getpid()}-{next(_count)}"
    for controller, value in (("pids", limits.processes), ("memory", limits.memory)):
        parent = groups.get(controller)
        if value is None or parent is None:
            continue
        folder = os.path.join(parent, name)
        files = [os.path.join(folder, f) for f in _LIMIT_FILES[controller]]
        try:
            os.mkdir(folder)
            with open(next(f for f in files if os.path.exists(f)), "w") as limit:
                limit.write(str(value))
        except (OSError, StopIteration):  # (StopIteration: no limit file in it)
            with contextlib.suppress(OSError):
                os.rmdir(folder)
            continue
        folders.append(folder)
    ulimit = []
    if limits.file_size is not None:
        ulimit += ["-f", str(max(1, limits.file_size // 1024))]  # bash counts KiB
    if limits.processes is not None and containment().processes == "rlimit":
        ulimit += ["-u", str(limits.processes)]
    return Placed(folders, {"FOUR_CGROUPS": " ".join(folders), "FOUR_ULIMIT": " ".join(ulimit)})


def _kill_all(folder: str) -> None:
    """SIGKILL what is left in a cgroup (a command's last processes, after its end)."""
    pids: list[str] = []
    with contextlib.suppress(OSError), open(os.path.join(folder, "cgroup.procs")) as f:
        pids = f.read().split()
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)
