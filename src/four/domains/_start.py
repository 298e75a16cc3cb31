"""What the domains that edit their workspace in place (python, cli) keep of its start:
the files as they were when the run began, written beside the trajectory
(``<stem>.start/``), so that ``four replay`` can begin there again in a copy, never by
editing the user's workspace a second time."""

from __future__ import annotations

import difflib
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from four.execute import Workspace
from four.trajectory import TrajectoryError, load_trajectory
from four.types import JSON


@dataclass(frozen=True, slots=True)
class Start:
    """A workspace's files of some kinds (``suffixes``) at a moment (a run's start)."""

    files: Workspace
    texts: Mapping[str, bytes]
    suffixes: tuple[str, ...] = (".py",)

    @staticmethod
    def of(folder: str | Path, suffixes: tuple[str, ...]) -> Start:
        files = Workspace(folder)
        return Start(files, files.snapshot(suffixes), suffixes)

    def changes(self) -> tuple[dict[str, bytes], str]:
        """The changed or created files' bytes now, and a unified diff of every change
        (deletions too) against the start."""
        now = self.files.snapshot(self.suffixes)
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

    def keep(self, stem: Path, changed: Mapping[str, bytes]) -> dict[str, JSON]:
        """Write ``<stem>.start/`` (the changed or deleted files as they were); what the
        trajectory records of it, for ``replay_workspace``, and a line for each special
        file (a FIFO, a socket, a device) named like a source, left out unopened."""
        now = set(self.files.snapshot(self.suffixes))
        before = {p: d for p, d in self.texts.items() if p in changed or p not in now}
        folder = write_tree(stem.with_name(stem.name + ".start"), before)
        created: list[JSON] = [p for p in sorted(changed) if p not in self.texts]
        kept: dict[str, JSON] = {"start": folder.name, "created": created}
        skipped: list[JSON] = [*self.files.special(self.suffixes)]
        if skipped:  # FIFOs, sockets, devices: left out, never opened
            kept["skipped"] = skipped
        return kept


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", "replace").splitlines(keepends=True)


def write_tree(folder: Path, files: Mapping[str, bytes]) -> Path:
    """``folder`` holding ``files`` (relative path -> bytes)."""
    folder.mkdir(exist_ok=True)
    for rel, data in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder


def replay_from(key: str) -> Callable[[Path, Path | None, Path], Path | None]:
    """A ``Domain.replay_workspace`` for a domain whose artifact record ``stats[key]``
    names its ``start`` folder (see ``Start.keep``)."""

    def replay_workspace(trajectory: Path, workspace: Path | None, into: Path) -> Path | None:
        """A copy of ``workspace`` in ``into``, its files put back as they were when the
        run began (the files the run created removed). None when the run recorded no
        workspace or no start."""
        if workspace is None or not workspace.is_dir():
            return None
        try:
            record = getattr(load_trajectory(trajectory).stats, key, None)
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

    return replay_workspace


def _not_regular(folder: str, names: list[str]) -> list[str]:
    """FIFOs, sockets and devices: not copied (copying one blocks or fails)."""
    kept = (stat.S_ISREG, stat.S_ISDIR, stat.S_ISLNK)
    return [n for n in names if not any(k(os.lstat(os.path.join(folder, n)).st_mode) for k in kept)]
