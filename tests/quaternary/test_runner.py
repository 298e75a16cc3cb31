"""The plain runner `run`: branch order, outcome fields, callbacks and the fixed defects."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from four.quaternary import CheckResult, LoopOutcome, LoopStatus, iff, maybe, no, run, yes
from four.quaternary._core import EvidenceNeed


def scripted(*results: CheckResult) -> Callable[[Any], CheckResult]:
    it: Iterator[CheckResult] = iter(results)
    return lambda output: next(it)


def gen(task: Any, *, exclusions: list[str]) -> Any:
    return len(exclusions)


def test_yes_accepts_first_round() -> None:
    outcome = run("t", generate=gen, check=scripted(yes()))
    assert outcome == LoopOutcome(LoopStatus.ACCEPTED, 0, [], rounds=1)
    assert outcome.status == "accepted" and isinstance(outcome.status, LoopStatus)


def test_no_accumulates_duplicates_then_exhausts() -> None:
    outcome = run("t", generate=gen, check=scripted(no("a"), no("a"), no("a")), max_rounds=3)
    assert outcome.status == "exhausted"
    assert outcome.exclusions == ["a", "a", "a"]
    assert outcome.output is None and outcome.rounds == 3


def test_generate_gets_a_snapshot() -> None:
    """Mutating the list passed to generate does not change the runner's exclusions."""
    seen: list[list[str]] = []

    def greedy(task: Any, *, exclusions: list[str]) -> Any:
        seen.append(list(exclusions))
        exclusions.append("junk")
        return 1

    outcome = run("t", generate=greedy, check=scripted(no("a"), yes()))
    assert outcome.exclusions == ["a"]
    assert seen == [[], ["a"]]


@pytest.mark.parametrize("rounds", [0, -2])
def test_max_rounds_below_one_is_rejected(rounds: int) -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        run("t", generate=gen, check=scripted(), max_rounds=rounds)


def test_string_maybe_without_gather_holds() -> None:
    holds: list[tuple[Any, str]] = []
    outcome = run(
        "t",
        generate=gen,
        check=scripted(maybe("schema")),
        gather=lambda n: 1,
        on_hold=lambda o, r: holds.append((o, r)),
    )
    assert (outcome.status, outcome.held_reason) == ("held", "schema")
    assert holds == [(0, "schema")]


def test_typed_maybe_holds_without_gather() -> None:
    calls: list[str] = []
    outcome = run(
        "t",
        generate=gen,
        check=scripted(maybe(EvidenceNeed("e"))),
        gather=lambda n: calls.append(n),
        recheck=lambda o, e=None: yes(),
    )
    assert outcome.held_reason == "typed MAYBE need requires QICTController"
    assert calls == []


def test_gather_then_recheck_outcomes() -> None:
    evidence: list[Any] = []

    def recheck(output: Any, ev: Any = None) -> CheckResult:
        evidence.append(ev)
        return yes()

    ok = run(
        "t", generate=gen, check=scripted(maybe("m")), gather=lambda n: n + "!", recheck=recheck
    )
    assert (ok.status, ok.rounds, evidence) == ("accepted", 1, ["m!"])
    retry = run(
        "t",
        generate=gen,
        check=scripted(maybe("m"), yes()),
        gather=lambda n: 0,
        recheck=lambda o, e=None: no("bad"),
    )
    assert (retry.status, retry.rounds, retry.exclusions) == ("accepted", 2, ["bad"])


def test_second_maybe_holds_with_verdict4_reasons() -> None:
    holds: list[str] = []
    outcome = run(
        "t",
        generate=gen,
        check=scripted(maybe("m")),
        gather=lambda n: 0,
        recheck=lambda o, e=None: maybe("m2"),
        on_hold=lambda o, r: holds.append(r),
    )
    assert (outcome.status, outcome.held_reason, holds) == ("held", "m2", ["m2"])
    typed = run(
        "t",
        generate=gen,
        check=scripted(maybe("m")),
        gather=lambda n: 0,
        recheck=lambda o, e=None: maybe(EvidenceNeed("x")),
        on_hold=lambda o, r: holds.append(r),
    )
    assert typed.held_reason is None and holds[-1] == "unresolvable"
    dep = run(
        "t",
        generate=gen,
        check=scripted(maybe("m")),
        gather=lambda n: 0,
        recheck=lambda o, e=None: iff("d"),
    )
    assert dep.held_reason == "d"


def test_iff_resolved_rechecks_once_per_probe() -> None:
    calls: list[str] = []

    def recheck(output: Any, ev: Any = None) -> CheckResult:
        calls.append("recheck")
        return maybe("still")

    outcome = run(
        "t",
        generate=gen,
        check=scripted(iff("d")),
        recheck=recheck,
        is_resolved=lambda d: True,
        is_failed=lambda d: True,
    )
    assert (outcome.status, outcome.blocked_by) == ("blocked", "d")
    assert calls == ["recheck", "recheck"]


def test_iff_probes_called_without_recheck() -> None:
    probed: list[str] = []
    blocked: list[str] = []

    def resolved(dep: str) -> bool:
        probed.append(dep)
        return True

    outcome = run(
        "t",
        generate=gen,
        check=scripted(iff("d")),
        is_resolved=resolved,
        on_blocked=lambda o, d: blocked.append(d),
    )
    assert outcome.status == "blocked" and probed == ["d"] and blocked == ["d"]


def test_iff_failed_then_yes_and_no() -> None:
    ok = run(
        "t",
        generate=gen,
        check=scripted(iff("d")),
        recheck=lambda o, e=None: yes(),
        is_failed=lambda d: True,
    )
    assert ok.status == "accepted"
    retry = run(
        "t",
        generate=gen,
        check=scripted(iff("d"), yes()),
        recheck=lambda o, e=None: no("x"),
        is_resolved=lambda d: True,
    )
    assert (retry.status, retry.exclusions, retry.rounds) == ("accepted", ["x"], 2)


def test_contradictions_flagged_as_verdict4() -> None:
    outcome = run(
        "t",
        generate=gen,
        check=scripted(no("Don't   use X"), no("use x"), no("use x "), no("notx")),
        max_rounds=4,
    )
    assert outcome.contradiction == [("Don't   use X", "use x")]
    clean = run("t", generate=gen, check=scripted(yes()))
    assert clean.contradiction is None


def test_callback_exceptions_propagate() -> None:
    def boom(task: Any, *, exclusions: list[str]) -> Any:
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        run("t", generate=boom, check=scripted())
