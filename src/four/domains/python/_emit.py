"""emit for Python code: the sealed trajectory, and beside it the changed ``.py`` files
and a unified diff of them against the workspace's start."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from four.domains._start import Start, write_tree
from four.domains.python._env import PythonEnv
from four.trajectory import ArtifactRecorder, SigningKey, save_trajectory, save_with_artifact
from four.types import JSON, Outcome


def start_of(source: PythonEnv | str | Path) -> Start:
    """The ``.py`` files at the run's start: the environment's, or a folder's now."""
    if isinstance(source, PythonEnv):
        return Start(source.files, source.start, (".py",))
    return Start.of(source, (".py",))


@dataclass(frozen=True, slots=True)
class ChangedFiles:
    """The artifact of ``save_files``: ``<stem>.files/`` (the changed or created ``.py``
    files), ``<stem>.diff`` (every change against the start) and ``<stem>.start/`` (the
    changed or deleted files as they were at the start, so ``four replay`` can begin
    where the run began)."""

    start: Start = field(repr=False)

    def __call__(self, stem: Path, outcome: Outcome, /) -> dict[str, JSON]:
        changed, diff = self.start.changes()
        folder = write_tree(stem.with_name(stem.name + ".files"), changed)
        patch = stem.with_name(stem.name + ".diff")
        patch.write_text(diff, "utf-8")
        names: list[JSON] = [*sorted(changed)]
        kept = self.start.keep(stem, changed)
        return {"folder": folder.name, "diff": patch.name, "changed": names, **kept}


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
    return save_with_artifact(writer, "files", ChangedFiles(start_of(source)))
