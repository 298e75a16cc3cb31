"""The manifest of a batch: ``DIR/manifest.jsonl``, one JSON line per finished item."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import IO

from four.batch._result import RunResult

MANIFEST = "manifest.jsonl"


def manifest_path(path: str | os.PathLike[str]) -> Path:
    """The manifest of a batch folder (or the file itself when given)."""
    p = Path(path)
    return p if p.suffix == ".jsonl" else p / MANIFEST


def read_results(path: str | os.PathLike[str]) -> list[RunResult]:
    """Every line of a manifest, in order (a line cut short at its end is skipped)."""
    p = manifest_path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
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
        self._file: IO[str] = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115
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
        path = result.trajectory
        if self.relative and path is not None and path.is_relative_to(self.folder):
            result = replace(result, trajectory=path.relative_to(self.folder))
        self._file.write(json.dumps(result.to_json()) + "\n")
        self._file.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._file.close()
