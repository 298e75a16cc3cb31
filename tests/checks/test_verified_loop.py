"""The verified loop: checks judge submissions, the QICT controller bounds the judging."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from four import (
    Accepted,
    Blocked,
    Held,
    Message,
    Outcome,
    StepsExhausted,
    User,
    audit,
    load_trajectory,
    run,
    save_trajectory,
    scripted_invoke,
    verify,
)
from four.checks import Check, Claim
from four.quaternary import CheckResult, ComputeNeed, EvidenceNeed, iff, maybe, no, yes
from four.trajectory import Detail
from tests._doubles import FakeEnv, line_parse


def verdicts(*results: CheckResult) -> tuple[list[Claim], Check]:
    """A check returning the given verdicts in order (and recording what it saw)."""
    seen: list[Claim] = []

    def check(claim: Claim) -> CheckResult:
        seen.append(claim)
        return results[len(seen) - 1]

    return seen, check


def keep(messages: Sequence[Message], outcome: Outcome) -> tuple[list[Message], Outcome]:
    return list(messages), outcome


def test_yes_accepts_with_the_final_output(tmp_path: Path) -> None:
    seen, check = verdicts(yes())
    path = run(
        scripted_invoke(["DONE 42"]),
        line_parse,
        FakeEnv(),
        save_trajectory(tmp_path),
        "s",
        "p",
        check=verify(check),
    )
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "accepted"
    assert trajectory.detail == Detail(kind="accepted", output="42")
    assert seen[0].output == "42" and seen[0].messages[-1].content == "DONE 42"
    record = trajectory.stats.verdicts
    assert record is not None and record.evaluations == 1
    assert audit(path).valid


def test_no_reasons_are_fed_back_and_accumulate(tmp_path: Path) -> None:
    seen, check = verdicts(no("test_a fails"), no("test_b fails"), yes())
    history, outcome = run(
        scripted_invoke(["DONE v1", "$ fix a", "DONE v2", "DONE v3"]),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        check=verify(check, feedback="full"),
    )
    assert outcome == Accepted("v3")
    feedback = [m.content for m in history if isinstance(m, User) and "not accepted" in m.content]
    assert len(feedback) == 2 and "test_a fails" in feedback[0] and "test_b fails" in feedback[1]
    assert len(seen) == 3


def test_a_repeated_reason_ends_the_run_held() -> None:
    _, check = verdicts(no("same"), no("same"))
    _, outcome = run(
        scripted_invoke(["DONE", "DONE"]),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        check=verify(check),
    )
    assert outcome == Held(
        "repeated failure: same (a reason is told to the agent once, then ends the run; "
        "retries_per_reason=2 allows one more attempt)"
    )
    assert outcome.text.startswith("held: repeated failure: same (")


def test_retries_per_reason_allows_more_attempts_of_one_reason() -> None:
    seen, check = verdicts(no("same"), no("same"), no("same"))
    _, outcome = run(
        scripted_invoke(["DONE"] * 3),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        check=verify(check, retries_per_reason=2),
    )
    assert len(seen) == 3
    assert isinstance(outcome, Held) and outcome.reason.startswith(
        "repeated failure: same (a reason is told to the agent 2 times, then ends the run; "
        "retries_per_reason=3"
    )


def test_more_distinct_reasons_than_the_alphabet_holds() -> None:
    _, check = verdicts(no("a"), no("b"), no("c"))
    _, outcome = run(
        scripted_invoke(["DONE"] * 3),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        check=verify(check, failures=2),
    )
    assert outcome == Held("more than 2 distinct failures: c (failures=3 allows one more)")


def test_explicit_failure_alphabet_rejects_unknown_reasons() -> None:
    _, check = verdicts(no("known"), no("surprise"))
    _, outcome = run(
        scripted_invoke(["DONE"] * 2),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        check=verify(check, failures=frozenset({"known"})),
    )
    assert outcome == Held("inadmissible or repeated failure: surprise")


def test_maybe_gathers_evidence_then_rechecks() -> None:
    def check(claim: Claim) -> CheckResult:
        if "logs" not in claim.evidence:
            return maybe(EvidenceNeed("logs"))
        return yes() if claim.evidence["logs"] == "ran ls" else no("bad logs")

    _, outcome = run(
        scripted_invoke(["DONE"]),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        check=verify(check, evidence={"logs": "ls"}),  # a command run through V2
    )
    assert outcome == Accepted("")


def test_compute_need_admits_more_steps() -> None:
    _, check = verdicts(maybe(ComputeNeed("write docs")), yes())
    history, outcome = run(
        scripted_invoke(["DONE", "$ a", "$ b", "DONE"]),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        max_steps=1,
        check=verify(check, compute=1, compute_steps=3, feedback="full"),
    )
    assert outcome == Accepted("")
    assert any(isinstance(m, User) and "write docs" in m.content for m in history)


def test_compute_budget_is_also_a_step_budget() -> None:
    seen, check = verdicts(maybe(ComputeNeed("more")), no("not yet"))  # the NO at the end
    _, outcome = run(
        scripted_invoke(["DONE", "$ a", "$ b", "$ c"]),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        max_steps=1,
        check=verify(check, compute=1, compute_steps=2),
    )
    assert outcome == StepsExhausted() and len(seen) == 2


@pytest.mark.parametrize(("resolution", "expected"), [(None, Blocked("db")), (True, Accepted(""))])
def test_iff_is_resolved_or_blocks(resolution: bool | None, expected: Outcome) -> None:
    def check(claim: Claim) -> CheckResult:
        return yes() if claim.resolved.get("db") else iff("db")

    _, outcome = run(
        scripted_invoke(["DONE"]),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
        check=verify(check, dependencies={"db": lambda claim: resolution}),
    )
    assert outcome == expected


def test_a_check_that_raises_is_recorded_as_the_check(tmp_path: Path) -> None:
    def check(claim: Claim) -> CheckResult:
        raise RuntimeError("check bug")

    with pytest.raises(RuntimeError):
        run(
            scripted_invoke(["DONE"]),
            line_parse,
            FakeEnv(),
            save_trajectory(tmp_path),
            "s",
            "p",
            check=verify(check),
        )
    assert (
        load_trajectory(next(tmp_path.glob("*.json"))).outcome
        == "crashed: check: RuntimeError: check bug"
    )


def test_audit_catches_edits_truncation_and_missing_records(tmp_path: Path) -> None:
    _, check = verdicts(no("x"), no("y"), yes())
    path = run(
        scripted_invoke(["DONE"] * 3),
        line_parse,
        FakeEnv(),
        save_trajectory(tmp_path),
        "s",
        "p",
        check=verify(check),
    )
    assert audit(path).valid and audit(path).evaluations == 3
    document = json.loads(path.read_text())
    record = document["stats"]["verdicts"]

    def audited(change: object) -> bool:
        changed = json.loads(json.dumps(document))
        change(changed["stats"]["verdicts"])  # type: ignore[operator]
        target = tmp_path / "edited.json"
        target.write_text(json.dumps(changed))
        return audit(target).valid

    assert not audited(lambda r: r.update(head="00" * 32))
    assert not audited(
        lambda r: r["config"].update(failure_alphabet=["no:1", "no:2", "no:3", "no:4"])
    )
    receipts = record["receipts"]
    assert receipts, "receipts are stored"
    assert not audited(lambda r: r.update(receipts=_truncated(r["receipts"])))
    no_verdicts = save_trajectory(tmp_path)([User("x")], Accepted())
    result = audit(no_verdicts)
    assert not result.valid
    assert result.errors == ("the outcome is 'accepted' but the run holds no verdicts to show it",)


def _truncated(receipts: object) -> object:
    if isinstance(receipts, dict) and isinstance(receipts.get("receipts"), list):
        return {**receipts, "receipts": receipts["receipts"][:-1]}
    assert isinstance(receipts, list)
    return receipts[:-1]
