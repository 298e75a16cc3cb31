"""A Hypothesis state machine over arbitrary verdicts, payloads and events.

Laws checked: evaluations never exceed initial_rank + 1; each continuing evaluation
lowers rank (and the tighter rank) by exactly one and events never change it; the
audit of every produced trace is valid (incrementally and from scratch, also after a
JSON round trip); and every single-field change to any receipt (or to any field of
its after-state), every adjacent reordering and every truncation checked against the
recorded head digest makes the audit invalid.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from four.quaternary import (
    CandidateDisposition,
    CheckResult,
    ComputeNeed,
    ControllerAction,
    ControllerState,
    ControllerStatus,
    DependencyRecord,
    EvaluationReceipt,
    EvidenceNeed,
    Lease,
    LeaseKind,
    QICTConfig,
    QICTController,
    ResolutionOutcome,
    TransitionReceipt,
    Verdict,
    admissible_rank,
    audit_trace,
    dump_receipts,
    iff,
    load_receipts,
    maybe,
    no,
    rank,
    yes,
)

FAILURES = ["f0", "f1", "f2", "f3"]
EVIDENCE = ["g0", "g1"]
COMPUTE = ["k0", "k1", "k2"]
DEPENDENCIES = ["d0", "d1", "d2"]
CONSUMING = {
    ControllerAction.EXCLUDE_RETRY,
    ControllerAction.ADMIT_NEXT,
    ControllerAction.GATHER,
    ControllerAction.BIND,
}


def subsets(items: set[str]) -> st.SearchStrategy[set[str]]:
    return st.sets(st.sampled_from(sorted(items))) if items else st.just(set())


@st.composite
def configs(draw: st.DrawFn) -> QICTConfig:
    failures = draw(st.sets(st.sampled_from(FAILURES)))
    evidence = draw(st.sets(st.sampled_from(EVIDENCE)))
    compute = draw(st.sets(st.sampled_from(COMPUTE)))
    deps = draw(st.sets(st.sampled_from(DEPENDENCIES)))

    def budget(alphabet: set[str]) -> int | None:
        return draw(st.none() | st.integers(0, len(alphabet)))

    return QICTConfig(
        failure_alphabet=failures,
        evidence_alphabet=evidence,
        compute_alphabet=compute,
        dependency_alphabet=deps,
        evidence_budget=budget(evidence),
        compute_budget=budget(compute),
        dependency_budget=budget(deps),
        admissible_failures=draw(st.none() | subsets(failures)),
        admissible_dependencies=draw(st.none() | subsets(deps)),
        lease_ticks=draw(st.integers(1, 3)),
    )


results = st.one_of(
    st.builds(yes),
    st.builds(no, st.sampled_from([*FAILURES, "zz"])),
    st.builds(maybe, st.builds(EvidenceNeed, st.sampled_from([*EVIDENCE, "gz"]))),
    st.builds(maybe, st.builds(ComputeNeed, st.sampled_from([*COMPUTE, "kz"]))),
    st.builds(maybe, st.sampled_from(["free text", "schema"])),
    st.builds(iff, st.sampled_from([*DEPENDENCIES, "dz"])),
)
arc_sets = st.one_of(
    st.just(()),
    st.lists(st.tuples(st.sampled_from(DEPENDENCIES), st.sampled_from(DEPENDENCIES)), max_size=2),
)


def changed(value: Any) -> Any:
    """A value of the same kind that differs from `value`."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, Verdict):
        return Verdict((value + 1) % 4)
    if isinstance(value, ControllerAction):
        members = list(ControllerAction)
        return members[(members.index(value) + 1) % len(members)]
    if isinstance(value, int):
        return value + 1
    if isinstance(value, bytes):
        return bytes([value[0] ^ 1]) + value[1:] if value else b"\x00"
    if isinstance(value, str):
        return value + "!"
    if value is None:
        return "x"
    if isinstance(value, frozenset):
        return (
            value | {("zz", "zz")}
            if value and isinstance(next(iter(value)), tuple)
            else value | {"zz"}
        )
    if isinstance(value, EvidenceNeed):
        return EvidenceNeed(value.evidence + "!")
    if isinstance(value, ComputeNeed):
        return ComputeNeed(value.step + "!")
    return dataclasses.replace(value, lease_id=(value.lease_id or "") + "!")


def state_variants(state: ControllerState) -> list[ControllerState]:
    """Every valid single-field change of a state."""
    out = []
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if f.name == "dependencies":
            new: Any = DependencyRecord(
                value.used | {"zz"}, value.unresolved, value.relation, value.outcomes
            )
        elif f.name == "status":
            new = (
                ControllerStatus.HELD
                if value == ControllerStatus.RUNNING
                else ControllerStatus.RUNNING
            )
        elif f.name == "candidate_disposition":
            new = CandidateDisposition.SOURCE_ADMISSIBLE if value is None else None
        elif f.name == "pending_lease":
            new = Lease("x:y:1", LeaseKind.EVIDENCE, "y", 9) if value is None else None
        elif f.name == "held_reason":
            new = "tampered" if value is None else None
        else:
            new = changed(value)
        with contextlib.suppress(ValueError):  # some changes break a state invariant
            out.append(dataclasses.replace(state, **{f.name: new}))
    return out


def receipt_variants(receipt: TransitionReceipt) -> list[TransitionReceipt]:
    out: list[TransitionReceipt] = []
    for f in dataclasses.fields(receipt):
        value = getattr(receipt, f.name)
        if f.name == "before":
            news: list[Any] = state_variants(value)[:3]
        elif f.name == "after":
            news = state_variants(value)
        else:
            news = [changed(value)]
        out.extend(dataclasses.replace(receipt, **{f.name: new}) for new in news)
    return out


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.controller = QICTController(QICTConfig())
        self.rho0 = 0

    @initialize(config=configs())
    def start(self, config: QICTConfig) -> None:
        self.controller = QICTController(config)
        self.rho0 = rank(config, self.controller.state)
        assert admissible_rank(config, self.controller.state) <= self.rho0

    @property
    def config(self) -> QICTConfig:
        return self.controller.config

    @rule(result=results, arcs=arc_sets)
    def evaluate(self, result: CheckResult, arcs: list[tuple[str, str]]) -> None:
        controller, before = self.controller, self.controller.state
        ranks = rank(self.config, before), admissible_rank(self.config, before)
        try:
            receipt = controller.process(result, dependency_arcs=arcs)
        except ValueError:
            assert before.status != ControllerStatus.RUNNING or before.pending_lease
            assert controller.state is before
            return
        after = receipt.after
        if receipt.action in CONSUMING:
            assert after.status == ControllerStatus.RUNNING
            assert rank(self.config, after) == ranks[0] - 1
            assert admissible_rank(self.config, after) == ranks[1] - 1
        else:
            assert after.status != ControllerStatus.RUNNING

    def _event(self, poke: Any) -> None:
        before = self.controller.state
        ranks = rank(self.config, before), admissible_rank(self.config, before)
        try:
            receipt = poke(self.controller)
        except ValueError:
            assert before.status != ControllerStatus.RUNNING
            return
        assert rank(self.config, receipt.after) == ranks[0]
        assert admissible_rank(self.config, receipt.after) == ranks[1]

    def _lease_id(self, right: bool) -> str:
        lease = self.controller.state.pending_lease
        return lease.lease_id if right and lease else "evidence:none:0"

    @rule(right=st.booleans())
    def evidence_returned(self, right: bool) -> None:
        self._event(lambda c: c.evidence_returned(self._lease_id(right)))

    @rule(right=st.booleans(), outcome=st.sampled_from([*ResolutionOutcome, None]))
    def resolve(self, right: bool, outcome: ResolutionOutcome) -> None:
        self._event(lambda c: c.resolve_dependency(self._lease_id(right), outcome))

    @rule(step=st.integers(-1, 3))
    def advance_clock(self, step: int) -> None:
        self._event(lambda c: c.advance_clock(max(c.state.clock + step, 0)))

    @rule(right=st.booleans())
    def expire(self, right: bool) -> None:
        self._event(lambda c: c.expire(self._lease_id(right)))

    @rule(dependency=st.sampled_from([*DEPENDENCIES, "dz"]))
    def invalidate(self, dependency: str) -> None:
        self._event(lambda c: c.invalidate_dependency(dependency))

    @invariant()
    def bounded_and_audited(self) -> None:
        assert self.controller.state.evaluation_count <= self.rho0 + 1
        result = self.controller.audit()
        assert result.valid, result.errors
        assert result.evaluations == self.controller.state.evaluation_count

    def teardown(self) -> None:
        config, receipts = self.config, list(self.controller.receipts)
        head = self.controller.head
        fresh = audit_trace(config, receipts, head=head)
        assert fresh.valid and fresh == self.controller.audit()
        loaded = load_receipts(dump_receipts(receipts))
        assert loaded == receipts
        assert audit_trace(config, loaded, head=head).valid
        for cut in range(len(receipts)):
            assert not audit_trace(config, receipts[:cut], head=head).valid
        for i in range(len(receipts) - 1):
            swapped = [*receipts[:i], receipts[i + 1], receipts[i], *receipts[i + 2 :]]
            assert not audit_trace(config, swapped).valid
        for i, receipt in enumerate(receipts):
            for variant in receipt_variants(receipt):
                tampered = [*receipts[:i], variant, *receipts[i + 1 :]]
                result = audit_trace(config, tampered, head=head)
                assert not result.valid, (i, variant)
                if isinstance(variant, EvaluationReceipt) and variant.digest == receipt.digest:
                    assert result.errors, variant


def test_controller_machine() -> None:
    """Run the machine under the loaded profile, once per accounting implementation."""
    run_state_machine_as_test(ControllerMachine)
