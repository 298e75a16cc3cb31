"""The plain quaternary loop `run`: generate, check, and branch on the four verdicts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import combinations
from typing import Any, Protocol

from four._types import Checked

from ._core import CheckResult, Verdict

__all__ = ["LoopOutcome", "LoopStatus", "run"]


class LoopStatus(StrEnum):
    """How a `run` ended. A `str` enum, so each member equals its plain string."""

    ACCEPTED = "accepted"
    HELD = "held"
    BLOCKED = "blocked"
    EXHAUSTED = "exhausted"


class GenerateFn(Protocol):
    def __call__(self, task: Any, *, exclusions: list[str]) -> Any: ...


class RecheckFn(Protocol):
    def __call__(self, output: Any, evidence: Any = ..., /) -> CheckResult: ...


@dataclass
class LoopOutcome(Checked):
    """The result of `run`. `exclusions` is the runner's own list of NO reasons."""

    status: LoopStatus
    output: Any | None = None
    exclusions: list[str] = field(default_factory=list)
    held_reason: str | None = None
    blocked_by: str | None = None
    rounds: int = 0
    contradiction: list[tuple[str, str]] | None = None


_NEGATIONS = ("not ", "no ", "don't ", "do not ", "never ", "avoid ")


def _negates(a: str, b: str) -> bool:
    """Whether one exclusion is an English negation of the other (as verdict4 0.2.0
    tells contradictions: docs/seal.md)."""
    pairs = ((a.lower(), b.lower()), (b.lower(), a.lower()))
    return any(x.startswith(p) and x[len(p) :].strip() == y for x, y in pairs for p in _NEGATIONS)


def run(
    task: Any,
    *,
    generate: GenerateFn,
    check: Callable[[Any], CheckResult],
    gather: Callable[[str], Any] | None = None,
    recheck: RecheckFn | None = None,
    is_resolved: Callable[[str], bool] | None = None,
    is_failed: Callable[[str], bool] | None = None,
    max_rounds: int = 10,
    on_hold: Callable[[Any, str], None] | None = None,
    on_blocked: Callable[[Any, str], None] | None = None,
) -> LoopOutcome:
    """Run the quaternary loop over user callables (verdict4 0.2.0 compatible; its rounds
    and differences: docs/seal.md).

    >>> from four.quaternary import yes
    >>> run("t", generate=lambda task, *, exclusions: 42, check=lambda out: yes()).status
    <LoopStatus.ACCEPTED: 'accepted'>
    """
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int):
        raise TypeError("max_rounds must be an int.")
    if max_rounds < 1:
        raise ValueError("max_rounds must be at least 1.")
    exclusions: list[str] = []

    def finish(status: LoopStatus, output: Any, rounds: int, **extra: Any) -> LoopOutcome:
        return LoopOutcome(
            status,
            output,
            exclusions,
            rounds=rounds,
            contradiction=[pair for pair in combinations(exclusions, 2) if _negates(*pair)] or None,
            **extra,
        )

    def hold(output: Any, rounds: int, reason: str | None, note: str) -> LoopOutcome:
        if on_hold is not None:
            on_hold(output, note)
        return finish(LoopStatus.HELD, output, rounds, held_reason=reason)

    for round_num in range(1, max_rounds + 1):
        output = generate(task, exclusions=list(exclusions))
        result = check(output)
        if result.verdict == Verdict.MAYBE:
            needed = result.needed
            if not isinstance(needed, str):
                reason = "typed MAYBE need requires QICTController"
                return hold(output, round_num, reason, reason)
            if gather is None or recheck is None:
                return hold(output, round_num, needed, needed)
            result = recheck(output, gather(needed))
            if result.verdict not in (Verdict.YES, Verdict.NO):
                held = result.needed if isinstance(result.needed, str) and result.needed else None
                held = held or result.dependency or None
                return hold(output, round_num, held, held or "unresolvable")
        elif result.verdict == Verdict.IFF:
            dep = result.dependency
            assert dep is not None  # CheckResult guarantees it for IFF
            for probe in (is_resolved, is_failed):
                if probe is not None and probe(dep) and recheck is not None:
                    result = recheck(output)
                    if result.verdict in (Verdict.YES, Verdict.NO):
                        break
            else:
                if on_blocked is not None:
                    on_blocked(output, dep)
                return finish(LoopStatus.BLOCKED, output, round_num, blocked_by=dep)
        if result.verdict == Verdict.YES:
            return finish(LoopStatus.ACCEPTED, output, round_num)
        assert result.reason is not None  # CheckResult guarantees it for NO
        exclusions.append(result.reason)
    return finish(LoopStatus.EXHAUSTED, None, max_rounds)
