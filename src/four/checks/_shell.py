"""A shell command run in a run's environment, bounded by its own timeout."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from returns.result import Success

from four._types import Action, Execute, output_of

_TIMED_OUT = (124, 137)  # coreutils `timeout`: TERM sent, or KILL after the grace period


@dataclass(frozen=True, slots=True)
class Ran:
    """What a command did: its exit status (None: the environment failed), whether it
    timed out, and its output."""

    returncode: int | None
    timed_out: bool
    output: str


def run_command(env: Execute, command: str, timeout: float) -> Ran:
    # `timeout` bounds the check's own command whatever the environment's limit is.
    wrapped = f"timeout -k 5 {timeout:g} bash -c {shlex.quote(command)}"
    result = env(Action(wrapped))
    if not isinstance(result, Success):
        return Ran(None, False, f"environment error: {result.failure()}")
    observation = result.unwrap()
    output = output_of(observation.content)
    timed_out = observation.timed_out or observation.returncode in _TIMED_OUT
    return Ran(observation.returncode, timed_out, output)
