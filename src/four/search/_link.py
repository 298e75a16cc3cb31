"""The link an attempt's trajectory carries to its group: the one thing a search adds to a
trajectory, kept here in one place.

It is stored in the run's head, under ``info.components.attempt``, so it is sealed with
the rest of the record: the group's id, the task's digest, the attempt's number and the
group's size, the seed and temperature it sampled with, and how the attempt before it
ended (None for the first, and for attempts run side by side, which start before the
one before them ends).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from four._checked import Checked
from four._outcomes import Outcome
from four._types import JSON, Emit, Message, Recorder, RunInfo, RunStats, Sink
from four.trajectory._record import Info

T = TypeVar("T")

KEY = "attempt"
"""Where the link is stored: ``info.components[KEY]``."""


@dataclass(frozen=True, slots=True)
class AttemptLink(Checked):
    """Attempt ``index`` of ``of`` at the task whose SHA-256 is ``task``, in group ``group``.

    >>> link = AttemptLink("g1", task_digest("count the files"), 2, 4, 1, 0.7, "held: ...")
    >>> AttemptLink.from_json(link.to_json()) == link
    True
    """

    group: str
    task: str
    index: int
    of: int
    seed: int
    temperature: float
    after: str | None = None

    def to_json(self) -> dict[str, JSON]:
        return {
            "group": self.group,
            "task": self.task,
            "index": self.index,
            "of": self.of,
            "seed": self.seed,
            "temperature": self.temperature,
            "after": self.after,
        }

    @staticmethod
    def from_json(value: JSON) -> AttemptLink:
        """The link ``to_json`` wrote; a ValueError naming the field that is wrong."""
        if not isinstance(value, dict):
            raise ValueError("the attempt link is not an object")
        fields: dict[str, tuple[type, ...]] = {
            "group": (str,), "task": (str,), "index": (int,), "of": (int,), "seed": (int,),
            "temperature": (int, float), "after": (str, type(None)),
        }  # fmt: skip
        for name, kinds in fields.items():
            if name not in value:
                raise ValueError(f"the attempt link has no {name!r}")
            field = value[name]
            if isinstance(field, bool) or not isinstance(field, kinds):
                raise ValueError(f"the attempt link's {name!r} is {field!r}")
        if set(value) != set(fields):
            raise ValueError(
                f"the attempt link has other fields: {sorted(set(value) - set(fields))}"
            )
        temperature = value["temperature"]
        assert isinstance(temperature, int | float)
        return AttemptLink(
            str(value["group"]),
            str(value["task"]),
            int(str(value["index"])),
            int(str(value["of"])),
            int(str(value["seed"])),
            float(temperature),
            value["after"] if isinstance(value["after"], str) else None,
        )


def task_digest(task: str) -> str:
    """The SHA-256 of a task's text (UTF-8), in hex: what every attempt's link names.

    >>> task_digest("")[:12]
    'e3b0c44298fc'
    """
    return hashlib.sha256(task.encode("utf-8", "surrogatepass")).hexdigest()


def link_of(info: Info) -> JSON:
    """The stored link of a trajectory's ``info`` (JSON, unchecked), or None."""
    return info.components.get(KEY)


@dataclass(slots=True)
class Ended:
    """What the attempt's record saw as it closed: the outcome, the stats, what emit
    returned, the sealed file (when the sink names one) and the run's messages."""

    outcome: Outcome
    stats: RunStats
    saved: object
    path: Path | None
    messages: Sequence[Message] = ()


class Linked(Generic[T]):
    """A ``Recorder`` that stores ``link`` in the run's head and notes how the run ended
    (``ended``); everything else is ``recorder``'s. A plain emit is accepted too: its
    run then has no head to store the link in."""

    def __init__(self, recorder: Recorder[T] | Emit[T], link: AttemptLink) -> None:
        self.recorder = recorder
        self.link = link
        self.ended: Ended | None = None

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> T:
        return self.recorder(messages, outcome)

    def open(self, info: RunInfo, /) -> Sink[T]:
        linked = RunInfo(
            {**info.components, KEY: self.link.to_json()},
            info.max_steps,
            info.max_format_errors,
            info.started_at,
            info.resumed_from,
        )
        opener = getattr(self.recorder, "open", None)
        inner: Sink[T] = opener(linked) if callable(opener) else _Plain(self.recorder)
        return _LinkedSink(inner, self)


class _LinkedSink(Generic[T]):
    """The recorder's sink, passing everything through, noting the end."""

    def __init__(self, inner: Sink[T], owner: Linked[T]) -> None:
        self.inner = inner
        self.owner = owner

    def append(self, message: Message, /) -> None:
        self.inner.append(message)

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> T:
        saved = self.inner.close(messages, outcome, stats)
        self._ended(messages, outcome, stats, saved)
        return saved

    async def aclose(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> T:
        aclose = getattr(self.inner, "aclose", None)
        if callable(aclose):
            saved: T = await aclose(messages, outcome, stats)
        else:
            import asyncio

            saved = await asyncio.to_thread(self.inner.close, messages, outcome, stats)
        self._ended(messages, outcome, stats, saved)
        return saved

    def _ended(
        self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, saved: object
    ) -> None:
        path = saved if isinstance(saved, Path) else getattr(self.inner, "path", None)
        where = path if isinstance(path, Path) else None
        self.owner.ended = Ended(outcome, stats, saved, where, messages)

    def __getattr__(self, name: str) -> object:  # beat, failure, jsonl, path: the inner's
        if name in ("inner", "owner"):
            raise AttributeError(name)
        return getattr(self.inner, name)


class _Plain(Generic[T]):
    """A plain ``(messages, outcome) -> T`` emit as a sink: nothing until the end."""

    def __init__(self, emit: Emit[T]) -> None:
        self.emit = emit

    def append(self, message: Message, /) -> None:
        pass

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> T:
        return self.emit(messages, outcome)
