"""The plain quaternary loop `run`: generate, check, and branch on the four verdicts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
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
    low_a, low_b = a.lower(), b.lower()
    return any(
        (low_a.startswith(p) and low_a[len(p) :].strip() == low_b)
        or (low_b.startswith(p) and low_b[len(p) :].strip() == low_a)
        for p in _NEGATIONS
    )


def _detect_contradictions(exclusions: list[str]) -> list[tuple[str, str]] | None:
    """Flag (a, b) pairs where one exclusion is an English negation of the other (as
    verdict4 0.2.0 does it: docs/seal.md)."""
    pairs = [
        (a, b) for i, a in enumerate(exclusions) for b in exclusions[i + 1 :] if _negates(a, b)
    ]
    return pairs or None


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
    """Run the quaternary loop over user callables (verdict4 0.2.0 compatible; its
    differences in docs/seal.md).

    Each round generates an output and checks it: YES accepts, NO adds its reason to
    the exclusions and retries, MAYBE gathers evidence once and rechecks (a second
    MAYBE holds), IFF rechecks if the dependency is resolved or failed, else blocks.

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
            contradiction=_detect_contradictions(exclusions),
            **extra,
        )

    def hold(output: Any, rounds: int, reason: str | None, note: str) -> LoopOutcome:
        if on_hold is not None:
            on_hold(output, note)
        return finish(LoopStatus.HELD, output, rounds, held_reason=reason)

    for round_num in range(1, max_rounds + 1):
        output = generate(task, exclusions=list(exclusions))
        result = check(output)
        verdict = result.verdict
        if verdict == Verdict.YES:
            return finish(LoopStatus.ACCEPTED, output, round_num)
        if verdict == Verdict.NO:
            exclusions.append(_reason(result))
            continue
        if verdict == Verdict.MAYBE:
            needed = result.needed
            if not isinstance(needed, str):
                reason = "typed MAYBE need requires QICTController"
                return hold(output, round_num, reason, reason)
            if gather is None or recheck is None:
                return hold(output, round_num, needed, needed)
            second = recheck(output, gather(needed))
            if second.verdict == Verdict.YES:
                return finish(LoopStatus.ACCEPTED, output, round_num)
            if second.verdict == Verdict.NO:
                exclusions.append(_reason(second))
                continue
            held = second.needed if isinstance(second.needed, str) and second.needed else None
            held = held or second.dependency or None
            return hold(output, round_num, held, held or "unresolvable")
        dep = result.dependency  # IFF: CheckResult allows no other verdict
        assert dep is not None  # CheckResult guarantees it for IFF
        for probe in (is_resolved, is_failed):
            if probe is not None and probe(dep) and recheck is not None:
                again = recheck(output)
                if again.verdict == Verdict.YES:
                    return finish(LoopStatus.ACCEPTED, output, round_num)
                if again.verdict == Verdict.NO:
                    exclusions.append(_reason(again))
                    break
        else:
            if on_blocked is not None:
                on_blocked(output, dep)
            return finish(LoopStatus.BLOCKED, output, round_num, blocked_by=dep)
    return finish(LoopStatus.EXHAUSTED, None, max_rounds)


def _reason(result: CheckResult) -> str:
    assert result.reason is not None  # CheckResult guarantees it for NO
    return result.reason
