"""Records that travel: what a worker's runs wrote (but dot files, ``write_atomic``'s),
sent on to the batch's driver as ``Piece``s and written where it is (docs/batch.md)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from four.trajectory._durable import WRITE_FLAGS, write_all, write_atomic

STREAM = ".jsonl"
CHUNK = 8 << 20
"""At most this many bytes of one file per report (the rest follows in the next)."""


@dataclass(frozen=True, slots=True)
class Piece:
    """Bytes of one file of a batch folder: ``path`` (relative, ``/``-separated) gets
    ``data`` at ``offset`` (a stream's new lines), or is replaced by it when ``whole``
    (``version``: the file's change time in ns, newest wins).

    >>> Piece("runs/a/x.jsonl", 0, b"{}\\n").whole
    False
    """

    path: str
    offset: int
    data: bytes
    whole: bool = False
    version: int = 0


_Folder = dict[str, tuple[int, int]]
"""Each file as the driver has it: (its size, its version); of a stream, the bytes sent."""


class Shipper:
    """The folders being sent on, each under a token (one attempt's): ``folder`` of the
    attempt's own scratch root ``base`` (pieces' paths are relative to ``base``, and
    ``base`` goes when the driver has it all).

    Thread-safe: runs end (``final``) while the control thread reports (``report``).

    >>> import tempfile
    >>> base = Path(tempfile.mkdtemp())
    >>> (base / "a").mkdir(); _ = (base / "a" / "s.jsonl").write_text("one\\ntw")
    >>> s = Shipper(); s.track("t", base, "a")
    >>> [(t, p.path, p.data) for t, p in s.report()]
    [('t', 'a/s.jsonl', b'one\\n')]
    >>> s.commit(); s.report()
    []
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folders: dict[str, tuple[Path, str, _Folder]] = {}  # (base, folder, had)
        self._sent: dict[str, _Folder] = {}  # what the last report sent, unacknowledged

    def track(self, token: str, base: Path, folder: str) -> None:
        with self._lock:
            self._folders[token] = (base, folder, {})

    def drop(self, token: str) -> None:
        """The driver has all of the attempt: forget it and delete its folder."""
        with self._lock:
            tracked = self._folders.pop(token, None)
            self._sent.pop(token, None)
        if tracked is not None:
            shutil.rmtree(tracked[0], ignore_errors=True)

    def report(self, ended: Collection[str] = ()) -> list[tuple[str, Piece]]:
        """What the driver lacks of every folder, by token (of the attempts ``ended``,
        every byte; of the others, whole lines and at most ``CHUNK`` bytes a file).
        What the driver then has is remembered until ``commit`` (it got the report) or
        the next ``report`` (it did not)."""
        with self._lock:
            copies = {t: (base, name, dict(had)) for t, (base, name, had) in self._folders.items()}
        pieces = [(t, p) for t, where in copies.items() for p in self._pieces(*where, t in ended)]
        with self._lock:
            self._sent = {t: where[2] for t, where in copies.items() if t in self._folders}
        return pieces

    def commit(self) -> None:
        """The driver got the last report."""
        with self._lock:
            for token, sent in self._sent.items():
                if token in self._folders:
                    self._folders[token][2].update(sent)  # (what it had, and more)
            self._sent = {}

    def final(self, token: str) -> list[Piece]:
        """All the driver lacks of one attempt's folder (its run ended): every byte,
        not one report's worth."""
        with self._lock:
            tracked = self._folders.get(token)
            had = dict(tracked[2]) if tracked is not None else {}
        return [] if tracked is None else self._pieces(tracked[0], tracked[1], had, final=True)

    def _pieces(self, base: Path, folder: str, had: _Folder, final: bool) -> list[Piece]:
        """The pieces of a folder the driver lacks, given ``had`` (updated): with
        ``final`` all of them, else one report's worth."""
        pieces = []
        for path, st in _files(base / folder):
            name = f"{folder}/{path}"
            version = st.st_mtime_ns
            if path.endswith(STREAM):
                start = had.get(name, (0, 0))[0]
                if st.st_size <= start:
                    continue
                data = _read(base / name, start, min(st.st_size - start, CHUNK))
                if data is None:
                    continue
                if not final:  # whole lines only: a reader never sees a line cut short
                    data = data[: data.rfind(b"\n") + 1]
                if data:
                    pieces.append(Piece(name, start, data))
                    had[name] = (start + len(data), version)
            elif had.get(name) != (st.st_size, version):
                data = _read(base / name, 0, st.st_size)
                if data is None:  # gone meanwhile (replaced): the next report has it
                    continue
                pieces.append(Piece(name, 0, data, whole=True, version=version))
                had[name] = (st.st_size, version)
        if final and pieces:  # (CHUNK bytes a file each time: the rest follows)
            pieces += self._pieces(base, folder, had, final)
        return pieces


class Landing:
    """Pieces written into the batch folder ``root`` (on the driver's machine): a stream's
    bytes at their offset (a reader sees whole lines), any other file replaced whole
    (written beside it, then renamed), unless the version there is newer.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> land = Landing(root)
    >>> land.put([Piece("runs/a/s.jsonl", 0, b"one\\n"), Piece("runs/a/s.jsonl", 4, b"two\\n")])
    ['runs/a/s.jsonl']
    >>> (root / "runs/a/s.jsonl").read_text()
    'one\\ntwo\\n'
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._versions: dict[str, int] = {}  # whole files landed: their version

    def put(self, pieces: Iterable[Piece]) -> list[str]:
        """Write the pieces; the paths written (each once). A piece whose path would
        leave the folder is dropped: a worker names files of its own folder only."""
        landed: dict[str, None] = {}
        for piece in pieces:
            relative = PurePosixPath(piece.path)
            if relative.is_absolute() or ".." in relative.parts or not relative.parts:
                continue
            target = self.root.joinpath(*relative.parts)
            if piece.whole and self._versions.get(piece.path, -1) > piece.version:
                continue  # an older version, late
            target.parent.mkdir(parents=True, exist_ok=True)
            if piece.whole:
                write_atomic(target.parent, target.name, piece.data)
                self._versions[piece.path] = piece.version
            else:
                fd = os.open(target, WRITE_FLAGS | os.O_CREAT, 0o644)
                try:
                    os.lseek(fd, piece.offset, os.SEEK_SET)
                    write_all(fd, piece.data)
                finally:
                    os.close(fd)
            landed[piece.path] = None
        return list(landed)


def _files(folder: Path) -> list[tuple[str, os.stat_result]]:
    """Every regular file under ``folder`` (relative ``/`` paths), dot files left out."""
    found: list[tuple[str, os.stat_result]] = []
    for here, dirs, names in os.walk(folder):  # (not into a link to a folder)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        prefix = Path(here).relative_to(folder).as_posix()
        for name in names:
            with contextlib.suppress(OSError):  # gone meanwhile
                st = os.lstat(os.path.join(here, name))
                if not name.startswith(".") and stat.S_ISREG(st.st_mode):
                    found.append((name if prefix == "." else f"{prefix}/{name}", st))
    return found


def _read(path: Path, offset: int, size: int) -> bytes | None:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(size)
    except OSError:
        return None
