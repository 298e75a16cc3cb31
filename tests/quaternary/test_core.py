"""Verdicts, typed needs, CheckResult and its constructors."""

from __future__ import annotations

import dataclasses
import re

import pytest

import four.quaternary as q
from four.quaternary import CheckResult, ComputeNeed, EvidenceNeed, Verdict, iff, maybe, no, yes

VERDICT4_NAMES = {
    "AuditResult",
    "CandidateDisposition",
    "CheckResult",
    "ComputeNeed",
    "ControllerAction",
    "ControllerEvent",
    "ControllerEventKind",
    "ControllerState",
    "ControllerStatus",
    "DependencyRecord",
    "EvaluationReceipt",
    "EventReceipt",
    "EvidenceNeed",
    "Lease",
    "LeaseKind",
    "LoopOutcome",
    "Needed",
    "QICTConfig",
    "QICTController",
    "ResolutionOutcome",
    "TransitionReceipt",
    "Verdict",
    "audit_trace",
    "iff",
    "maybe",
    "no",
    "rank",
    "run",
    "yes",
}
ADDITIONS = {"LoopStatus", "admissible_rank", "dump_receipts", "head_digest", "load_receipts"}


def test_public_names_are_verdict4_plus_additions() -> None:
    """__all__ is verdict4 0.2.0's 29 names plus the documented additions."""
    assert len(VERDICT4_NAMES) == 29
    assert set(q.__all__) == VERDICT4_NAMES | ADDITIONS
    assert all(hasattr(q, name) for name in q.__all__)
    assert q.__version__ == "0.2.0"


def test_verdict_values_and_order() -> None:
    """NO=0, YES=1, MAYBE=2, IFF=3, ordered as ints."""
    assert [v.value for v in Verdict] == [0, 1, 2, 3]
    assert Verdict.NO < Verdict.YES < Verdict.MAYBE < Verdict.IFF
    assert Verdict.MAYBE == 2  # type: ignore[comparison-overlap]


@pytest.mark.parametrize("cls", [EvidenceNeed, ComputeNeed])
def test_needs_reject_an_empty_identifier(cls: type) -> None:
    """A typed need requires a non-empty canonical identifier."""
    with pytest.raises(ValueError, match="requires a non-empty canonical identifier"):
        cls("")


@pytest.mark.parametrize("cls", [EvidenceNeed, ComputeNeed])
@pytest.mark.parametrize("bad", [None, 0])
def test_needs_name_an_identifier_that_is_no_str(cls: type, bad: object) -> None:
    """An identifier of another type is a TypeError naming the field."""
    with pytest.raises(TypeError, match=rf"^{cls.__name__}: \w+={bad!r}: give a str"):
        cls(bad)


def test_needs_are_hashable_and_distinct() -> None:
    """Needs hash, and an evidence need never equals a compute need."""
    assert hash(EvidenceNeed("x")) == hash(EvidenceNeed("x"))
    assert EvidenceNeed("x") != ComputeNeed("x")  # type: ignore[comparison-overlap]
    assert q.Needed == EvidenceNeed | ComputeNeed


@pytest.mark.parametrize(
    ("verdict", "word"),
    [(Verdict.NO, "reason"), (Verdict.MAYBE, "needed"), (Verdict.IFF, "dependency")],
)
def test_missing_payload_field_raises(verdict: Verdict, word: str) -> None:
    """NO needs a reason, MAYBE needs `needed`, IFF needs a dependency."""
    with pytest.raises(ValueError, match=word):
        CheckResult(verdict)


def test_messages_match_verdict4() -> None:
    """The exact messages of verdict4."""
    with pytest.raises(
        ValueError, match=re.escape("NO verdict requires a reason. Failure must not be anonymous.")
    ):
        CheckResult(Verdict.NO)
    with pytest.raises(ValueError, match=re.escape("MAYBE verdict requires needed evidence.")):
        CheckResult(Verdict.MAYBE)
    with pytest.raises(ValueError, match=re.escape("IFF verdict requires a named dependency.")):
        CheckResult(Verdict.IFF)


def test_int_verdict_is_coerced() -> None:
    """A plain int 0..3 becomes the Verdict member."""
    result = CheckResult(0, reason="r")  # type: ignore[arg-type]
    assert type(result.verdict) is Verdict
    assert result.verdict is Verdict.NO


@pytest.mark.parametrize("bad", [7, -1, 4])
def test_unknown_verdict_is_rejected(bad: int) -> None:
    """An unknown verdict is rejected when the CheckResult is built (verdict4 looped)."""
    with pytest.raises(ValueError, match="unknown verdict"):
        CheckResult(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [True, 1.0, "1", None])
def test_non_int_verdict_is_rejected(bad: object) -> None:
    """Bools, floats and other types are not silently coerced."""
    with pytest.raises(TypeError):
        CheckResult(bad)  # type: ignore[arg-type]


def test_lenient_fields_as_verdict4() -> None:
    """Empty reasons, extra fields and untyped needs are accepted, as in verdict4."""
    assert no("").reason == ""
    assert CheckResult(Verdict.YES, reason="fine").reason == "fine"
    assert maybe(42).needed == 42  # type: ignore[arg-type,comparison-overlap]


def test_frozen_and_unhashable_meta() -> None:
    """Assignment raises FrozenInstanceError; the meta dict makes hash() raise."""
    result = yes(source="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.reason = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(result)
    assert result.meta == {"source": "x"}


def test_constructors() -> None:
    """Each constructor sets exactly its payload field and keeps meta."""
    assert no("r", a=1) == CheckResult(Verdict.NO, reason="r", meta={"a": 1})
    assert yes() == CheckResult(Verdict.YES)
    assert maybe("m").needed == "m"
    assert iff("d").dependency == "d"
    assert [f.name for f in dataclasses.fields(CheckResult)] == [
        "verdict",
        "reason",
        "needed",
        "dependency",
        "meta",
    ]
