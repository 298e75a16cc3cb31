"""What a check judges: the agent's claim of completion, and the means to look at it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from four._types import Checked, Execute, Message
from four.quaternary import CheckResult


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
