"""What every environment does with a command before it runs it."""

from __future__ import annotations

from returns.result import Result

from four._types import ExecutionError, Observation, Submitted

Executed = Result[Observation, Submitted | ExecutionError]
"""What an environment returns for one action."""


def unrunnable(reason: str) -> Observation:
    """The observation for a command that could not even start (the model's fault, not ours)."""
    return Observation(f"<returncode>126</returncode>\n<output>\n{reason}\n</output>", 126)


def check_command(command: str) -> str | None:
    """Why a command cannot be handed to a process, or None."""
    if "\0" in command:
        return "The command contains a NUL character, which no shell command can hold."
    if not command.strip():
        return "The command is empty."
    return None
