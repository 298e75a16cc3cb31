"""Small V1/emit doubles for driving real invokes through ``run``."""

from __future__ import annotations

import json
from collections.abc import Sequence

from returns.result import Failure, Result, Success

from four import Action, FormatError, Message, Outcome, Rejected, Reply, Submitted


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
