"""emit for a command-line tool: the sealed trajectory, and beside it the tool as built."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from four.domains._start import Start
from four.domains.cli._env import SOURCES, ToolEnv
from four.trajectory import ArtifactRecorder, SigningKey, save_trajectory, save_with_artifact
from four.types import JSON, Outcome


@dataclass(frozen=True, slots=True)
class BuiltTool:
    """The artifact of ``save_tool``: ``<stem>.tool/`` (``bin/``, ``man/man1/``, ``src/``),
    and ``<stem>.start/``, the changed sources as they were (for ``four replay``)."""

    env: ToolEnv = field(repr=False)
    start: Start = field(repr=False)

    def __call__(self, stem: Path, outcome: Outcome, /) -> dict[str, JSON]:
        folder = stem.with_name(stem.name + ".tool")
        kept: list[JSON] = []
        for where, source in self.env.artifacts().items():
            target = folder / where
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            kept.append(str(where))
        changed, _ = self.start.changes()
        record: dict[str, JSON] = {"folder": folder.name if kept else None, "files": kept}
        return {**record, **self.start.keep(stem, changed)}


def save_tool(
    output_dir: str | os.PathLike[str],
    env: ToolEnv,
    *,
    signing_key: str | os.PathLike[str] | SigningKey | None = None,
) -> ArtifactRecorder:
    """emit: the trajectory (as ``save_trajectory``) and, beside ``<stem>.json``, the tool
    ``env`` built, in ``<stem>.tool/``: ``bin/NAME``, ``man/man1/NAME.1`` (made from its
    ``--help`` and ``--version`` and linted, only when both worked) and ``src/``. The
    trajectory's ``stats.tool`` names them; ``signing_key`` signs its seal.

    >>> import tempfile
    >>> from four.domains.cli import build_env
    >>> save_tool("runs", build_env(tempfile.mkdtemp(), "sum")).output_dir.name
    'runs'
    """
    writer = save_trajectory(output_dir, signing_key=signing_key)
    return save_with_artifact(
        writer, "tool", BuiltTool(env, Start.of(env.workspace, SOURCES[env.language]))
    )
