"""emit for Python code: the sealed trajectory, and beside it the changed ``.py`` files
and a unified diff of them against the workspace's start."""

from __future__ import annotations

import difflib
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from four.domains.python._env import PythonEnv
from four.execute import Workspace
from four.trajectory import (
    ArtifactRecorder,
    SigningKey,
    TrajectoryError,
    load_trajectory,
    save_trajectory,
    save_with_artifact,
)
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
    files), ``<stem>.diff`` (every change against the start) and ``<stem>.start/`` (the
    changed or deleted files as they were at the start, so ``four replay`` can begin
    where the run began)."""

    start: Start = field(repr=False)

    def __call__(self, stem: Path, outcome: Outcome, /) -> dict[str, JSON]:
        changed, diff = self.start.changes()
        now = set(self.start.files.snapshot((".py",)))
        before = {p: d for p, d in self.start.texts.items() if p in changed or p not in now}
        folder = _write_tree(stem.with_name(stem.name + ".files"), changed)
        at_start = _write_tree(stem.with_name(stem.name + ".start"), before)
        patch = stem.with_name(stem.name + ".diff")
        patch.write_text(diff, "utf-8")
        created: list[JSON] = [p for p in sorted(changed) if p not in self.start.texts]
        names: list[JSON] = [*sorted(changed)]
        return {
            "folder": folder.name,
            "diff": patch.name,
            "start": at_start.name,
            "changed": names,
            "created": created,
        }


def _write_tree(folder: Path, files: Mapping[str, bytes]) -> Path:
    folder.mkdir(exist_ok=True)
    for rel, data in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder


def replay_workspace(trajectory: Path, workspace: Path | None, into: Path) -> Path | None:
    """A copy of ``workspace`` (the recorded run's) in ``into``, its ``.py`` files put
    back as they were when the run began (from ``<stem>.start/``; the files the run
    created removed), for ``four replay``: the user's workspace is never edited again.
    None when the run recorded no workspace or no start (then replay cannot begin there).
    """
    if workspace is None or not workspace.is_dir():
        return None
    try:
        record = load_trajectory(trajectory).stats.get("files")
    except TrajectoryError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("start"), str):
        return None
    start = trajectory.parent / str(record["start"])
    if not start.is_dir():
        return None
    copy = into / "workspace"
    shutil.copytree(workspace, copy, symlinks=True, ignore=_not_regular)
    created = record.get("created")
    for rel in created if isinstance(created, list) else []:
        (copy / str(rel)).unlink(missing_ok=True)
    for original in (p for p in start.rglob("*") if p.is_file()):
        target = copy / original.relative_to(start)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(original, target)
    return copy


def _not_regular(folder: str, names: list[str]) -> list[str]:
    """FIFOs, sockets and devices: not copied (copying one blocks or fails)."""
    kept = (stat.S_ISREG, stat.S_ISDIR, stat.S_ISLNK)
    return [n for n in names if not any(k(os.lstat(os.path.join(folder, n)).st_mode) for k in kept)]


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
