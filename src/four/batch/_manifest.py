"""The manifest of a batch: ``DIR/manifest.jsonl``, one JSON line per finished item."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import IO

from four._checked import checked
from four._files import Unreadable, read_regular, regular_fd
from four.batch._result import RunResult

MANIFEST = "manifest.jsonl"
MAX_BYTES = 1 << 30
"""The largest manifest read (a line is a few hundred bytes: millions of items fit)."""


@checked
def read_results(path: str | os.PathLike[str]) -> list[RunResult]:
    """Every line of a manifest, in order (a line cut short at its end is skipped); none
    when there is no manifest. A manifest that is no regular file (a FIFO, a link to
    ``/dev/zero``), or is over ``MAX_BYTES``, is ``Unreadable``: one line, never a hang.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp(); os.mkfifo(os.path.join(folder, MANIFEST))
    >>> try:
    ...     read_results(folder)
    ... except Unreadable as exc:
    ...     print(str(exc).endswith("manifest.jsonl is a FIFO (named pipe), not a regular file"))
    True
    """
    p = Path(path)
    p = p if p.suffix == ".jsonl" else p / MANIFEST  # a batch folder, or its manifest
    try:
        text = read_regular(p, max_bytes=MAX_BYTES).decode("utf-8", "replace")
    except Unreadable as exc:
        if exc.errno == errno.ENOENT:
            return []
        raise
    results = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            result = RunResult.from_json(data)
            if result.trajectory is not None and not result.trajectory.is_absolute():
                # (a batch folder at a URL names them from its folder)
                result = replace(result, trajectory=p.parent / result.trajectory)
            results.append(result)
    return results


@checked
def read_manifest(path: str | os.PathLike[str]) -> dict[str, RunResult]:
    """The latest result of each item of a batch folder (or manifest file), by id.

    >>> import tempfile
    >>> read_manifest(tempfile.mkdtemp())
    {}
    """
    return {r.id: r for r in read_results(path)}


class ManifestWriter:
    """Appends results to a manifest, one flushed line each. Holds an exclusive lock on
    the file, so two batches cannot write one folder at once. With ``relative``, a
    trajectory in the folder is named from it (the folder is a copy of one at a URL)."""

    def __init__(self, folder: Path, *, relative: bool = False) -> None:
        self.folder = folder
        self.relative = relative
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / MANIFEST
        # Refused with one line (Unreadable) if a FIFO, a device or a link is in its place,
        # or it is over MAX_BYTES: never written into (a FIFO's writer would wait).
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
        fd = regular_fd(self.path, flags, max_bytes=MAX_BYTES)
        self._file: IO[str] = os.fdopen(fd, "a+", encoding="utf-8")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._file.close()
            raise RuntimeError(f"another batch is writing {self.path}") from None
        size = os.fstat(self._file.fileno()).st_size
        # A line cut short by a crash must not swallow the next one.
        if size and os.pread(self._file.fileno(), 1, size - 1) != b"\n":
            self._file.write("\n")
            self._file.flush()

    def write(self, result: RunResult) -> None:
        """Append ``result`` as one line, flushed."""
        path = result.trajectory
        if self.relative and path is not None and path.is_relative_to(self.folder):
            result = replace(result, trajectory=path.relative_to(self.folder))
        self._file.write(json.dumps(result.to_json()) + "\n")
        self._file.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
