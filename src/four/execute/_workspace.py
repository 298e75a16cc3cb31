"""A folder the agent's file edits may change, and nothing outside it.

Every path is walked one component at a time from the workspace's root with directory
descriptors and ``O_NOFOLLOW``: an absolute path, a ``..``, or a symlink anywhere on the
way (the file itself included) is refused, and no check-then-open race lets a symlink
swapped in meanwhile lead outside.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from returns.result import Failure, Result, Success

from four import _files as files
from four._checked import checked
from four._types import Checked

SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".venv", "venv", "__pycache__", "node_modules", "build", "dist", ".tox"}
)
"""Folders ``snapshot`` does not look into (besides every hidden one)."""

LARGEST = 64 << 20
"""Bytes of the largest file ``snapshot`` reads (a larger one is left out, with a line:
a sparse 20 GiB ``big.py`` is not read into memory)."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(Exception):
    """A path the workspace does not allow (outside it, through a symlink, not a file)."""


@dataclass(frozen=True, slots=True)
class Written(Checked):
    """What ``Workspace.write`` changed: each path's earlier bytes (None: it was created),
    and the folders it created, outermost first."""

    before: Mapping[str, bytes | None]
    folders: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Workspace:
    """The files under ``root`` that edits may read and write. See the module docstring.

    >>> import tempfile
    >>> ws = Workspace(tempfile.mkdtemp())
    >>> ws.write({"pkg/a.py": "x = 1\\n"}).map(lambda w: dict(w.before)).unwrap()
    {'pkg/a.py': None}
    >>> ws.refusal("../etc/passwd")
    "../etc/passwd: the path leaves the workspace ('..' is not allowed)"
    """

    root: Path

    @checked
    def __init__(self, root: str | os.PathLike[str]) -> None:
        resolved = Path(root).resolve()
        if not resolved.is_dir():
            raise ValueError(f"workspace: {str(root)!r} is not a folder; create it first")
        object.__setattr__(self, "root", resolved)

    @staticmethod
    def refusal(path: str) -> str | None:
        """Why ``path`` may not be edited, judged from its text alone; None if it may."""
        if not path or "\0" in path:
            return f"{path!r}: not a file path"
        if path.startswith(("/", "~")) or PurePosixPath(path).is_absolute():
            return f"{path}: the path leaves the workspace (write paths relative to it)"
        if ".." in PurePosixPath(path).parts:
            return f"{path}: the path leaves the workspace ('..' is not allowed)"
        if path.endswith("/"):
            return f"{path}: a folder, not a file"
        return None

    def read(self, path: str) -> str | None:
        """The text of ``path``, or None if it does not exist. Raises ``Refused``."""
        data = self.read_bytes(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"{path}: not UTF-8 text, so it cannot be edited") from None

    def read_bytes(self, path: str) -> bytes | None:
        """The bytes of ``path``, or None if it does not exist. Raises ``Refused``."""
        try:
            with self._parent(path) as (folder, name):
                opened = files.open_regular(name, max_bytes=LARGEST, follow=False, dir_fd=folder)
                with opened:
                    return opened.read(LARGEST)
        except files.Unreadable as exc:
            if exc.errno == errno.ENOENT:
                return None
            if exc.mode is not None:
                raise Refused(f"{path}: {_kind(exc.mode)}, not a regular file") from None
            if isinstance(exc, files.TooLarge):
                raise Refused(f"{path}: over {LARGEST >> 20} MiB, too large to edit") from None
            raise Refused(_why(path, exc.errno)) from None
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise Refused(_why(path, exc.errno)) from None

    def write(self, texts: Mapping[str, str]) -> Result[Written, str]:
        """Write every text of ``texts`` (path -> new content), all or none."""
        try:
            before = {path: self.read_bytes(path) for path in texts}
        except Refused as exc:
            return Failure(f"{exc}; no file was changed")
        done: dict[str, bytes | None] = {}
        folders: list[str] = []
        try:
            for path, text in texts.items():
                self._put(path, text.encode("utf-8"), folders)
                done[path] = before[path]
        except (OSError, Refused) as exc:
            self.restore(Written(done, tuple(folders)))
            reason = str(exc) if isinstance(exc, Refused) else _why(path, exc.errno)
            return Failure(f"{reason}; no file was changed")
        return Success(Written(before, tuple(folders)))

    def restore(self, written: Written) -> None:
        """Put back what ``write`` changed: earlier contents, created files removed."""
        for path, data in written.before.items():
            with contextlib.suppress(OSError, Refused):
                if data is None:
                    with self._parent(path) as (fd, name):
                        os.unlink(name, dir_fd=fd)
                else:
                    self._put(path, data, [])
        for made in reversed(written.folders):  # created by the write: gone if empty
            with contextlib.suppress(OSError, Refused), self._parent(made) as (fd, name):
                os.rmdir(name, dir_fd=fd)

    def snapshot(self, suffixes: tuple[str, ...]) -> dict[str, bytes]:
        """The bytes of each file ``files`` names, by relative path."""
        found: dict[str, bytes] = {}
        for path in self.files(suffixes):
            with contextlib.suppress(Refused):
                data = self.read_bytes(path)
                if data is not None:
                    found[path] = data
        return found

    def files(self, suffixes: tuple[str, ...]) -> Iterator[str]:
        """Relative paths of the regular files named with one of ``suffixes`` (hidden folders,
        ``SKIPPED_DIRS`` and files over ``LARGEST`` bytes left out), sorted per folder."""
        for path, found in self._named(suffixes):
            if stat.S_ISREG(found.st_mode) and found.st_size <= LARGEST:
                yield path

    def special(self, suffixes: tuple[str, ...]) -> list[str]:
        """A line for each file named like one of ``suffixes`` that ``files`` leaves out but
        a symlink: a FIFO, socket or device (``"x.py: a FIFO"``), or one over ``LARGEST``."""
        lines = []
        for path, found in self._named(suffixes):
            if stat.S_ISREG(found.st_mode) and found.st_size > LARGEST:
                lines.append(f"{path}: {found.st_size} bytes, over the {LARGEST} read")
            elif not stat.S_ISREG(found.st_mode) and not stat.S_ISLNK(found.st_mode):
                lines.append(f"{path}: {_kind(found.st_mode)}")
        return lines

    def _named(self, suffixes: tuple[str, ...]) -> Iterator[tuple[str, os.stat_result]]:
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
            base = Path(folder)
            for name in sorted(names):
                if not name.endswith(suffixes):
                    continue
                full = base / name
                try:
                    found = full.lstat()
                except OSError:
                    continue
                yield full.relative_to(self.root).as_posix(), found

    def _put(self, path: str, data: bytes, created: list[str]) -> None:
        with self._parent(path, created) as (folder, name):
            mode = 0o644
            with contextlib.suppress(FileNotFoundError):
                old = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if not stat.S_ISREG(old.st_mode):
                    raise Refused(f"{path}: not a regular file")
                mode = stat.S_IMODE(old.st_mode)
            temporary = f".four-{os.urandom(6).hex()}.tmp"  # short: any name fits beside it
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temporary, flags, mode, dir_fd=folder)
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                    file.flush()
                    # A fine-grained mtime: checkers that watch (size, mtime) see every write.
                    now = time.time_ns()
                    os.utime(file.fileno(), ns=(now, now))
                os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=folder)
                raise

    @contextlib.contextmanager
    def _parent(self, path: str, created: list[str] | None = None) -> Iterator[tuple[int, str]]:
        """A descriptor of the folder holding ``path``, walked from the root without
        symlinks, and its name there. With ``created``, missing folders are made and
        added to it. Raises ``Refused`` for a path that may not be edited."""
        *parts, name = _parts(path)
        fd = os.open(self.root, _DIR)
        try:
            for depth, part in enumerate(parts):
                try:
                    child = os.open(part, _DIR, dir_fd=fd)
                except FileNotFoundError:
                    if created is None:
                        raise
                    os.mkdir(part, 0o777, dir_fd=fd)
                    created.append("/".join(parts[: depth + 1]))
                    child = os.open(part, _DIR, dir_fd=fd)
                os.close(fd)
                fd = child
            yield fd, name
        finally:
            os.close(fd)


def _kind(mode: int) -> str:
    """What a file that is not a regular one is, in words (``"a FIFO"``)."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a symlink",
}


def _parts(path: str) -> tuple[str, ...]:
    refused = Workspace.refusal(path)
    if refused is not None:
        raise Refused(refused)
    parts = PurePosixPath(path).parts  # ("." parts dropped)
    if not parts:
        raise Refused(f"{path!r}: not a file path")
    return parts


def _why(path: str, code: int | None) -> str:
    if code in (errno.ELOOP, errno.ENOTDIR):
        return f"{path}: the path goes through a symlink or a file, which edits may not follow"
    return f"{path}: {os.strerror(code or errno.EIO)}"
