"""Each transition row and held reason of verdict4 0.2.0's controller (spec 4.1-4.7)."""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable

import pytest

from four.quaternary import (
    CandidateDisposition,
    ComputeNeed,
    ControllerAction,
    ControllerState,
    ControllerStatus,
    DependencyRecord,
    EvaluationReceipt,
    EventReceipt,
    EvidenceNeed,
    Lease,
    LeaseKind,
    QICTConfig,
    QICTController,
    ResolutionOutcome,
    admissible_rank,
    iff,
    maybe,
    no,
    rank,
    yes,
)

A = ControllerAction
HOLDS, FAILS = ResolutionOutcome.HOLDS, ResolutionOutcome.FAILS


def make(**kwargs: object) -> QICTController:
    base: dict[str, object] = {
        "failure_alphabet": {"f1", "f2", "f3"},
        "evidence_alphabet": {"g1", "g2"},
        "compute_alphabet": {"k1", "k2"},
        "dependency_alphabet": {"d1", "d2"},
        "lease_ticks": 3,
    }
    base.update(kwargs)
    return QICTController(QICTConfig(**base))  # type: ignore[arg-type]


# ---------------------------------------------------------------- config and state


def test_config_conversions_and_defaults() -> None:
    config = QICTConfig(failure_alphabet=("a", "b"), dependency_alphabet=["d"])  # type: ignore[arg-type]
    assert config.failure_alphabet == {"a", "b"}
    assert config.admissible_failures is config.failure_alphabet
    assert config.admissible_dependencies == {"d"}
    assert hash(config) == hash(QICTConfig(failure_alphabet={"a", "b"}, dependency_alphabet={"d"}))
    state = QICTConfig(
        evidence_alphabet={"g"}, compute_budget=0, compute_alphabet={"k"}
    ).initial_state()
    assert (state.evidence_budget, state.compute_budget, state.dependency_budget) == (1, 0, 0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"failure_alphabet": {"a"}, "admissible_failures": {"b"}},
            "Admissible failures must belong to the failure alphabet.",
        ),
        (
            {"admissible_dependencies": {"d"}},
            "Admissible dependencies must belong to the dependency alphabet.",
        ),
        ({"evidence_budget": 1}, "evidence budget must be between zero and its alphabet size."),
        ({"compute_budget": -1}, "compute budget must be between zero and its alphabet size."),
        (
            {"dependency_budget": 2, "dependency_alphabet": {"d"}},
            "dependency budget must be between zero and its alphabet size.",
        ),
        ({"lease_ticks": 0}, "A lease must have a positive finite duration."),
    ],
)
def test_config_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        QICTConfig(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"failure_alphabet": "abc"},
        {"lease_ticks": 0.5},
        {"lease_ticks": True},
        {"evidence_budget": True, "evidence_alphabet": {"g"}},
    ],
)
def test_config_rejects_silent_coercions(kwargs: dict[str, object]) -> None:
    """A str alphabet, bool or float counts are rejected (verdict4 accepted them)."""
    with pytest.raises(TypeError):
        QICTConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"evidence_budget": -1}, "Controller budgets cannot be negative."),
        ({"clock": -1}, "Controller indices cannot be negative."),
        ({"evaluation_count": -1}, "Controller indices cannot be negative."),
        (
            {
                "status": ControllerStatus.HELD,
                "pending_lease": Lease("x", LeaseKind.EVIDENCE, "g", 1),
            },
            "A terminal controller cannot retain a pending lease.",
        ),
    ],
)
def test_state_invariants(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        ControllerState(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"unresolved": frozenset({"a"})}, "Unresolved dependencies must have been bound."),
        (
            {
                "used": frozenset({"a", "b"}),
                "unresolved": frozenset({"a"}),
                "relation": frozenset({("a", "b")}),
            },
            "Dependency arcs must join unresolved vertices.",
        ),
        (
            {"used": frozenset({"a"}), "outcomes": (("a", HOLDS), ("a", FAILS))},
            "A dependency may have only one recorded outcome.",
        ),
        ({"outcomes": (("a", HOLDS),)}, "Outcomes belong only to resolved dependencies."),
        (
            {
                "used": frozenset({"a"}),
                "unresolved": frozenset({"a"}),
                "relation": frozenset({("a", "a")}),
            },
            "The unresolved dependency relation must be acyclic.",
        ),
    ],
)
def test_record_invariants(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        DependencyRecord(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_long_chain_is_checked_without_recursion() -> None:
    names = [f"v{i}" for i in range(5000)]
    arcs = frozenset(itertools.pairwise(names))
    record = DependencyRecord(frozenset(names), frozenset(names), arcs)
    assert len(record.relation) == 4999
    with pytest.raises(ValueError, match="acyclic"):
        DependencyRecord(frozenset(names), frozenset(names), arcs | {(names[-1], names[0])})


def test_state_dataclass_compatibility() -> None:
    """fields/replace work; sets compare equal to set literals; no candidate fields."""
    controller = make()
    controller.process(no("f1"))
    state = controller.state
    names = [f.name for f in dataclasses.fields(state)]
    assert names == [
        "exclusions",
        "used_evidence",
        "used_compute",
        "dependencies",
        "evidence_budget",
        "compute_budget",
        "dependency_budget",
        "status",
        "candidate_disposition",
        "evaluation_count",
        "clock",
        "pending_lease",
        "held_reason",
    ]
    assert not {"candidate", "candidate_activation", "hidden_state"} & set(names)
    assert state.exclusions == {"f1"} and isinstance(state.exclusions, frozenset)
    moved = dataclasses.replace(state, clock=5)
    assert moved.exclusions == {"f1"} and moved.clock == 5
    assert dataclasses.replace(state) == state and hash(dataclasses.replace(state)) == hash(state)
    receipt = controller.receipts[0]
    assert isinstance(receipt, EvaluationReceipt)
    assert dataclasses.replace(receipt, evaluation_index=9).evaluation_index == 9
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.clock = 3  # type: ignore[misc]


# ---------------------------------------------------------------- evaluation rows


def test_yes_row() -> None:
    controller = make()
    receipt = controller.process(yes(note=1))
    assert receipt.action == A.EXIT_ACCEPT and receipt.payload is None
    after = receipt.after
    assert after.status == ControllerStatus.ACCEPTED
    assert after.candidate_disposition == CandidateDisposition.TERMINALLY_ACCEPTED
    assert after.evaluation_count == 1 == receipt.evaluation_index


def test_no_row_and_hold() -> None:
    controller = make(admissible_failures={"f1", "f2"})
    receipt = controller.process(no("f1"))
    assert receipt.action == A.EXCLUDE_RETRY and receipt.after.exclusions == {"f1"}
    assert receipt.payload == "f1" and receipt.before.exclusions == set()
    for reason in ("f1", "f3", "zz"):  # repeated, inadmissible, outside the alphabet
        c = make(admissible_failures={"f1", "f2"})
        c.process(no("f1"))
        held = c.process(no(reason)).after
        assert held.status == ControllerStatus.HELD
        assert held.held_reason == f"inadmissible or repeated failure: {reason}"
        assert held.exclusions == {"f1"} and held.evaluation_count == 2


def test_gather_row_lease_and_hold() -> None:
    controller = make(evidence_budget=1)
    receipt = controller.process(maybe(EvidenceNeed("g1")))
    after = receipt.after
    assert receipt.action == A.GATHER
    assert after.used_evidence == {"g1"} and after.evidence_budget == 0
    assert after.pending_lease == Lease("evidence:g1:1", LeaseKind.EVIDENCE, "g1", 3)
    assert after.candidate_disposition is None
    controller.evidence_returned("evidence:g1:1")
    held = controller.process(maybe(EvidenceNeed("g2"))).after  # budget exhausted
    assert held.held_reason == "inadmissible or repeated evidence need: g2"


def test_admit_next_row_and_hold() -> None:
    controller = make()
    receipt = controller.process(maybe(ComputeNeed("k1")))
    assert receipt.action == A.ADMIT_NEXT and receipt.after.pending_lease is None
    assert receipt.after.candidate_disposition == CandidateDisposition.SOURCE_ADMISSIBLE
    assert receipt.after.used_compute == {"k1"} and receipt.after.compute_budget == 1
    held = controller.process(maybe(ComputeNeed("k1"))).after
    assert held.held_reason == "inadmissible or repeated compute need: k1"
    assert held.candidate_disposition is None


@pytest.mark.parametrize("needed", ["free text", 42])
def test_untyped_maybe_holds(needed: object) -> None:
    held = make().process(maybe(needed)).after  # type: ignore[arg-type]
    assert held.held_reason == "finite-rank control requires a typed MAYBE payload"


def test_bind_row_resolution_and_one_use() -> None:
    controller = make(admissible_dependencies={"d1"})
    receipt = controller.process(iff("d1"))
    after = receipt.after
    assert receipt.action == A.BIND
    assert after.pending_lease == Lease("dependency:d1:1", LeaseKind.DEPENDENCY, "d1", 3)
    assert after.dependencies == DependencyRecord(frozenset({"d1"}), frozenset({"d1"}))
    assert after.dependency_budget == 1
    event = controller.resolve_dependency("dependency:d1:1", FAILS)
    assert event.action == A.REEVALUATE
    record = event.after.dependencies
    assert record.used == {"d1"} and record.unresolved == set()
    assert record.outcomes == (("d1", FAILS),) and record.outcome_for("d1") == FAILS
    assert event.after.candidate_disposition == CandidateDisposition.SOURCE_ADMISSIBLE
    held = controller.process(iff("d1")).after  # one use, even after resolution
    assert held.held_reason == "inadmissible or repeated dependency: d1"
    other = make(admissible_dependencies={"d1"})
    assert other.process(iff("d2")).after.held_reason == "inadmissible or repeated dependency: d2"


def test_outcomes_stay_sorted() -> None:
    controller = make()
    controller.process(iff("d2"))
    controller.resolve_dependency("dependency:d2:1", HOLDS)
    controller.process(iff("d1"))
    controller.resolve_dependency("dependency:d1:2", FAILS)
    assert controller.state.dependencies.outcomes == (("d1", FAILS), ("d2", HOLDS))


@pytest.mark.parametrize(
    ("arcs", "reason"),
    [
        ([("d1", "d1")], "The unresolved dependency relation must be acyclic."),
        ([("d1", "d2")], "Dependency arcs must join unresolved vertices."),
        ([("d1", "d2", "x")], "too many values to unpack (expected 2)"),
    ],
)
def test_bind_with_arcs_holds(arcs: list[tuple[str, ...]], reason: str) -> None:
    receipt = make().process(iff("d1"), dependency_arcs=arcs)  # type: ignore[arg-type]
    assert receipt.action == A.HOLD and receipt.after.held_reason == reason
    assert receipt.dependency_arcs == frozenset(arcs)


def test_arcs_on_hand_built_state() -> None:
    """Arcs matter only for hand-built states; a cycle through them holds."""
    controller = make()
    controller.state = dataclasses.replace(
        controller.state,
        dependencies=DependencyRecord(frozenset({"d2"}), frozenset({"d2"})),
    )
    ok = controller.process(iff("d1"), dependency_arcs=[("d2", "d1")])
    assert ok.action == A.BIND and ok.after.dependencies.relation == {("d2", "d1")}
    controller.resolve_dependency("dependency:d1:1", HOLDS)
    assert controller.state.dependencies.relation == set()
    assert controller.state.dependencies.unresolved == {"d2"}


def test_list_arcs_raise_and_leave_state() -> None:
    controller = make()
    with pytest.raises(TypeError):
        controller.process(iff("d1"), dependency_arcs=[["d1", "d2"]])  # type: ignore[list-item]
    assert controller.receipts == [] and controller.state == controller.config.initial_state()


def test_process_preconditions() -> None:
    controller = make()
    controller.process(maybe(EvidenceNeed("g1")))
    with pytest.raises(
        ValueError, match=re.escape("A pending lease must return or expire before re-evaluation.")
    ):
        controller.process(yes())
    controller.expire("evidence:g1:1")
    with pytest.raises(
        ValueError, match=re.escape("A terminal controller cannot evaluate another candidate.")
    ):
        controller.process(yes())
    with pytest.raises(
        ValueError, match=re.escape("A terminal controller cannot consume another event.")
    ):
        controller.advance_clock(9)
    assert len(controller.receipts) == 2


# ---------------------------------------------------------------- events


def gathering() -> QICTController:
    controller = make()
    controller.process(maybe(EvidenceNeed("g1")))
    return controller


def test_wait_then_expire_by_clock() -> None:
    controller = gathering()
    wait = controller.advance_clock(2)
    assert wait.action == A.WAIT and wait.after.clock == 2 and wait.after.pending_lease
    expired = controller.advance_clock(3)
    assert expired.action == A.EXPIRE and expired.after.clock == 3
    assert expired.after.held_reason == "lease expired" and expired.after.pending_lease is None


@pytest.mark.parametrize(
    ("poke", "action", "reason"),
    [
        (lambda c: c.advance_clock(0), A.HOLD, "clock must advance strictly"),
        (lambda c: c.evidence_returned("wrong"), A.HOLD, "controller event names the wrong lease"),
        (lambda c: c.expire("evidence:g1:1"), A.EXPIRE, "lease expired"),
        (
            lambda c: c.resolve_dependency("evidence:g1:1", HOLDS),
            A.HOLD,
            "invalid dependency resolution event",
        ),
        (
            lambda c: c.invalidate_dependency("d1"),
            A.HOLD,
            "dependency invalidation has no prior resolution",
        ),
    ],
)
def test_event_holds_while_gathering(poke: object, action: A, reason: str) -> None:
    controller = gathering()
    receipt = poke(controller)  # type: ignore[operator]
    assert receipt.action == action
    assert receipt.after.status == ControllerStatus.HELD
    assert receipt.after.held_reason == reason and receipt.after.pending_lease is None
    assert receipt.after.evaluation_count == 1


def test_evidence_returned_reevaluates() -> None:
    controller = gathering()
    receipt = controller.evidence_returned("evidence:g1:1")
    assert receipt.action == A.REEVALUATE and receipt.after.pending_lease is None
    assert receipt.after.status == ControllerStatus.RUNNING
    assert rank(controller.config, receipt.after) == rank(controller.config, receipt.before)


def test_evidence_for_dependency_lease_holds() -> None:
    controller = make()
    controller.process(iff("d1"))
    held = controller.evidence_returned("dependency:d1:1").after
    assert held.held_reason == "evidence returned for a dependency lease"
    none_outcome = make()
    none_outcome.process(iff("d1"))
    held = none_outcome.resolve_dependency("dependency:d1:1", None).after  # type: ignore[arg-type]
    assert held.held_reason == "invalid dependency resolution event"


def test_idle_events_hold() -> None:
    """Any event but invalidation needs a pending lease; an idle clock advance holds."""
    pokes: list[Callable[[QICTController], EventReceipt]] = [
        lambda c: c.advance_clock(1),
        lambda c: c.evidence_returned("x"),
        lambda c: c.expire("x"),
    ]
    for poke in pokes:
        controller = make()
        receipt = poke(controller)
        assert receipt.after.held_reason == "controller event has no pending lease"


def test_invalidation_of_resolved_dependency() -> None:
    controller = make()
    controller.process(maybe(ComputeNeed("k1")))
    controller.process(iff("d1"))
    controller.resolve_dependency("dependency:d1:2", HOLDS)
    receipt = controller.invalidate_dependency("d1")
    assert receipt.action == A.HOLD
    assert receipt.after.held_reason == "resolved dependency invalidated: d1"
    assert receipt.after.candidate_disposition == CandidateDisposition.SOURCE_ADMISSIBLE


@pytest.mark.parametrize("clock", [1.5, True])
def test_non_int_clock_is_rejected(clock: object) -> None:
    controller = gathering()
    with pytest.raises(TypeError, match="clock must be an int"):
        controller.advance_clock(clock)  # type: ignore[arg-type]
    assert len(controller.receipts) == 1


# ---------------------------------------------------------------- rank


def test_rank_formula_and_tighter_rank() -> None:
    config = QICTConfig(
        failure_alphabet={"a", "b", "c"},
        admissible_failures={"a"},
        evidence_alphabet={"g"},
        compute_alphabet={"k1", "k2"},
        compute_budget=1,
        dependency_alphabet={"d", "e"},
        admissible_dependencies={"d"},
    )
    state = config.initial_state()
    assert rank(config, state) == 3 + 1 + 1 + 2
    assert admissible_rank(config, state) == 1 + 1 + 1 + 1
    forged = ControllerState(exclusions=frozenset({"a", "zz"}), compute_budget=1)
    assert rank(config, forged) == 2 + 1
    assert admissible_rank(config, forged) == 0 + 0 + 1 + 0


def test_termination_bound_is_tight() -> None:
    for n in range(1, 12):
        config = QICTConfig(compute_alphabet={f"k{i}" for i in range(n - 1)})
        controller = QICTController(config)
        rho0 = rank(config, controller.state)
        for i in range(n - 1):
            controller.process(maybe(ComputeNeed(f"k{i}")))
        controller.process(yes())
        assert controller.state.evaluation_count == n == rho0 + 1
        assert controller.audit().valid
