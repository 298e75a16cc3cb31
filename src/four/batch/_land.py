"""Where travelling records land: the batch folder on the driver's machine.

``Landing`` writes the ``Piece``s workers send (see ``_ship``): a stream's bytes at their
offset (so a piece landing twice changes nothing, and a reader sees whole lines), any
other file replaced whole (written beside it, then renamed: a reader never sees half a
file), unless the version there is newer.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from four.batch._ship import Piece
from four.trajectory._durable import WRITE_FLAGS, write_atomic


class Landing:
    """Pieces written into the batch folder ``root``.

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
                    view = memoryview(piece.data)
                    offset = piece.offset
                    while view:
                        written = os.pwrite(fd, view, offset)
                        view, offset = view[written:], offset + written
                finally:
                    os.close(fd)
            landed[piece.path] = None
        return list(landed)
