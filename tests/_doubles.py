"""Small V1/V2 doubles for loop tests: a line parser and an in-memory environment."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from returns.result import Failure, Result, Success

from four import (
    Action,
    ExecutionError,
    FormatError,
    Observation,
    Rejected,
    Reply,
    Submitted,
)


def line_parse(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    """Commands are lines starting with '$ '; 'DONE <text>' submits; tool calls pass through."""
    if reply.tool_calls:
        return Success(
            [
                Action(call.arguments, call.id)
                if call.name == "bash"
                else Rejected(call.id, "unknown tool")
                for call in reply.tool_calls
            ]
        )
    if reply.content.startswith("DONE"):
        return Failure(Submitted(reply.content[4:].strip()))
    commands = [line[2:] for line in reply.content.splitlines() if line.startswith("$ ")]
    if not commands:
        return Failure(FormatError("Format error: write commands as lines starting with '$ '."))
    return Success([Action(c) for c in commands])


@dataclass
class FakeEnv:
    """Echoes commands; 'submit X' submits X; 'die' is an execution error; 'raise' raises."""

    seen: list[str] = field(default_factory=list)
    closed: int = 0

    def __call__(self, action: Action) -> Result[Observation, Submitted | ExecutionError]:
        self.seen.append(action.command)
        if action.command.startswith("submit"):
            return Failure(Submitted(action.command[7:]))
        if action.command == "die":
            return Failure(ExecutionError("container gone"))
        if action.command == "raise":
            raise RuntimeError("env exploded")
        if action.command == "interrupt":
            raise KeyboardInterrupt
        return Success(Observation(f"ran {action.command}", 0))

    def close(self) -> None:
        self.closed += 1
