"""emit for Python code: the sealed trajectory, and beside it the changed ``.py`` files
and a unified diff of them against the workspace's start."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from four.domains.python._env import PythonEnv
from four.execute import Workspace
from four.trajectory import ArtifactRecorder, SigningKey, save_trajectory, save_with_artifact
from four.types import JSON, Outcome


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
class ChangedFiles:
    """The artifact of ``save_files``: ``<stem>.files/`` (the changed or created ``.py``
    files) and ``<stem>.diff`` (every change against the start)."""

    start: Start = field(repr=False)

    def __call__(self, stem: Path, outcome: Outcome, /) -> dict[str, JSON]:
        changed, diff = self.start.changes()
        folder = stem.with_name(stem.name + ".files")
        folder.mkdir(exist_ok=True)
        for rel, data in changed.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        patch = stem.with_name(stem.name + ".diff")
        patch.write_text(diff, "utf-8")
        names: list[JSON] = list(sorted(changed))
        return {"folder": folder.name, "diff": patch.name, "changed": names}


def save_files(
    output_dir: str | os.PathLike[str],
    source: PythonEnv | str | Path = ".",
    *,
    signing_key: str | os.PathLike[str] | SigningKey | None = None,
) -> ArtifactRecorder:
    """emit: the trajectory (as ``save_trajectory``) and, beside ``<stem>.json``, the
    ``.py`` files that changed in the workspace (``<stem>.files/``) and a unified diff
    of them against the start (``<stem>.diff``).

    ``source`` is the run's ``python_env`` (its start is the environment's), or a
    workspace folder, read now as the start. The trajectory's ``stats.files`` names
    them; ``signing_key`` signs its seal, as with ``save_trajectory``.

    >>> import tempfile
    >>> save_files("runs", tempfile.mkdtemp()).output_dir.name
    'runs'
    """
    writer = save_trajectory(output_dir, signing_key=signing_key)
    return save_with_artifact(writer, "files", ChangedFiles(Start.of(source)))
