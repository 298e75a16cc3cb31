"""Deterministic G doubles: a scripted model and a replay of a saved run."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, cast

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import checked
from four._types import Assistant, Checked, Message, ModelError, ModelErrorKind, Reply, Usage

Scripted: TypeAlias = (
    "str | Assistant | ModelError | Callable[[Sequence[Message]], str | Assistant]"
)
_FREE = Usage(0, 0, 0.0)


@dataclass(eq=False, slots=True)
class ScriptedInvoke(Checked):
    """G from a fixed list of replies, consumed in order (thread-safe)."""

    replies: tuple[Scripted, ...]
    name: str = "scripted"
    position: int = field(default=0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        with self._lock:
            index, self.position = self.position, self.position + 1
        if index >= len(self.replies):
            exhausted = f"{self.name} exhausted after {len(self.replies)} replies"
            return Failure(ModelError(ModelErrorKind.OTHER, exhausted))
        item = self.replies[index]
        if isinstance(item, ModelError):
            return Failure(item)
        reply = item(messages) if callable(item) else item
        if isinstance(reply, str):
            return Success(Assistant(reply, usage=_FREE, model=self.name))
        return Success(reply)


def scripted_invoke(replies: Sequence[Scripted]) -> ScriptedInvoke:
    """A deterministic G: each call returns the next reply of the script (a text, an
    ``Assistant``, a ``ModelError`` or a function of the history), then Err ("exhausted").

    >>> G = scripted_invoke(["```bash\\nls\\n```"])
    >>> G([]).unwrap().content
    '```bash\\nls\\n```'
    """
    if isinstance(replies, str) or not isinstance(replies, Sequence):
        raise TypeError(
            f"scripted_invoke: replies={replies!r:.60} is not a list of replies: "
            "write scripted_invoke([...]), one item a model call"
        )
    for bad in replies:
        if not isinstance(bad, str | Assistant | ModelError) and not callable(bad):
            raise TypeError(
                f"scripted_invoke: a reply is {bad!r:.60}: give texts, Assistant turns, "
                "ModelErrors or functions of the history"
            )
    return ScriptedInvoke(tuple(replies))


def replay_invoke(trajectory: str | os.PathLike[str] | Sequence[Message]) -> ScriptedInvoke:
    """G that replays the assistant turns of a saved run (ours or mini-swe-agent's).

    >>> from four._types import User
    >>> replay_invoke([User("hi"), Assistant("done")])([]).unwrap().content
    'done'
    """
    if isinstance(trajectory, str | os.PathLike):
        from four.trajectory import load_trajectory

        check.path("replay_invoke", "trajectory", trajectory)
        messages: Sequence[Message] = load_trajectory(trajectory).messages
    elif isinstance(trajectory, Sequence):
        messages = cast("Sequence[Message]", trajectory)
    else:
        raise TypeError(
            f"replay_invoke: trajectory={trajectory!r:.60}: give a trajectory file's path "
            "or a list of messages"
        )
    turns = tuple(m for m in messages if isinstance(m, Assistant))
    return ScriptedInvoke(turns, name="replay")
