"""Starting a command's process with glibc's ``posix_spawn``: what our ``Popen`` call does,
for less of the parent's time.

``Popen`` spends Python time on every process (its arguments, the environment encoded
a variable at a time, a /dev/null and an error pipe opened, read and closed), and each
of those system calls hands the GIL over: under a hundred threads, a context switch
each. Here one ``posix_spawn`` call does in the child what ``Popen(start_new_session=True,
close_fds=True, stdin=DEVNULL, stderr=STDOUT, cwd=...)`` does: a new session, SIGPIPE and
SIGXFSZ back to their defaults, stdin on /dev/null, stdout and stderr on the given
descriptor, the working folder, every other descriptor closed, then the exec.

Needs glibc 2.34 or later (``addclosefrom_np``); elsewhere ``spawn`` always returns None.
It returns None too for anything it does not handle the way ``Popen`` would, and when the
process could not start (no such program or folder): the caller then uses ``Popen``,
which starts it or raises its usual error.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple


class Spawned:
    """A process started by ``spawn``: the part of ``Popen`` that ``run_captured`` uses."""

    __slots__ = ("pid", "returncode")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self) -> int:
        """Reap the process: its return code (``-N`` for signal N), as ``Popen.wait``."""
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # SIGCHLD ignored, reaped already: Popen says 0 too
                status = 0
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def _libc() -> tuple[ctypes.CDLL, ctypes.CDLL] | None:
    """glibc twice: calls that keep the GIL (quick ones), and ``posix_spawn``, which
    releases it while the child starts. None without a glibc that has what we need."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        quick = ctypes.PyDLL(None, use_errno=True)
        slow = ctypes.CDLL(None, use_errno=True)
        quick.posix_spawn_file_actions_addclosefrom_np  # noqa: B018 (glibc >= 2.34)
        quick.posix_spawn_file_actions_addchdir_np  # noqa: B018 (glibc >= 2.29)
        slow.posix_spawn  # noqa: B018
    except (OSError, AttributeError):
        return None
    return quick, slow


_P = ctypes.c_void_p
_INT = ctypes.c_int
# Opaque glibc structures, given more room than they take (80, 336 and 128 bytes on
# 64-bit glibc): only their address is passed.
_Actions = ctypes.c_char * 256
_Attributes = ctypes.c_char * 1024
_SigSet = ctypes.c_char * 256
_SETSIGDEF = 0x04  # POSIX_SPAWN_SETSIGDEF
_SETSID = 0x80  # POSIX_SPAWN_SETSID
_DEVNULL = os.devnull.encode()
_INTERNAL = range(32, signal.SIGRTMIN)  # Linux's first real-time signals, kept by glibc
# What Popen's restore_signals puts back to default: Python ignores them, exec keeps that.
_RESTORED = tuple(
    getattr(signal, n) for n in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, n)
)


class _Glibc:
    """The glibc functions, typed, and the spawn attributes every command shares."""

    def __init__(self, quick: ctypes.CDLL, slow: ctypes.CDLL) -> None:
        def fn(lib: ctypes.CDLL, name: str, *args: type) -> ctypes._NamedFuncPointer:
            f: ctypes._NamedFuncPointer = getattr(lib, name)
            f.argtypes = args
            f.restype = _INT
            return f

        self.init = fn(quick, "posix_spawn_file_actions_init", _P)
        self.destroy = fn(quick, "posix_spawn_file_actions_destroy", _P)
        self.addopen = fn(
            quick,
            "posix_spawn_file_actions_addopen",
            _P,
            _INT,
            ctypes.c_char_p,
            _INT,
            ctypes.c_uint,
        )
        self.adddup2 = fn(quick, "posix_spawn_file_actions_adddup2", _P, _INT, _INT)
        self.addchdir = fn(quick, "posix_spawn_file_actions_addchdir_np", _P, ctypes.c_char_p)
        self.addclosefrom = fn(quick, "posix_spawn_file_actions_addclosefrom_np", _P, _INT)
        self.spawn = fn(slow, "posix_spawn", ctypes.POINTER(_INT), ctypes.c_char_p, _P, _P, _P, _P)
        # Set once, read by every spawn (posix_spawn only reads them).
        sigdefault = _SigSet()
        checks = [
            fn(quick, "sigemptyset", _P)(sigdefault),
            *(fn(quick, "sigaddset", _P, _INT)(sigdefault, s) for s in _RESTORED),
        ]
        # glibc's own signals (thread cancellation, setxid), which sigaddset refuses: its
        # posix_spawn would leave them ignored in the program, Popen leaves them default.
        words = ctypes.cast(sigdefault, ctypes.POINTER(ctypes.c_ulong))
        bits = 8 * ctypes.sizeof(ctypes.c_ulong)
        for s in _INTERNAL:
            words[(s - 1) // bits] |= 1 << ((s - 1) % bits)
        self.attributes = _Attributes()
        checks += [
            fn(quick, "posix_spawnattr_init", _P)(self.attributes),
            fn(quick, "posix_spawnattr_setsigdefault", _P, _P)(self.attributes, sigdefault),
            fn(quick, "posix_spawnattr_setflags", _P, ctypes.c_short)(
                self.attributes, _SETSIGDEF | _SETSID
            ),
        ]
        if any(checks):
            raise OSError("cannot set posix_spawn's attributes")
        self.environ = _P.in_dll(quick, "environ")


def _load() -> _Glibc | None:
    libs = _libc()
    if libs is None:
        return None
    try:
        return _Glibc(*libs)
    except (OSError, AttributeError, ValueError):
        return None


_GLIBC = _load()


def spawn(
    executable: str,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    stdout: int,
    cwd: str | None,
    extra: tuple[str, str] | None = None,
) -> Spawned | None:
    """Start ``executable`` (a path: it is not looked up) with ``args`` as ``Popen`` would
    with the flags above; None when it cannot (the caller falls back to ``Popen``).

    ``stdout`` takes both stdout and stderr; ``env`` None is this process's environment.
    ``extra`` is one more variable, set after ``env``'s (a command's own ``FOUR_RUN``
    mark): ``env`` is then mostly the same from command to command, and its encoding is
    kept.
    """
    glibc = _GLIBC
    if glibc is None or stdout <= 2:  # a pipe on 0-2 needs Popen's special cases
        return None
    if extra is not None and (env is None or extra[0] in env):  # rare: encoded each time
        env, extra = {**(os.environ if env is None else env), extra[0]: extra[1]}, None
    try:
        # str.encode, not os.fsencode (two more calls each); bytes or a path go to Popen.
        path = executable.encode(_FS_ENCODING, _FS_ERRORS)
        argv = [a.encode(_FS_ENCODING, _FS_ERRORS) for a in args]
        folder = None if cwd is None else cwd.encode(_FS_ENCODING, _FS_ERRORS)
        environment = None if env is None else _environment(env, extra)
    except (AttributeError, TypeError, UnicodeError):
        return None
    # A NUL would cut a C string short: Popen raises.
    if b"\0" in path or b"\0" in b"".join(argv) or (folder is not None and b"\0" in folder):
        return None
    if environment is None and env is not None:
        return None
    # Hooks see what Popen shows (the whole environment).
    shown = env if extra is None or env is None else {**env, extra[0]: extra[1]}
    sys.audit("subprocess.Popen", executable, args, cwd, shown)
    actions, shared = _file_actions(glibc, stdout, folder)
    if actions is None:
        return None
    try:
        c_argv = (ctypes.c_char_p * (len(argv) + 1))(*argv)
        c_envp = glibc.environ.value if environment is None else environment[0]
        pid = _INT()
        if glibc.spawn(ctypes.byref(pid), path, actions, glibc.attributes, c_argv, c_envp):
            return None  # glibc reaped the child that could not exec
        return Spawned(pid.value)
    finally:
        if not shared:
            with contextlib.suppress(Exception):
                glibc.destroy(actions)


_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()

_ACTIONS: dict[tuple[int, bytes | None], ctypes.Array[ctypes.c_char]] = {}
"""The file actions for each (stdout, folder) seen, built once (six C calls): posix_spawn
only reads them, so threads share them. Never destroyed, so never more than
``_MAX_ACTIONS``: past that, each command builds and destroys its own."""
_MAX_ACTIONS = 1024


def _file_actions(
    glibc: _Glibc, stdout: int, folder: bytes | None
) -> tuple[ctypes.Array[ctypes.c_char] | None, bool]:
    """The child's file actions (None if glibc refused them), and whether they are shared
    (else the caller destroys them)."""
    key = (stdout, folder)
    actions = _ACTIONS.get(key)
    if actions is not None:
        return actions, True
    actions = _Actions()
    if glibc.init(actions):
        return None, False
    failed = (
        glibc.addopen(actions, 0, _DEVNULL, os.O_RDWR, 0)
        or glibc.adddup2(actions, stdout, 1)
        or glibc.adddup2(actions, stdout, 2)
        or (folder is not None and glibc.addchdir(actions, folder))
        or glibc.addclosefrom(actions, 3)
    )
    if failed or len(_ACTIONS) >= _MAX_ACTIONS:
        if failed:
            glibc.destroy(actions)
            return None, False
        return actions, False
    shared = _ACTIONS.setdefault(key, actions)  # another thread may have been first
    if shared is not actions:
        glibc.destroy(actions)
    return shared, True


class _Encoded(NamedTuple):
    """An environment as posix_spawn takes it."""

    array: ctypes.Array[ctypes.c_char_p]
    """The ``NAME=value`` entries, NULL-ended (it keeps them alive)."""
    pointers: bytes
    """The array's bytes without its NULL, then room for one more entry and the NULL."""


_ENVIRONMENTS: dict[tuple[tuple[str, str], ...], _Encoded | None] = {}
"""Encoded environments (None: one Popen refuses), by their variables: commands get the
same ones each time, apart from ``extra``."""
_NULLS = bytes(2 * ctypes.sizeof(ctypes.c_char_p))


def _environment(
    env: Mapping[str, str], extra: tuple[str, str] | None
) -> tuple[ctypes.Array[ctypes.c_char_p], object] | None:
    """``env`` then ``extra`` as the NULL-ended array of ``NAME=value`` entries that
    posix_spawn takes, with what keeps the entries alive while it runs; None for what
    Popen refuses (a NUL, or a "=" in a name)."""
    items = tuple(env.items())  # a key built in C, not a Python call per variable
    try:
        encoded = _ENVIRONMENTS[items]
    except KeyError:
        encoded = _encode(items)
        if len(_ENVIRONMENTS) >= 64:
            _ENVIRONMENTS.clear()
        _ENVIRONMENTS[items] = encoded
    if encoded is None or extra is None:
        return None if encoded is None else (encoded.array, encoded.array)
    more = _entry(*extra)
    if not more:
        return None
    # The cached pointers copied in C (each entry set from Python is a conversion),
    # then the extra entry; the cached array keeps the others alive.
    count = len(items)
    array = (ctypes.c_char_p * (count + 2)).from_buffer_copy(encoded.pointers)
    array[count] = more
    return array, encoded.array


def _encode(items: tuple[tuple[str, str], ...]) -> _Encoded | None:
    entries = [_entry(name, value) for name, value in items]
    if not all(entries):
        return None
    array = (ctypes.c_char_p * (len(entries) + 1))(*entries)
    pointers = bytes(array)[: len(entries) * ctypes.sizeof(ctypes.c_char_p)] + _NULLS
    return _Encoded(array, pointers)


def _entry(name: str, value: str) -> bytes:
    """``NAME=value`` encoded, or b"" for what Popen refuses. (The file system encoding
    is ASCII-compatible: "=" and NUL are the same single byte encoded.)"""
    if "=" in name or "\0" in name or "\0" in value:
        return b""
    return f"{name}={value}".encode(_FS_ENCODING, _FS_ERRORS)
