"""Copying a workspace for a check: holes stay holes (a plain copy writes them out as
zeros), and the data copied is bounded (docs/security.md)."""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass, field

from four._files import ANY_SIZE, open_regular, size_text

COPY_LIMIT = 4 << 30
"""The data a check's copy of a workspace may hold (holes are free)."""


class CopyTooLarge(ValueError):
    """The data to copy is over the limit; the message is one line naming it."""


@dataclass(slots=True)
class Allowance:
    """Bytes of data a copy may still write (``copy_sparse`` takes from it)."""

    limit: int = field(default_factory=lambda: COPY_LIMIT)  # read when made
    used: int = 0

    def take(self, n: int, path: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise CopyTooLarge(
                f"the copy passed {size_text(self.limit)} of data at {path}: the check's copy "
                "of the workspace is limited to that (remove large files from the workspace)"
            )


def copy_sparse(source: str, target: str, allowance: Allowance | None = None) -> str:
    """Copy the regular file ``source`` to ``target`` as ``shutil.copy2`` does (its mode
    and times too), writing only its data: its holes stay holes. Returns ``target``
    (``shutil.copytree``'s ``copy_function``).

    >>> import tempfile
    >>> folder = tempfile.mkdtemp(); big = os.path.join(folder, "big")
    >>> open(big, "wb").close(); os.truncate(big, 1 << 30)  # 1 GiB of hole
    >>> copied = copy_sparse(big, os.path.join(folder, "copy"))
    >>> os.stat(copied).st_size, os.stat(copied).st_blocks
    (1073741824, 0)
    >>> shutil.rmtree(folder)
    """
    allowance = allowance if allowance is not None else Allowance()
    with open_regular(source, max_bytes=ANY_SIZE, follow=False) as src:
        fd = src.fileno()
        size = os.fstat(fd).st_size
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            for start, end in _extents(fd, size):
                allowance.take(end - start, source)
                _copy_range(fd, out, start, end)
            os.ftruncate(out, size)  # a hole at the end stays one
        finally:
            os.close(out)
    shutil.copystat(source, target, follow_symlinks=False)
    return target


def _extents(fd: int, size: int) -> list[tuple[int, int]]:
    """The (start, end) of each run of data in the file; all of it where the file
    system cannot say where its holes are."""
    found: list[tuple[int, int]] = []
    at = 0
    try:
        while at < size:
            start = os.lseek(fd, at, os.SEEK_DATA)
            at = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            found.append((start, at))
    except OSError as exc:  # ENXIO: nothing but a hole from here
        if exc.errno != errno.ENXIO:
            return [(0, size)]  # SEEK_DATA unsupported: copy it whole
    return found


def _copy_range(src: int, dst: int, start: int, end: int) -> None:
    os.lseek(dst, start, os.SEEK_SET)
    while start < end and (n := os.sendfile(dst, src, start, end - start)):  # 0: it shrank
        start += n
