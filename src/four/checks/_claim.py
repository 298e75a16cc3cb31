"""What a check judges: the agent's claim of completion, and the means to look at it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from returns.result import Success

from four._types import Action, Checked, Execute, Message, Observation, output_of
from four.quaternary import CheckResult

_TIMED_OUT = (124, 137)  # coreutils `timeout`: TERM sent, or KILL after the grace period


@dataclass(frozen=True, slots=True)
class Claim(Checked):
    """A submission to judge: the final ``output``, the run so far, and its environment
    (``env``), through which a check can run commands. ``evidence`` holds what was
    gathered for earlier MAYBE verdicts (need -> text); ``resolved`` the dependencies a
    resolver decided (dependency -> holds)."""

    output: str
    messages: tuple[Message, ...]
    env: Execute
    evidence: Mapping[str, str] = field(default_factory=dict)
    resolved: Mapping[str, bool] = field(default_factory=dict)


class Check(Protocol):
    """A deterministic judge of a claim: NO, YES, MAYBE or IFF (a ``CheckResult``)."""

    def __call__(self, claim: Claim, /) -> CheckResult: ...


Gatherer: TypeAlias = Callable[[Claim], str]
"""Fetches the evidence a MAYBE asked for; its text is shown to the check on recheck."""

Resolver: TypeAlias = Callable[[Claim], bool | None]
"""Decides a dependency of an IFF: holds (True), fails (False) or unknown (None)."""


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
