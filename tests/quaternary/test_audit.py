"""audit_trace and controller.audit(): verdict4's errors plus digests, heads and configs."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from four.quaternary import (
    ComputeNeed,
    ControllerAction,
    ControllerState,
    ControllerStatus,
    DependencyRecord,
    EvaluationReceipt,
    EvidenceNeed,
    QICTConfig,
    QICTController,
    ResolutionOutcome,
    TransitionReceipt,
    audit_trace,
    dump_receipts,
    head_digest,
    iff,
    load_receipts,
    maybe,
    no,
    yes,
)

CONFIG = QICTConfig(
    failure_alphabet={"a", "b"},
    evidence_alphabet={"g"},
    compute_alphabet={"k"},
    dependency_alphabet={"d"},
    lease_ticks=2,
)


def full_run() -> QICTController:
    controller = QICTController(CONFIG)
    controller.process(no("a"))
    controller.process(maybe(EvidenceNeed("g")))
    controller.advance_clock(1)
    controller.evidence_returned("evidence:g:2")
    controller.process(maybe(ComputeNeed("k")))
    controller.process(iff("d"))
    controller.resolve_dependency("dependency:d:4", ResolutionOutcome.HOLDS)
    controller.process(yes())
    return controller


def test_valid_trace_and_counts() -> None:
    controller = full_run()
    result = audit_trace(CONFIG, controller.receipts, head=controller.head)
    assert result.valid and result.errors == ()
    assert (result.evaluations, result.initial_rank, result.final_rank) == (5, 5, 1)
    assert result.head == controller.head == head_digest(CONFIG, controller.receipts)
    assert controller.audit() == audit_trace(CONFIG, controller.receipts)


def test_empty_trace_is_valid() -> None:
    result = audit_trace(CONFIG, [])
    assert result.valid and result.final_rank == result.initial_rank == 5
    assert result.head == head_digest(CONFIG, [])


def test_tampered_after_state_gives_two_errors() -> None:
    receipts: list[TransitionReceipt] = list(full_run().receipts)
    first = receipts[0]
    receipts[0] = dataclasses.replace(first, after=dataclasses.replace(first.after, clock=1))
    errors = audit_trace(CONFIG, receipts).errors
    assert errors == (
        "receipt 1: evaluation transition does not replay",
        "receipt 2: before-state breaks the receipt chain",
    )


def test_action_change_reports_replay_and_rho() -> None:
    controller = QICTController(CONFIG)
    controller.process(maybe(ComputeNeed("k")))
    receipts: list[TransitionReceipt] = list(controller.receipts)
    receipts[0] = dataclasses.replace(receipts[0], action=ControllerAction.EXIT_ACCEPT)
    errors = audit_trace(CONFIG, receipts).errors
    assert "receipt 1: evaluation transition does not replay" in errors
    assert "receipt 1: evaluation neither terminated nor reduced rho" in errors
    assert "receipt 1: digest does not match the chain" in errors


def test_rank_consuming_checks() -> None:
    controller = QICTController(CONFIG)
    receipt = controller.process(no("a"))
    terminated = dataclasses.replace(
        receipt, after=dataclasses.replace(receipt.after, status=ControllerStatus.HELD)
    )
    assert (
        "receipt 1: rank-consuming transition terminated"
        in audit_trace(CONFIG, [terminated]).errors
    )
    flat = dataclasses.replace(
        receipt, after=dataclasses.replace(receipt.after, exclusions=frozenset())
    )
    assert (
        "receipt 1: continuing transition did not reduce rho" in audit_trace(CONFIG, [flat]).errors
    )


def test_replay_raised_errors() -> None:
    controller = QICTController(CONFIG)
    receipt = controller.process(no("a"))
    bad = dataclasses.replace(receipt, payload=EvidenceNeed("g"))
    assert (
        "receipt 1: replay raised receipt payload must be a string"
        in audit_trace(CONFIG, [bad]).errors
    )
    # A receipt made by hand, past its constructor's check of the verdict.
    bad_maybe = dataclasses.replace(receipt, payload=3)  # type: ignore[arg-type]
    object.__setattr__(bad_maybe, "verdict", 2)
    assert (
        "receipt 1: replay raised MAYBE receipt payload has the wrong type"
        in audit_trace(CONFIG, [bad_maybe]).errors
    )
    done = full_run().receipts
    again = dataclasses.replace(done[-1], before=done[-1].after)
    errors = audit_trace(CONFIG, [*done, again]).errors
    assert errors[-1] == (
        "receipt 9: replay raised A terminal controller cannot evaluate another candidate."
    )


def test_evaluation_bound_error() -> None:
    controller = QICTController(QICTConfig(failure_alphabet={"a"}))
    controller.process(no("a"))
    controller.process(yes())
    result = audit_trace(QICTConfig(), controller.receipts)
    assert "evaluation count exceeds rho_0 + 1" in result.errors


def test_non_receipt_is_reported_not_raised() -> None:
    receipts: list[object] = [*full_run().receipts]
    receipts.insert(2, "junk")
    result = audit_trace(CONFIG, receipts)  # type: ignore[arg-type]
    assert result.errors == ("receipt 3: not a transition receipt (str)",)


def test_other_config_is_reported() -> None:
    controller = full_run()
    other = dataclasses.replace(CONFIG, lease_ticks=5)
    errors = audit_trace(other, controller.receipts).errors
    assert errors[0] == "receipt 1: digest does not match the chain"


def test_truncation_detected_with_head_only() -> None:
    controller = full_run()
    for cut in range(len(controller.receipts)):
        prefix = controller.receipts[:cut]
        assert audit_trace(CONFIG, prefix).valid
        result = audit_trace(CONFIG, prefix, head=controller.head)
        assert result.errors == ("trace does not end at the recorded head digest",)


def test_reorder_and_replayed_receipt_detected() -> None:
    receipts = list(full_run().receipts)
    for i in range(len(receipts) - 1):
        swapped = [*receipts[:i], receipts[i + 1], receipts[i], *receipts[i + 2 :]]
        assert not audit_trace(CONFIG, swapped).valid
    assert not audit_trace(CONFIG, [*receipts[:3], receipts[2], *receipts[3:]]).valid


def test_unsigned_receipt_is_invalid() -> None:
    controller = QICTController(CONFIG)
    receipt = controller.process(no("a"))
    assert not audit_trace(CONFIG, [dataclasses.replace(receipt, digest=b"")]).valid


def test_replaced_state_breaks_chain_at_receipt_one() -> None:
    controller = QICTController(CONFIG)
    controller.state = dataclasses.replace(controller.state, clock=4)
    controller.process(no("a"))
    assert controller.audit().errors == ("receipt 1: before-state breaks the receipt chain",)
    assert audit_trace(
        CONFIG, controller.receipts, initial_state=controller.receipts[0].before
    ).valid


def test_incremental_audit_sees_later_mutation() -> None:
    controller = full_run()
    assert controller.audit().valid
    first = controller.receipts[0]
    assert isinstance(first, EvaluationReceipt)
    controller.receipts[0] = dataclasses.replace(first, payload="b")
    assert not controller.audit().valid
    controller.receipts[0] = first
    assert controller.audit().valid
    controller.receipts.pop()
    assert controller.audit().valid  # a controller's own prefix stays valid
    controller.receipts = []
    assert controller.audit().valid


def test_incremental_audit_cost_is_per_new_receipt() -> None:
    """Auditing after every step replays each receipt once."""
    calls = 0
    from four.quaternary import _accounting

    original = _accounting.audit_feed

    def counting(config: QICTConfig, cursor: object, receipts: object, start: int) -> None:
        nonlocal calls
        calls += len(receipts) - start  # type: ignore[arg-type]
        original(config, cursor, receipts, start)  # type: ignore[arg-type]

    _accounting.audit_feed = counting
    try:
        controller = QICTController(QICTConfig(failure_alphabet={f"r{i}" for i in range(50)}))
        for i in range(50):
            controller.process(no(f"r{i}"))
            assert controller.audit().valid
    finally:
        _accounting.audit_feed = original
    assert calls == 50


def test_json_round_trip_is_lossless() -> None:
    controller = full_run()
    text = dump_receipts(controller.receipts)
    document = json.loads(text)
    assert (document["format"], document["version"]) == ("four.quaternary.receipts", 2)
    loaded = load_receipts(text)
    assert loaded == controller.receipts
    assert [r.digest for r in loaded] == [r.digest for r in controller.receipts]
    assert audit_trace(CONFIG, loaded, head=controller.head).valid
    assert dump_receipts(loaded) == text


def test_json_keeps_odd_values_and_chain_breaks() -> None:
    controller = QICTController(CONFIG)
    controller.process(maybe(1.5))  # type: ignore[arg-type]
    receipts: list[TransitionReceipt] = list(controller.receipts)
    assert isinstance(receipts[0], EvaluationReceipt)
    forged = dataclasses.replace(
        receipts[0], before=ControllerState(clock=2), dependency_arcs=frozenset({("x", "y")})
    )
    loaded = load_receipts(dump_receipts([forged, *receipts]))
    assert loaded == [forged, *receipts]
    assert type(loaded[1].payload) is float  # type: ignore[union-attr]


def test_json_keeps_outcomes_in_the_order_they_had() -> None:
    """Outcomes the controller would not write (out of name order, or one dropped) are
    stored whole and read back as they were; an outcome added in order is a delta."""
    holds, fails = ResolutionOutcome.HOLDS, ResolutionOutcome.FAILS
    receipt = QICTController(CONFIG).process(no("a"))
    records = [
        DependencyRecord(used=frozenset({"a", "b"}), outcomes=outcomes)
        for outcomes in ((("a", fails),), (("b", holds), ("a", fails)), (("a", fails),))
    ]
    records.append(
        DependencyRecord(used=frozenset({"a", "b"}), outcomes=(("a", fails), ("b", holds)))
    )
    states = [ControllerState(dependencies=record) for record in records]
    forged = [
        dataclasses.replace(receipt, before=before, after=after)
        for before, after in itertools.pairwise(states)
    ]
    text = dump_receipts(forged)
    deltas = [entry["after"]["dependencies"]["outcomes"] for entry in json.loads(text)["receipts"]]
    assert [next(iter(delta)) for delta in deltas] == ["replace", "replace", "add"]
    loaded = load_receipts(text)
    assert loaded == forged
    assert [r.after.dependencies.outcomes for r in loaded] == [r.outcomes for r in records[1:]]


def test_json_rejects_other_documents() -> None:
    with pytest.raises(ValueError, match=re.escape("not a four.quaternary receipts document")):
        load_receipts("{}")
    with pytest.raises(ValueError, match="unsupported receipts document version"):
        load_receipts('{"format": "four.quaternary.receipts", "version": 99, "receipts": []}')
    with pytest.raises(ValueError, match="malformed"):
        load_receipts(
            '{"format": "four.quaternary.receipts", "version": 1, "receipts": [{"before": {}}]}'
        )


def test_trace_audited_by_another_process(tmp_path: Path) -> None:
    controller = full_run()
    path = tmp_path / "trace.json"
    path.write_text(dump_receipts(controller.receipts))
    script = (
        "import sys\n"
        "from four.quaternary import QICTConfig, audit_trace, load_receipts\n"
        "config = QICTConfig(failure_alphabet={'a', 'b'}, evidence_alphabet={'g'},"
        " compute_alphabet={'k'}, dependency_alphabet={'d'}, lease_ticks=2)\n"
        "receipts = load_receipts(open(sys.argv[1]).read())\n"
        "print(audit_trace(config, receipts, head=bytes.fromhex(sys.argv[2])).valid)\n"
    )
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), controller.head.hex()],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(src)},
    )
    assert done.stdout.strip() == "True"
