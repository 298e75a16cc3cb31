"""The starting workspace of a search: copied once, handed out fresh to every attempt, and
the chosen attempt's work put back into the user's folder at the end.

The user's folder is not written while the attempts run: each attempt works in a copy of
the folder as it was when the search began (``fresh``), so no attempt sees another's
files, and at the end the user's folder is made to hold the chosen attempt's work and
nothing else (``promote``): files the attempt deleted are deleted, files it changed or
made are written, files it did not touch are left alone (their times too). Folders
named in ``keep`` (the runs' own output folder, when it lies inside the workspace) are
neither copied nor touched.

Files with holes (``truncate -s 2G``) stay sparse in every copy (``four._sparse``): the
bound on what a workspace may hold (``max_bytes``) counts the data its files hold on disk,
not their length, and each copy stops with one line once its data passes that bound.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from four._files import ANY_SIZE
from four._sparse import Allowance, CopyTooLarge, copy_sparse

DEFAULT_MAX_BYTES = 1 << 30
"""The data a workspace may hold to be copied for attempts (1 GiB; holes are free); past
it the search is refused with the size, not started: a copy per attempt of the user's
home is no search."""
DEFAULT_MAX_FILES = 100_000


class WorkspaceTooLarge(ValueError):
    """The workspace is over the size a search copies for each attempt."""


class Pristine:
    """A copy of ``folder`` as it was at the start, from which each attempt gets its own.

    >>> import tempfile, pathlib
    >>> user = pathlib.Path(tempfile.mkdtemp()); (user / "a.txt").write_text("start")
    5
    >>> start = Pristine(user)
    >>> one = start.fresh(1); (one / "a.txt").write_text("attempt 1")
    9
    >>> (start.fresh(2) / "a.txt").read_text(), (user / "a.txt").read_text()
    ('start', 'start')
    >>> start.promote(one); (user / "a.txt").read_text()
    'attempt 1'
    >>> start.close()
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        keep: tuple[str | os.PathLike[str], ...] = (),
        scratch: str | os.PathLike[str] | None = None,
        max_bytes: int | None = None,
        max_files: int | None = None,
    ) -> None:
        max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
        max_files = DEFAULT_MAX_FILES if max_files is None else max_files
        self.folder = Path(folder).resolve()
        if not self.folder.is_dir():
            raise NotADirectoryError(f"the workspace {folder} is not a folder")
        kept = {self._relative(Path(k)) for k in keep}
        if "." in kept:  # promote would delete the runs' own records
            raise ValueError(
                f"the workspace {self.folder} is the runs' output folder itself: "
                "give the runs a folder of their own"
            )
        self._keep = frozenset(k for k in kept if k is not None)
        self._max_bytes = max_bytes
        files, size = _measure(self.folder, self._skip)
        if size > max_bytes or files > max_files:
            raise WorkspaceTooLarge(
                f"the workspace {self.folder} holds {files:,} files, {size / 2**20:,.0f} MiB: "
                f"each attempt works in a copy of it, and at most {max_files:,} files, "
                f"{max_bytes / 2**20:,.0f} MiB are copied; give a smaller folder"
            )
        self.scratch = Path(tempfile.mkdtemp(prefix="four-attempts-", dir=scratch))
        self.start = self.scratch / "start"
        try:
            _copy(self.folder, self.start, self._skip, Allowance(max_bytes))
        except CopyTooLarge as exc:  # it grew while measured and copied
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise WorkspaceTooLarge(str(exc)) from None

    def fresh(self, index: int) -> Path:
        """A new copy of the start for attempt ``index`` (``scratch/attempt-<index>``)."""
        copy = self.scratch / f"attempt-{index}"
        if copy.exists():
            shutil.rmtree(copy)
        _copy(self.start, copy, lambda rel: False, Allowance(self._max_bytes))
        return copy

    def promote(self, attempt: str | os.PathLike[str]) -> None:
        """Make the user's folder hold what ``attempt``'s folder holds, and only that."""
        _sync(Path(attempt), self.folder, self._skip)

    def changed(self, copy: str | os.PathLike[str]) -> list[str]:
        """The files (and links) that ``copy`` made, changed or deleted, against the start.

        >>> import tempfile, pathlib
        >>> user = pathlib.Path(tempfile.mkdtemp()); (user / "a.txt").write_text("start")
        5
        >>> start = Pristine(user); one = start.fresh(1)
        >>> start.changed(one)
        []
        >>> (one / "b.txt").write_text("new"); (one / "a.txt").unlink(); start.changed(one)
        3
        ['a.txt', 'b.txt']
        >>> start.close()
        """
        before = {rel: info for rel, info in _walk(self.start, None) if _leaf(info)}
        after = {rel: info for rel, info in _walk(Path(copy), None) if _leaf(info)}
        return sorted(
            rel
            for rel in before.keys() | after.keys()
            if rel not in before
            or rel not in after
            or not _same_entry(self.start / rel, Path(copy) / rel, before[rel], after[rel])
        )

    def close(self) -> None:
        """Delete the copies (the start and every attempt's folder)."""
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _skip(self, rel: str) -> bool:
        return rel in self._keep

    def _relative(self, path: Path) -> str | None:
        """``path`` relative to the workspace, if it lies inside it."""
        try:
            return str(path.expanduser().resolve().relative_to(self.folder))
        except ValueError:
            return None


def _entries(folder: Path, rel: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``folder`` (not following links), parents before children."""
    here = folder / rel if rel else folder
    with os.scandir(here) as it:
        listed = sorted(it, key=lambda e: e.name)
    for entry in listed:
        path = f"{rel}/{entry.name}" if rel else entry.name
        info = entry.stat(follow_symlinks=False)
        yield path, info
        if stat.S_ISDIR(info.st_mode):
            yield from _entries(folder, path)


def _measure(folder: Path, skip: object) -> tuple[int, int]:
    """The entries under ``folder`` and the bytes of data its regular files hold on disk
    (a file's holes hold none)."""
    files = size = 0
    for _rel, info in _walk(folder, skip):
        files += 1
        size += _data(info) if stat.S_ISREG(info.st_mode) else 0
    return files, size


def _data(info: os.stat_result) -> int:
    """About the bytes of data a regular file holds: its length, less its holes.

    >>> import tempfile
    >>> with tempfile.TemporaryFile() as f:
    ...     _ = f.truncate(1 << 30)
    ...     os.fstat(f.fileno()).st_size, _data(os.fstat(f.fileno()))
    (1073741824, 0)
    """
    return min(info.st_size, info.st_blocks * 512)


def _walk(folder: Path, skip: object) -> Iterator[tuple[str, os.stat_result]]:
    """``_entries`` without what ``skip`` names (and what lies under it)."""
    skipped: list[str] = []
    for rel, info in _entries(folder):
        if any(rel == s or rel.startswith(s + "/") for s in skipped):
            continue
        if callable(skip) and skip(rel):
            skipped.append(rel)
            continue
        yield rel, info


def _copy(source: Path, target: Path, skip: object, allowance: Allowance) -> None:
    """``source`` copied to the new folder ``target``: regular files (with their mode and
    times, their holes kept as holes, their data taken from ``allowance``), folders and
    symbolic links (as links); FIFOs, sockets and devices are left out (copying one
    blocks, or fails)."""
    target.mkdir(parents=True)
    shutil.copystat(source, target)
    folders: list[tuple[Path, Path]] = []
    for rel, info in _walk(source, skip):
        _put(source / rel, target / rel, info, allowance)
        if stat.S_ISDIR(info.st_mode):
            folders.append((source / rel, target / rel))
    for src, dst in reversed(folders):  # a folder's times, once its files are in
        shutil.copystat(src, dst)


def _put(source: Path, target: Path, info: os.stat_result, allowance: Allowance) -> None:
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        target.mkdir()
    elif stat.S_ISLNK(mode):
        os.symlink(os.readlink(source), target)
    elif stat.S_ISREG(mode):
        copy_sparse(str(source), str(target), allowance)


def _sync(source: Path, target: Path, skip: object) -> None:
    """Make ``target`` hold what ``source`` holds: entries that are not in ``source`` (or
    are of another kind there) removed, files that differ written, the rest untouched."""
    wanted = {rel: info for rel, info in _walk(source, skip)}
    for rel, info in reversed(list(_walk(target, skip))):  # children before parents
        other = wanted.get(rel)
        if other is None or stat.S_IFMT(other.st_mode) != stat.S_IFMT(info.st_mode):
            _remove(target / rel, info)
    for rel, info in wanted.items():
        path = target / rel
        try:
            now: os.stat_result | None = path.lstat()
        except FileNotFoundError:
            now = None
        if stat.S_ISDIR(info.st_mode):
            if now is None:
                path.mkdir()
            shutil.copystat(source / rel, path)
        elif stat.S_ISLNK(info.st_mode):
            if now is not None and os.readlink(path) == os.readlink(source / rel):
                continue
            if now is not None:
                path.unlink()
            os.symlink(os.readlink(source / rel), path)
        elif stat.S_ISREG(info.st_mode):
            if now is None or not _same_file(source / rel, path, info, now):
                _replace(source / rel, path)
            elif stat.S_IMODE(now.st_mode) != stat.S_IMODE(info.st_mode):
                os.chmod(path, stat.S_IMODE(info.st_mode))


def _leaf(info: os.stat_result) -> bool:
    return stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)


def _same_entry(a: Path, b: Path, a_info: os.stat_result, b_info: os.stat_result) -> bool:
    """Two files, or two links, that hold the same."""
    if stat.S_IFMT(a_info.st_mode) != stat.S_IFMT(b_info.st_mode):
        return False
    if stat.S_ISLNK(a_info.st_mode):
        return os.readlink(a) == os.readlink(b)
    return _same_file(a, b, a_info, b_info)


def _same_file(a: Path, b: Path, a_info: os.stat_result, b_info: os.stat_result) -> bool:
    if a_info.st_size != b_info.st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            block = fa.read(1 << 20)
            if block != fb.read(1 << 20):
                return False
            if not block:
                return True


def _replace(source: Path, target: Path) -> None:
    """``target`` replaced whole by a copy of ``source``, its holes kept (a temporary
    name renamed over it, so a reader never sees half a file)."""
    temporary = target.with_name(f".{target.name}.four-{os.getpid()}")
    copy_sparse(str(source), str(temporary), Allowance(ANY_SIZE))
    os.replace(temporary, target)


def _remove(path: Path, info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(OSError):  # it holds a kept folder (the runs' output)
            path.rmdir()  # its entries went first
    else:
        path.unlink()
