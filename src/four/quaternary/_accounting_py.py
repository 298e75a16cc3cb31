"""The typed pure-Python accounting core: rank, transitions, digests (``_canonical``'s
chain; format 1's, ``_chain_v1``, where an ``AuditCursor`` names it) and audit replay.

This module is the reference implementation; `_accounting_c.pyx` mirrors it name for
name and `_accounting.py` selects one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import Any, Final, Protocol

from four._chain import canonical_text

from . import _canonical, _chain_v1
from ._canonical import FORMAT_VERSION
from ._core import ComputeNeed, EvidenceNeed, Verdict
from ._state import (
    AuditCursor,
    AuditResult,
    CandidateDisposition,
    ControllerAction,
    ControllerEvent,
    ControllerEventKind,
    ControllerState,
    ControllerStatus,
    DependencyRecord,
    EvaluationReceipt,
    EventReceipt,
    Lease,
    LeaseKind,
    Payload,
    QICTConfig,
    _Prefix,
    check_count,
    check_record,
    evolve,
    make_record,
    merge_outcomes,
    raw_state,
    raw_used,
    set_prefix,
)

__all__ = [
    "FORMAT_VERSION",
    "admissible_rank",
    "audit_feed",
    "audit_result",
    "evaluate",
    "fingerprint",
    "genesis",
    "handle",
    "initial_state",
    "rank",
    "receipt_digest",
]

_RUNNING: Final = ControllerStatus.RUNNING
_HELD: Final = ControllerStatus.HELD
_RANK_CONSUMING: Final = frozenset(
    {
        ControllerAction.EXCLUDE_RETRY,
        ControllerAction.ADMIT_NEXT,
        ControllerAction.GATHER,
        ControllerAction.BIND,
    }
)


# --------------------------------------------------------------------------- rank


def _count(raw: Any, alphabet: AbstractSet[Any]) -> int:
    if type(raw) is _Prefix:
        return raw.log.count_in(alphabet, raw.n)
    return len(alphabet & raw) if isinstance(raw, frozenset) else sum(x in alphabet for x in raw)


def rank(config: QICTConfig, state: ControllerState) -> int:
    """`four.quaternary.rank`: O(1) amortised for states the controller produced,
    O(min(|E|, |F|)) for a state built by hand."""
    failures = config.failure_alphabet
    budgets = state.evidence_budget + state.compute_budget + state.dependency_budget
    return len(failures) - _count(raw_state(state)[0], failures) + budgets


def admissible_rank(config: QICTConfig, state: ControllerState) -> int:
    """`four.quaternary.admissible_rank`."""
    excl, evid, comp = raw_state(state)
    admissible = config.admissible_failures
    assert admissible is not None
    deps_ok = config.admissible_dependencies
    assert deps_ok is not None
    evidence = config.evidence_alphabet
    compute = config.compute_alphabet
    used = raw_used(state.dependencies)
    return (
        len(admissible)
        - _count(excl, admissible)
        + min(state.evidence_budget, len(evidence) - _count(evid, evidence))
        + min(state.compute_budget, len(compute) - _count(comp, compute))
        + min(state.dependency_budget, len(deps_ok) - _count(used, deps_ok))
    )


# --------------------------------------------------------------------------- transitions


def _hold(state: ControllerState, reason: str, **changes: Any) -> ControllerState:
    return evolve(state, status=_HELD, pending_lease=None, held_reason=reason, **changes)


def _evaluation_transition(
    config: QICTConfig,
    state: ControllerState,
    verdict: Verdict,
    payload: object,
    arcs: frozenset[tuple[str, str]],
) -> tuple[ControllerAction, ControllerState]:
    if state.status != _RUNNING:
        raise ValueError("A terminal controller cannot evaluate another candidate.")
    if state.pending_lease is not None:
        raise ValueError("A pending lease must return or expire before re-evaluation.")
    index = state.evaluation_count + 1
    excl, evid, comp = raw_state(state)

    def step(
        action: ControllerAction,
        disposition: CandidateDisposition | None = None,
        lease: Lease | None = None,
        **changes: Any,
    ) -> tuple[ControllerAction, ControllerState]:
        status = ControllerStatus.ACCEPTED if action == ControllerAction.EXIT_ACCEPT else _RUNNING
        after = evolve(
            state,
            status=status,
            candidate_disposition=disposition,
            evaluation_count=index,
            pending_lease=lease,
            held_reason=None,
            **changes,
        )
        return action, after

    def lease(kind: LeaseKind, obligation: str) -> Lease:
        deadline = state.clock + config.lease_ticks
        return Lease(f"{kind.value}:{obligation}:{index}", kind, obligation, deadline)

    def hold(reason: str) -> tuple[ControllerAction, ControllerState]:
        return ControllerAction.HOLD, _hold(
            state, reason, candidate_disposition=None, evaluation_count=index
        )

    if verdict == Verdict.YES:
        return step(ControllerAction.EXIT_ACCEPT, CandidateDisposition.TERMINALLY_ACCEPTED)
    if verdict == Verdict.NO:
        reason = payload
        admissible = config.admissible_failures
        assert admissible is not None
        prefix = set_prefix(excl)
        if (
            reason in config.failure_alphabet
            and not prefix.contains(reason)
            and reason in admissible
        ):
            return step(ControllerAction.EXCLUDE_RETRY, exclusions=prefix.added(reason))
        return hold(f"inadmissible or repeated failure: {reason}")
    if verdict == Verdict.MAYBE:
        if type(payload) is EvidenceNeed:
            need = payload.evidence
            prefix = set_prefix(evid)
            eb = state.evidence_budget
            if need in config.evidence_alphabet and not prefix.contains(need) and eb > 0:
                return step(
                    ControllerAction.GATHER,
                    lease=lease(LeaseKind.EVIDENCE, need),
                    used_evidence=prefix.added(need),
                    evidence_budget=eb - 1,
                )
            return hold(f"inadmissible or repeated evidence need: {need}")
        if type(payload) is ComputeNeed:
            need = payload.step
            prefix = set_prefix(comp)
            cb = state.compute_budget
            if need in config.compute_alphabet and not prefix.contains(need) and cb > 0:
                return step(
                    ControllerAction.ADMIT_NEXT,
                    CandidateDisposition.SOURCE_ADMISSIBLE,
                    used_compute=prefix.added(need),
                    compute_budget=cb - 1,
                )
            return hold(f"inadmissible or repeated compute need: {need}")
        return hold("finite-rank control requires a typed MAYBE payload")
    dependency = payload
    deps = state.dependencies
    db = state.dependency_budget
    admissible_deps = config.admissible_dependencies
    assert admissible_deps is not None
    used = set_prefix(raw_used(deps))
    if (
        dependency in config.dependency_alphabet
        and not used.contains(dependency)
        and dependency in admissible_deps
        and db > 0
    ):
        assert isinstance(dependency, str)
        unresolved = deps.unresolved | {dependency}
        relation = deps.relation | arcs if arcs else deps.relation
        if arcs:
            try:  # the record's own invariants (of its arcs: the rest hold by construction)
                check_record(unresolved, unresolved, relation, ())
            except ValueError as exc:
                return hold(str(exc))
        record = make_record(used.added(dependency), unresolved, relation, deps.outcomes)
        return step(
            ControllerAction.BIND,
            lease=lease(LeaseKind.DEPENDENCY, dependency),
            dependencies=record,
            dependency_budget=db - 1,
        )
    return hold(f"inadmissible or repeated dependency: {dependency}")


def _event_transition(
    state: ControllerState, event: ControllerEvent
) -> tuple[ControllerAction, ControllerState]:
    if state.status != _RUNNING:
        raise ValueError("A terminal controller cannot consume another event.")
    kind = event.kind
    hold = ControllerAction.HOLD
    if kind == ControllerEventKind.INVALIDATE_DEPENDENCY:
        name = event.dependency
        if name is not None and state.dependencies.outcome_for(name) is not None:
            return hold, _hold(state, f"resolved dependency invalidated: {name}")
        return hold, _hold(state, "dependency invalidation has no prior resolution")
    lease = state.pending_lease
    if lease is None:
        return hold, _hold(state, "controller event has no pending lease")
    if kind == ControllerEventKind.ADVANCE_CLOCK:
        clock = event.clock
        check_count("clock", clock, optional=True)
        if clock is None or clock <= state.clock:
            return hold, _hold(state, "clock must advance strictly")
        if clock >= lease.deadline:
            return ControllerAction.EXPIRE, _hold(state, "lease expired", clock=clock)
        return ControllerAction.WAIT, evolve(state, clock=clock)
    if event.lease_id != lease.lease_id:
        return hold, _hold(state, "controller event names the wrong lease")
    if kind == ControllerEventKind.EXPIRE:
        return ControllerAction.EXPIRE, _hold(state, "lease expired")
    if kind == ControllerEventKind.EVIDENCE_RETURNED:
        if lease.kind != LeaseKind.EVIDENCE:
            return hold, _hold(state, "evidence returned for a dependency lease")
        return ControllerAction.REEVALUATE, evolve(state, pending_lease=None)
    if kind == ControllerEventKind.DEPENDENCY_RESOLVED:
        if lease.kind != LeaseKind.DEPENDENCY or event.outcome is None:
            return hold, _hold(state, "invalid dependency resolution event")
        return ControllerAction.REEVALUATE, evolve(
            state,
            pending_lease=None,
            candidate_disposition=CandidateDisposition.SOURCE_ADMISSIBLE,
            dependencies=_resolved(state.dependencies, lease.obligation, event.outcome),
        )
    return hold, _hold(state, "unsupported controller event")


def _resolved(record: DependencyRecord, name: str, outcome: object) -> DependencyRecord:
    if any(recorded == name for recorded, _ in record.outcomes):
        raise ValueError("A dependency may have only one recorded outcome.")
    used = raw_used(record)
    if not (used.contains(name) if type(used) is _Prefix else name in used):
        raise ValueError("Outcomes belong only to resolved dependencies.")
    unresolved = record.unresolved
    if name in unresolved:
        unresolved = unresolved - {name}
    relation = record.relation
    if relation:
        relation = frozenset(arc for arc in relation if name not in arc)
    return make_record(
        used, unresolved, relation, merge_outcomes((*record.outcomes, (name, outcome)))
    )


# --------------------------------------------------------------------------- digests


class _Chain(Protocol):
    """A receipts' chain (a module: `_canonical`, or `_chain_v1` for format 1)."""

    def fingerprint(self, config: QICTConfig) -> bytes: ...
    def genesis_after(self, fingerprinted: bytes, state: ControllerState) -> bytes: ...
    def evaluation_digest(
        self,
        prev: bytes,
        verdict: object,
        payload: object,
        arcs: object,
        action: object,
        index: object,
    ) -> bytes: ...
    def event_digest(self, prev: bytes, event: ControllerEvent, action: object) -> bytes: ...


_CHAINS: Final[dict[int, _Chain]] = {1: _chain_v1, FORMAT_VERSION: _canonical}


@lru_cache(maxsize=16)
def initial_state(config: QICTConfig) -> ControllerState:
    """``config.initial_state()``, made once: a fleet's replays start from it, the very
    object their first receipts are read as (``one_state``)."""
    state = config.initial_state()
    return _canonical.one_state(canonical_text(_canonical.json_state(state)), lambda: state)


@lru_cache(maxsize=16)
def _fingerprinted(config: QICTConfig, version: int) -> tuple[bytes, ControllerState, bytes]:
    """The config's fingerprint, initial state and its genesis under chain ``version``."""
    chain = _CHAINS[version]
    fingerprinted = chain.fingerprint(config)
    initial = initial_state(config)
    return fingerprinted, initial, chain.genesis_after(fingerprinted, initial)


def fingerprint(config: QICTConfig) -> bytes:
    """The receipts' chain after the config's ten resolved fields (SHA-256).

    >>> len(fingerprint(QICTConfig()))
    32
    """
    return _fingerprinted(config, FORMAT_VERSION)[0]


def genesis(config: QICTConfig, state: ControllerState, version: int = FORMAT_VERSION) -> bytes:
    """The digest a trace starting at `state` under `config` chains from."""
    fingerprinted, initial, start = _fingerprinted(config, version)
    if state is initial or state == initial:
        return start
    return _CHAINS[version].genesis_after(fingerprinted, state)


def receipt_digest(
    prev: bytes, receipt: EvaluationReceipt | EventReceipt, version: int = FORMAT_VERSION
) -> bytes:
    """The digest `receipt` must carry when it follows a receipt whose digest is `prev`.

    Raises `TypeError` for a value that has no canonical encoding.
    """
    chain = _CHAINS[version]
    if isinstance(receipt, EvaluationReceipt):
        return chain.evaluation_digest(
            prev,
            receipt.verdict,
            receipt.payload,
            receipt.dependency_arcs,
            receipt.action,
            receipt.evaluation_index,
        )
    return chain.event_digest(prev, receipt.event, receipt.action)


# --------------------------------------------------------------------------- steps


def evaluate(
    config: QICTConfig,
    state: ControllerState,
    verdict: Verdict,
    payload: Payload,
    arcs: frozenset[tuple[str, str]],
    prev: bytes,
) -> EvaluationReceipt:
    """One evaluation step from `state`, as a receipt chained to `prev`.

    Raises `ValueError` when the controller is terminal or a lease is pending, and
    `TypeError` when the payload or arcs have no canonical encoding.
    """
    action, after = _evaluation_transition(config, state, verdict, payload, arcs)
    index = after.evaluation_count
    digest = _canonical.evaluation_digest(prev, verdict, payload, arcs, action, index)
    return EvaluationReceipt(state, verdict, payload, arcs, action, after, index, digest)


def handle(
    config: QICTConfig, state: ControllerState, event: ControllerEvent, prev: bytes
) -> EventReceipt:
    """One event step from `state`, as a receipt chained to `prev` (the config is only
    used by the digest chain; events never depend on it)."""
    action, after = _event_transition(state, event)
    digest = _canonical.event_digest(prev, event, action)
    return EventReceipt(state, event, action, after, digest)


# --------------------------------------------------------------------------- audit


def _replay_payload(verdict: object, payload: object) -> tuple[Verdict, Payload]:
    if verdict == Verdict.YES:
        return Verdict.YES, None
    if verdict == Verdict.MAYBE:
        if not isinstance(payload, str | EvidenceNeed | ComputeNeed):
            raise TypeError("MAYBE receipt payload has the wrong type")
        return Verdict.MAYBE, payload
    if not isinstance(payload, str):  # NO's reason, or (any other verdict) IFF's dependency
        raise TypeError("receipt payload must be a string")
    return (Verdict.NO if verdict == Verdict.NO else Verdict.IFF), payload


def _audit_one(config: QICTConfig, cursor: AuditCursor, receipt: object, n: int) -> None:
    errors = cursor.errors
    if not isinstance(receipt, EvaluationReceipt | EventReceipt):
        errors.append(f"receipt {n}: not a transition receipt ({type(receipt).__name__})")
        return
    before = receipt.before
    after = receipt.after
    prev = cursor.prev
    try:
        if prev is None:
            prev = genesis(config, before, cursor.version)
        expected: bytes | None = receipt_digest(prev, receipt, cursor.version)
    except (TypeError, ValueError, AttributeError):
        expected = None
    claimed = receipt.digest
    if claimed != expected:
        errors.append(f"receipt {n}: digest does not match the chain")
    cursor.prev = claimed if type(claimed) is bytes else b""
    if before is not cursor.state and before != cursor.state:
        errors.append(f"receipt {n}: before-state breaks the receipt chain")
        cursor.state = after
        return
    try:
        if isinstance(receipt, EvaluationReceipt):
            verdict, payload = _replay_payload(receipt.verdict, receipt.payload)
            arcs = receipt.dependency_arcs
            action, replayed = _evaluation_transition(config, before, verdict, payload, arcs)
            cursor.evaluations += 1
            if not (
                receipt.verdict == verdict
                and receipt.payload == payload
                and receipt.action == action
                and receipt.evaluation_index == replayed.evaluation_count
                and after == replayed
            ):
                errors.append(f"receipt {n}: evaluation transition does not replay")
            if receipt.action in _RANK_CONSUMING:
                if after.status != _RUNNING:
                    errors.append(f"receipt {n}: rank-consuming transition terminated")
                if rank(config, after) != rank(config, before) - 1:
                    errors.append(f"receipt {n}: continuing transition did not reduce rho")
            elif after.status == _RUNNING:
                errors.append(f"receipt {n}: evaluation neither terminated nor reduced rho")
        else:
            action, replayed = _event_transition(before, receipt.event)
            if not (receipt.action == action and after == replayed):
                errors.append(f"receipt {n}: controller event does not replay")
    except (TypeError, ValueError, AttributeError) as exc:
        errors.append(f"receipt {n}: replay raised {exc}")
    cursor.state = after


def audit_feed(
    config: QICTConfig, cursor: AuditCursor, receipts: Sequence[object], start: int
) -> None:
    """Audit `receipts[start:]`, continuing from `cursor` (which it advances)."""
    for position in range(start, len(receipts)):
        _audit_one(config, cursor, receipts[position], position + 1)
    cursor.position = max(cursor.position, len(receipts))


def audit_result(config: QICTConfig, cursor: AuditCursor, head: bytes | None) -> AuditResult:
    """The AuditResult for everything fed to `cursor` so far (the cursor is unchanged)."""
    errors = list(cursor.errors)
    final = cursor.state
    end = cursor.prev
    if end is None:
        end = genesis(config, cursor.initial_state, cursor.version)
    if head is not None and end != head:
        errors.append("trace does not end at the recorded head digest")
    if cursor.evaluations > cursor.initial_rank + 1:
        errors.append("evaluation count exceeds rho_0 + 1")
    if isinstance(final, ControllerState):
        final_rank = rank(config, final)
    else:
        errors.append("the last after-state is not a ControllerState")
        final_rank = -1
    return AuditResult(
        not errors, tuple(errors), cursor.evaluations, cursor.initial_rank, final_rank, end
    )
