"""emit: a trajectory plus what a domain keeps beside it (a notebook, changed files, a
built tool), with one way of saving for every domain: streamed, the artifact written
into a staging folder, moved beside the trajectory, then everything sealed."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from four._checked import checked
from four._outcomes import Outcome
from four._types import JSON, NO_USAGE, Checked, Message, RunInfo, RunStats
from four.trajectory._save import TrajectorySink, TrajectoryWriter


class Artifact(Protocol):
    """Writes a run's artifact beside its trajectory: files whose names start with
    ``stem.name`` in ``stem.parent`` (``<stem>.ipynb``, ``<stem>.files/``), and returns
    what the trajectory says of them (stored, under the seal, as ``stats[key]``). It may
    raise: the run is sealed all the same, with the error recorded."""

    def __call__(self, stem: Path, outcome: Outcome, /) -> Mapping[str, JSON]: ...


@dataclass(frozen=True, slots=True)
class ArtifactRecorder(Checked):
    """The emit made by ``save_with_artifact``: a ``Recorder`` like ``save_trajectory``'s."""

    trajectory: TrajectoryWriter
    key: str
    artifact: Artifact

    @property
    def output_dir(self) -> Path:
        return self.trajectory.output_dir

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> Path:
        """Save a finished history with no streaming record (plain emit use)."""
        now = time.time()
        sink = self.open(RunInfo({}, 0, 0, now))
        for message in messages:
            sink.append(message)
        return sink.close(messages, outcome, RunStats(0, NO_USAGE, now, now))

    def open(self, info: RunInfo, /) -> ArtifactSink:
        return ArtifactSink(self.trajectory.open(info), self)


class ArtifactSink:
    """One run's trajectory sink; when the run ends, the artifact is written, then the
    trajectory sealed with what it says of it (and each artifact file's SHA-256 under
    ``stats.artifacts``), so the seal covers the artifact's record too."""

    __slots__ = ("_inner", "_recorder")

    @checked
    def __init__(self, inner: TrajectorySink, recorder: ArtifactRecorder) -> None:
        self._inner = inner
        self._recorder = recorder

    @property
    def jsonl(self) -> Path:
        return self._inner.jsonl

    @property
    def path(self) -> Path:
        return self._inner.path

    @property
    def failure(self) -> OSError | None:
        """Why the stream stopped being written (see ``TrajectorySink.failure``)."""
        return self._inner.failure

    def append(self, message: Message, /) -> None:
        self._inner.append(message)

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> Path:
        record = self._write(outcome)
        return self._inner.close(messages, outcome, replace(stats, extra={**stats.extra, **record}))

    def _write(self, outcome: Outcome) -> dict[str, JSON]:
        """Write the artifact in a staging folder, then move it beside the trajectory; on
        any failure nothing of it is left (a full disk keeps its space for the seal)."""
        stem = self._inner.path.with_suffix("")
        staging = stem.with_name(f".{stem.name}.artifact")
        key = self._recorder.key
        try:
            staging.mkdir(parents=True)  # the folder may have gone with the agent's rm -rf
            said = dict(self._recorder.artifact(staging / stem.name, outcome))
            digests = _digests(staging)
            for entry in sorted(os.listdir(staging)):
                os.rename(staging / entry, stem.parent / entry)
            staging.rmdir()
        except Exception as exc:  # a full disk, an artifact's own error: the seal goes on
            shutil.rmtree(staging, ignore_errors=True)
            return {key: {"error": f"{type(exc).__name__}: {exc}"}}
        return {key: said, "artifacts": digests}


_RESERVED = frozenset(
    ("steps", "format_errors", "usage", "started_at", "ended_at", "wall_time", "verdicts",
     "artifacts")
)  # fmt: skip


def _digests(folder: Path) -> dict[str, JSON]:
    """``relative path -> sha256:HEX`` of every file under ``folder``, sorted."""
    found: dict[str, JSON] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        found[path.relative_to(folder).as_posix()] = _digest(path)
    return found


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 16), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def artifact_problems(folder: Path, artifacts: JSON) -> list[str]:
    """What does not match in the artifacts a run recorded (``stats.artifacts``, each
    file's name relative to the run's ``folder`` and its SHA-256): a file missing, not
    a regular file, or changed since the run sealed it; a name outside ``folder``."""
    if not isinstance(artifacts, dict):
        return ["stats.artifacts is not an object of file names and digests"]
    problems = []
    for name, recorded in artifacts.items():
        relative = Path(name)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            problems.append(f"the artifact {name!r} is named outside the run's folder")
            continue
        path = folder / relative
        try:
            if path.is_symlink() or not path.is_file():
                problems.append(f"the artifact {name} is missing (or not a regular file)")
            elif _digest(path) != recorded:
                problems.append(f"the artifact {name} was changed after the run sealed it")
        except OSError as exc:
            problems.append(f"the artifact {name} cannot be read: {exc.strerror or exc}")
    return problems


@checked
def save_with_artifact(
    trajectory: TrajectoryWriter, key: str, artifact: Artifact
) -> ArtifactRecorder:
    """emit: ``trajectory`` (a ``save_trajectory(...)``: streamed, sealed, signed with its
    key) and, beside ``<stem>.json``, what ``artifact`` writes when the run ends. What
    ``artifact`` returns is stored as ``stats[key]`` (or ``{"error": ...}`` when it
    failed) and each file's SHA-256 as ``stats.artifacts``, both under the seal. A
    failing disk is seen by ``four run`` as the plain trajectory's (``sink.failure``).

    >>> import tempfile
    >>> from four import Finished, save_trajectory
    >>> def note(stem, outcome):
    ...     stem.with_suffix(".txt").write_text(outcome.text)
    ...     return {"path": stem.name + ".txt"}
    >>> emit = save_with_artifact(save_trajectory(tempfile.mkdtemp()), "note", note)
    >>> path = emit([], Finished("done"))
    >>> path.with_suffix(".txt").read_text()
    'exit:task_complete'
    """
    if key in _RESERVED:
        raise ValueError(f"key={key!r} is a name the trajectory's stats use; choose another")
    if not key or not key.isidentifier():
        raise ValueError(f"key={key!r}: name the artifact's record with a word, e.g. 'notebook'")
    if not callable(artifact):
        raise TypeError(f"artifact: give a function (stem, outcome) -> dict, not {artifact!r}")
    return ArtifactRecorder(trajectory, key, artifact)
