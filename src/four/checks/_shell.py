"""A shell command run in a run's environment, bounded by its own timeout."""

from __future__ import annotations

import shlex

from returns.result import Success

from four._types import Action, Execute, Observation, output_of

_TIMED_OUT = (124, 137)  # coreutils `timeout`: TERM sent, or KILL after the grace period


def run_command(env: Execute, command: str, timeout: float) -> Observation:
    """What ``command`` did in ``env``: its output alone (``output_of``), its exit status
    (None: the environment failed, its error the content) and whether it timed out."""
    # `timeout` bounds the check's own command whatever the environment's limit is.
    wrapped = f"timeout -k 5 {timeout:g} bash -c {shlex.quote(command)}"
    result = env(Action(wrapped))
    if not isinstance(result, Success):
        return Observation(f"environment error: {result.failure()}")
    seen = result.unwrap()
    timed_out = seen.timed_out or seen.returncode in _TIMED_OUT
    return Observation(output_of(seen.content), seen.returncode, timed_out)
