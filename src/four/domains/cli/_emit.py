"""emit for a command-line tool: the sealed trajectory, and beside it the tool as built."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from four.domains.cli._env import ToolEnv
from four.trajectory import TrajectorySink, save_trajectory
from four.types import Message, Outcome, RunInfo, RunStats


@dataclass(frozen=True, slots=True)
class SaveTool:
    """The emit made by ``save_tool``: a ``Recorder`` of the trajectory plus the tool."""

    output_dir: Path
    env: ToolEnv = field(repr=False)

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> Path:
        path = save_trajectory(self.output_dir)(messages, outcome)
        self.save(path)
        return path

    def open(self, info: RunInfo, /) -> ToolSink:
        return ToolSink(save_trajectory(self.output_dir).open(info), self)

    def save(self, trajectory: Path) -> Path:
        """Write ``<stem>.tool/`` (``bin/``, ``man/man1/``, ``src/``) beside ``<stem>.json``."""
        stem = trajectory.with_suffix("")
        folder = stem.with_name(stem.name + ".tool")
        for where, source in self.env.artifacts().items():
            target = folder / where
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        return folder


class ToolSink:
    """One run's trajectory sink; once it is sealed, the tool is saved beside it."""

    __slots__ = ("_emit", "_inner")

    def __init__(self, inner: TrajectorySink, emit: SaveTool) -> None:
        self._inner = inner
        self._emit = emit

    def append(self, message: Message, /) -> None:
        self._inner.append(message)

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> Path:
        path = self._inner.close(messages, outcome, stats)  # sealed first: nothing is lost
        self._emit.save(path)
        return path


def save_tool(output_dir: str | Path, env: ToolEnv) -> SaveTool:
    """emit: the trajectory (as ``save_trajectory``) and, beside ``<stem>.json``, the tool
    ``env`` built, in ``<stem>.tool/``: ``bin/NAME``, ``man/man1/NAME.1`` (made from its
    ``--help`` and ``--version`` and linted, only when both worked) and ``src/``.

    >>> import tempfile
    >>> from four.domains.cli import build_env
    >>> save_tool("runs", build_env(tempfile.mkdtemp(), "sum")).output_dir.name
    'runs'
    """
    return SaveTool(Path(output_dir), env)
