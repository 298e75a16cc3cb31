"""Files that others wrote, opened as records: a regular file only, never waiting, bounded
(a FIFO, a device, a socket or a link loop is refused in one line: docs/security.md);
folders walked without recursion and without following links."""

from __future__ import annotations

import errno
import os
import select
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MAX_BYTES = 256 * 1024 * 1024
"""The largest record read unless the caller raises it (``max_bytes=``; ``--max-size``)."""

ANY_SIZE = 2**63 - 1
"""No limit: for a reader that reads only a file's head, whatever its size."""

GROUP_SUFFIX = ".attempts.json"
"""A search's group record (``four run --attempts``): it links runs, it is not one."""


class Unreadable(ValueError):
    """A file that is not opened as a record; the message is one line naming it.
    ``errno`` is the open's error, ``mode`` what the file is when it is not regular."""

    def __init__(self, message: str, errno: int | None = None, mode: int | None = None) -> None:
        super().__init__(message)
        self.errno, self.mode = errno, mode


class TooLarge(Unreadable):
    """A regular file larger than the limit the reader was given."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size_text(size)}, over the limit of {size_text(limit)}")
        self.path, self.size, self.limit = path, size, limit


def open_regular(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = MAX_BYTES,
    follow: bool = True,
    dir_fd: int | None = None,
) -> BinaryIO:
    """``path`` opened for reading, if it is a regular file of at most ``max_bytes``;
    else ``Unreadable`` with one line. Opened non-blocking, so a FIFO is refused instead
    of waited on; ``follow=False`` refuses a symbolic link too (a folder's entries).

    >>> open_regular("/dev/null")
    Traceback (most recent call last):
    ...
    four._files.Unreadable: /dev/null is a character device, not a regular file
    """
    flags = os.O_RDONLY | (0 if follow else os.O_NOFOLLOW)
    return os.fdopen(regular_fd(path, flags, max_bytes=max_bytes, dir_fd=dir_fd), "rb")


def regular_fd(
    path: str | os.PathLike[str],
    flags: int,
    *,
    max_bytes: int = MAX_BYTES,
    dir_fd: int | None = None,
    mode: int = 0o644,
) -> int:
    """``open_regular``'s blocking descriptor, opened with the caller's ``flags`` (reading,
    appending, creating)."""
    name = os.fspath(path)
    fd = _open(name, flags, mode, dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            target = _target(name, dir_fd)
            what = kind(info.st_mode) + (f" (a symbolic link to {target})" if target else "")
            raise Unreadable(f"{name} is {what}, not a regular file", mode=info.st_mode)
        if info.st_size > max_bytes:
            raise TooLarge(name, info.st_size, max_bytes)
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_at_most(f: BinaryIO, limit: int) -> bytes:
    """The rest of the open file ``f``, at most ``limit`` bytes. Asked for ``limit`` at
    once, ``read`` would allocate that much first (256 MiB for a few bytes' file)."""
    size = max(0, os.fstat(f.fileno()).st_size - f.tell())
    data = f.read(min(size + 1, limit))
    if len(data) > size and len(data) < limit:  # it grew since the stat
        data += f.read(limit - len(data))
    return data


def read_regular(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES, follow: bool = True
) -> bytes:
    """The bytes of ``path``, refused as ``open_regular`` refuses (also when it grew
    past ``max_bytes`` while read).

    >>> read_regular("missing.json")
    Traceback (most recent call last):
    ...
    four._files.Unreadable: cannot read missing.json: No such file or directory
    """
    with open_regular(path, max_bytes=max_bytes, follow=follow) as f:
        data = read_at_most(f, max_bytes + 1)
    if len(data) > max_bytes:
        raise TooLarge(os.fspath(path), len(data), max_bytes)
    return data


def read_given(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES, wait: float = 10.0
) -> bytes:
    """A file named on a command line (``--system``): a regular file as ``read_regular``
    reads it, or a pipe (``<(command)``) read to its end within ``wait`` seconds; a FIFO
    nothing writes to, a device or a socket is refused with one line, never waited on.

    >>> read_given("/dev/null")
    Traceback (most recent call last):
    ...
    four._files.Unreadable: /dev/null is a character device, not a regular file
    """
    name = os.fspath(path)
    fd = _open(name, os.O_RDONLY, 0o644, None)
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            return _drain(fd, name, max_bytes, time.monotonic() + wait)
    finally:
        os.close(fd)
    return read_regular(name, max_bytes=max_bytes)  # opened again: refused as a record is


def _open(name: str, flags: int, mode: int, dir_fd: int | None) -> int:
    try:
        return os.open(name, flags | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise Unreadable(_refusal(name, exc, dir_fd), exc.errno) from None


def _drain(fd: int, name: str, max_bytes: int, deadline: float) -> bytes:
    """A pipe's bytes up to its end (every writer gone), by ``deadline``."""
    data = bytearray()
    while True:
        try:
            block = os.read(fd, 1 << 16)
        except BlockingIOError:  # its writer has not written yet
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise Unreadable(f"{name} is a pipe that did not end in time") from None
            continue
        if not block:
            break
        data += block
        if len(data) > max_bytes:
            raise TooLarge(name, len(data), max_bytes)
    if not data:
        raise Unreadable(f"{name} is a FIFO (named pipe) that nothing writes to", mode=stat.S_IFIFO)
    return bytes(data)


@dataclass(frozen=True, slots=True)
class Listing:
    """One folder as a walk found it: its regular files and, named with why, the
    entries that are neither a regular file nor a folder (FIFOs, devices, sockets,
    symbolic links); all sorted by name."""

    folder: Path
    files: tuple[str, ...]
    others: tuple[tuple[str, str], ...]

    def names(self) -> frozenset[str]:
        """Every entry's name but the subfolders'."""
        return frozenset(self.files) | {name for name, _ in self.others}


def walk(root: str | os.PathLike[str]) -> Iterator[Listing]:
    """Each folder under ``root`` (``root`` first, then in name order), without
    recursion and without following links to folders; a folder that cannot be listed
    (gone, no permission, a path too long) is left out.

    >>> [listing.folder.name for listing in walk("/nonexistent")]
    []
    """
    stack = [Path(root)]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        files: list[str] = []
        others: list[tuple[str, str]] = []
        folders: list[Path] = []
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError as exc:  # gone since listed
                others.append((entry.name, _refusal(entry.path, exc, None)))
                continue
            if stat.S_ISDIR(mode):
                folders.append(Path(entry.path))
            elif stat.S_ISREG(mode):
                files.append(entry.name)
            elif stat.S_ISLNK(mode):
                broken = "" if os.path.exists(entry.path) else "broken "
                what = f"a {broken}symbolic link (to {_target(entry.path) or '?'})"
                others.append((entry.name, f"{entry.path} is {what}, not followed in a folder"))
            else:
                others.append((entry.name, f"{entry.path} is {kind(mode)}, not a regular file"))
        stack.extend(reversed(folders))
        yield Listing(here, tuple(files), tuple(others))


def is_group_record(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is named as a search's group record (``*.attempts.json``).

    >>> is_group_record("runs/g1.attempts.json"), is_group_record("runs/r1.json")
    (True, False)
    """
    return os.fspath(path).endswith(GROUP_SUFFIX)


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


def kind(mode: int) -> str:
    """What a file that is not a regular one is, in words.

    >>> kind(stat.S_IFIFO)
    'a FIFO (named pipe)'
    """
    return _KINDS.get(stat.S_IFMT(mode), "not a file")


def size_text(n: int) -> str:
    """A size in words: bytes, or MiB with one decimal.

    >>> size_text(3 * 1024 * 1024), size_text(12)
    ('3.0 MiB', '12 bytes')
    """
    return f"{n / 1024 / 1024:.1f} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def _refusal(name: str, exc: OSError, dir_fd: int | None) -> str:
    """One line for an open that failed, naming what the file is where that explains it."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        target = os.readlink(name, dir_fd=dir_fd)
        if exc.errno == errno.ENOENT:
            return f"{name} is a broken symbolic link (to {target})"
        if exc.errno == errno.ELOOP:
            try:
                os.stat(name, dir_fd=dir_fd)
            except OSError as again:
                if again.errno == errno.ELOOP:
                    return f"{name} is a symbolic link loop (to {target})"
            return f"{name} is a symbolic link (to {target}), not followed here"
    if info is not None and exc.errno == errno.ENXIO:  # the open of a socket
        return f"{name} is {kind(info.st_mode)}, not a regular file"
    return f"cannot read {name}: {exc.strerror or exc}"


def _target(name: str, dir_fd: int | None = None) -> str | None:
    """Where the link ``name`` points; None when it is no link (or gone since listed)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None
