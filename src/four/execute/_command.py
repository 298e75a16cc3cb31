"""What every environment shares: the check of a command before it runs, and ``with``."""

from __future__ import annotations

from typing import Self

from returns.result import Result

from four import _arguments as arguments
from four._types import Action, ExecutionError, Observation, Submitted

Executed = Result[Observation, Submitted | ExecutionError]
"""What an environment returns for one action."""


def refused(env: object, action: object) -> Observation | None:
    """The observation for a command no process can be handed (the model's fault, not
    ours: return code 126), or None. Raises TypeError when ``action`` is no ``Action``
    (``V2("echo hi")``: say so, not 'no attribute command')."""
    if not isinstance(action, Action):
        raise arguments.not_an_action(type(env).__name__, action)
    if "\0" in action.command:
        reason = "The command contains a NUL character, which no shell command can hold."
    elif not action.command.strip():
        reason = "The command is empty."
    else:
        return None
    return Observation(f"<returncode>126</returncode>\n<output>\n{reason}\n</output>", 126)


class ClosedOnExit:
    """``with env:`` gives the environment and calls its ``close()`` at the block's end
    (the environments that hold something: a shell, a container)."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
