"""emit for Python code: the sealed trajectory, and beside it the changed ``.py`` files
and a unified diff of them against the workspace's start."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from four.domains.python._env import PythonEnv
from four.execute import Workspace
from four.trajectory import TrajectorySink, save_trajectory
from four.types import Message, Outcome, RunInfo, RunStats


@dataclass(frozen=True, slots=True)
class Start:
    """A workspace's ``.py`` files at a moment (the start of a run), to compare with later."""

    files: Workspace
    texts: Mapping[str, bytes]

    @staticmethod
    def of(source: PythonEnv | str | Path) -> Start:
        if isinstance(source, PythonEnv):
            return Start(source.files, source.start)
        files = Workspace(source)
        return Start(files, files.snapshot((".py",)))

    def changes(self) -> tuple[dict[str, bytes], str]:
        """The changed or created files' bytes now, and a unified diff of every change
        (deletions too) against the start."""
        now = self.files.snapshot((".py",))
        changed = {p: data for p, data in now.items() if self.texts.get(p) != data}
        gone = [p for p in self.texts if p not in now]
        diff: list[str] = []
        for path in sorted([*changed, *gone]):
            old = _lines(self.texts.get(path))
            new = _lines(now.get(path))
            before = f"a/{path}" if path in self.texts else "/dev/null"
            after = f"b/{path}" if path in now else "/dev/null"
            diff.extend(difflib.unified_diff(old, new, before, after))
        return changed, "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", "replace").splitlines(keepends=True)


@dataclass(frozen=True, slots=True)
class SaveFiles:
    """The emit made by ``save_files``: a ``Recorder`` of the trajectory plus the files."""

    output_dir: Path
    start: Start = field(repr=False)

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> Path:
        path = save_trajectory(self.output_dir)(messages, outcome)
        self.save(path)
        return path

    def open(self, info: RunInfo, /) -> FilesSink:
        return FilesSink(save_trajectory(self.output_dir).open(info), self)

    def save(self, trajectory: Path) -> tuple[Path, Path]:
        """Write ``<stem>.files/`` and ``<stem>.diff`` beside the trajectory ``<stem>.json``."""
        changed, diff = self.start.changes()
        stem = trajectory.with_suffix("")
        folder = stem.with_name(stem.name + ".files")
        folder.mkdir(exist_ok=True)
        for rel, data in changed.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        patch = stem.with_name(stem.name + ".diff")
        patch.write_text(diff, "utf-8")
        return folder, patch


class FilesSink:
    """One run's trajectory sink; when it closes, the files are saved beside it."""

    __slots__ = ("_emit", "_inner")

    def __init__(self, inner: TrajectorySink, emit: SaveFiles) -> None:
        self._inner = inner
        self._emit = emit

    @property
    def jsonl(self) -> Path:
        return self._inner.jsonl

    @property
    def path(self) -> Path:
        return self._inner.path

    def append(self, message: Message, /) -> None:
        self._inner.append(message)

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> Path:
        path = self._inner.close(messages, outcome, stats)  # sealed first: nothing is lost
        self._emit.save(path)
        return path


def save_files(output_dir: str | Path, source: PythonEnv | str | Path = ".") -> SaveFiles:
    """emit: the trajectory (as ``save_trajectory``) and, beside ``<stem>.json``, the
    ``.py`` files that changed in the workspace (``<stem>.files/``) and a unified diff
    of them against the start (``<stem>.diff``).

    ``source`` is the run's ``python_env`` (its start is the environment's), or a
    workspace folder, read now as the start.

    >>> import tempfile
    >>> save_files("runs", tempfile.mkdtemp()).output_dir.name
    'runs'
    """
    return SaveFiles(Path(output_dir), Start.of(source))
