"""Reading trajectories back: ours (final .json or the streaming .jsonl) and mini-swe-agent's."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from four._types import JSON, Message
from four.trajectory._codec import message_from_json


class TrajectoryError(ValueError):
    """The file is not a trajectory this library can read."""


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A saved run. ``outcome`` is None for a run that never ended (a killed process)."""

    messages: tuple[Message, ...]
    outcome: str | None
    format: str
    path: Path
    info: Mapping[str, JSON] = field(default_factory=dict)
    stats: Mapping[str, JSON] = field(default_factory=dict)
    detail: Mapping[str, JSON] = field(default_factory=dict)


def load_trajectory(path: str | os.PathLike[str]) -> Trajectory:
    """Read a trajectory: our ``.json`` or ``.jsonl`` (also one cut short by a kill),
    or a mini-swe-agent ``.traj.json`` (v1 list or v2 document).

    >>> load_trajectory("missing.json")
    Traceback (most recent call last):
    ...
    four.trajectory._load.TrajectoryError: cannot read missing.json: No such file or directory
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TrajectoryError(f"cannot read {path}: {exc.strerror}") from None
    if p.suffix == ".jsonl":
        return _from_jsonl(p, text)
    try:
        data: JSON = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrajectoryError(f"{path} is not JSON: {exc}") from None
    if isinstance(data, list):  # mini-swe-agent v1: a bare message list
        return Trajectory(_messages(data), None, "mini-swe-agent-1.0", p)
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise TrajectoryError(f"{path} has no message list")
    if "trajectory_format" in data or "format" not in data:
        info = _dict(data.get("info"))
        status = info.get("exit_status")
        return Trajectory(
            _messages(cast(list[JSON], data["messages"])),
            str(status) if status is not None else None,
            str(data.get("trajectory_format", "mini-swe-agent")),
            p,
            info,
        )
    outcome = data.get("outcome")
    return Trajectory(
        _messages(cast(list[JSON], data["messages"])),
        outcome if isinstance(outcome, str) else None,
        str(data["format"]),
        p,
        _dict(data.get("info")),
        _dict(data.get("stats")),
        _dict(data.get("outcome_detail")),
    )


def stream_records(text: str) -> Iterator[dict[str, JSON]]:
    """The records of a ``.jsonl`` stream, up to a line cut short by a killed process.

    >>> [r["type"] for r in stream_records('{"type": "start"}\\n[1]\\n{"type": "mess')]
    ['start']
    """
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return  # the line in flight when the process died
        if isinstance(record, dict):
            yield record


def _from_jsonl(path: Path, text: str) -> Trajectory:
    fmt, info, outcome, stats = "", {}, None, {}
    messages: list[JSON] = []
    for record in stream_records(text):
        kind = record.get("type")
        if kind == "start":
            fmt, info = str(record.get("format", "")), _dict(record.get("info"))
        elif kind == "message":
            messages.append(record.get("message"))
        elif kind == "end":
            raw = record.get("outcome")
            outcome, stats = (raw if isinstance(raw, str) else None), _dict(record.get("stats"))
    if not fmt:
        raise TrajectoryError(f"{path} has no start record")
    return Trajectory(_messages(messages), outcome, fmt, path, info, stats)


def _messages(items: list[JSON]) -> tuple[Message, ...]:
    out = (message_from_json(m) for m in items if isinstance(m, dict))
    return tuple(m for m in out if m is not None)


def _dict(value: JSON) -> dict[str, JSON]:
    return value if isinstance(value, dict) else {}
