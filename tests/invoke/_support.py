"""Small V1/emit doubles for driving real invokes through ``run``, and valid histories."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from four import (
    Action,
    Assistant,
    FormatError,
    Message,
    Outcome,
    Rejected,
    Reply,
    Submitted,
    System,
    ToolCall,
    ToolResult,
    User,
)


def keep(messages: Sequence[Message], outcome: Outcome) -> tuple[list[Message], Outcome]:
    """emit: the history and the outcome, as they are."""
    return list(messages), outcome


def bash_parse(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    """V1: bash tool calls (``{"command": ...}``), or '$ ' lines in text; 'DONE x' submits."""
    if reply.tool_calls:
        actions: list[Action | Rejected] = []
        for call in reply.tool_calls:
            try:
                command = json.loads(call.arguments)["command"]
            except (ValueError, KeyError, TypeError):
                actions.append(Rejected(call.id, 'arguments must be {"command": ...}'))
                continue
            actions.append(Action(str(command), call.id))
        return Success(actions)
    if reply.content.startswith("DONE"):
        return Failure(Submitted(reply.content[4:].strip()))
    commands = [line[2:] for line in reply.content.splitlines() if line.startswith("$ ")]
    if not commands:
        return Failure(FormatError("Write commands as lines starting with '$ '."))
    return Success([Action(c) for c in commands])


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """A history the loop could build: system, task, then whole turns."""
    out: list[Message] = [System("sys"), User("the task")]
    ids = iter(range(10_000))
    for _ in range(draw(st.integers(0, 12))):
        text = draw(st.text("abc ", max_size=20))
        n = draw(st.integers(0, 3))
        calls = tuple(ToolCall(f"c{next(ids)}", "bash", '{"command": "ls"}') for _ in range(n))
        out.append(Assistant(text, calls))
        out.extend(ToolResult(c.id, draw(st.text("xyz", max_size=20))) for c in calls)
        if not calls:
            out.append(User(draw(st.text("uvw", max_size=20))))
    return out
