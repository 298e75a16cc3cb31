"""The typed pure-Python accounting core: rank, transitions, digests and audit replay.

This module is the reference implementation; `_accounting_c.pyx` mirrors it name for
name and `_accounting.py` selects one of them. Every function here is exact: no
floats, no implicit coercions, Python ints throughout.

Digest design. A trace's digests form a chain:

* ``fingerprint(config) = BLAKE2b-256("C" || enc(config fields))``
* ``genesis(config, s0) = BLAKE2b-256("G" || VERSION || fingerprint(config) || enc(s0))``
  where ``s0`` is the before-state of the first receipt;
* ``digest_k = BLAKE2b-256("R" || digest_{k-1} || enc(transition_k))`` where the
  transition is the receipt's inputs, action and evaluation index.

The states themselves are not hashed at every step: the audit replays each transition
and checks the claimed after-state, so the chain of inputs plus the genesis state
determines (and so commits to) every state, at O(1) cost per receipt.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from enum import Enum
from hashlib import blake2b
from typing import Any, Final

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
    acyclic,
    make_record,
    make_state,
    outcome_prefix,
    raw_outcomes,
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
    "rank",
    "receipt_digest",
]

FORMAT_VERSION: Final = 1
_VERSION_TAG: Final = b"four.quaternary/1"
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
    """rho = |F minus E| + B_G + B_K + B_I (verdict4's formula).

    O(1) amortised for states the controller produced; O(min(|E|, |F|)) for a
    state built by hand.

    >>> config = QICTConfig(failure_alphabet={"a", "b"}, compute_alphabet={"k"})
    >>> rank(config, config.initial_state())
    3
    """
    failures = config.failure_alphabet
    excluded = _count(raw_state(state)[0], failures)
    return (
        len(failures)
        - excluded
        + state.evidence_budget
        + state.compute_budget
        + state.dependency_budget
    )


def admissible_rank(config: QICTConfig, state: ControllerState) -> int:
    """A tighter rank: only opportunities that can still be consumed.

    |A_F minus E| + min(B_G, |G minus used_G|) + min(B_K, |K minus used_K|)
    + min(B_I, |A_I minus used_I|). Every continuing evaluation lowers it by exactly
    one and events never change it, so a run makes at most admissible_rank + 1
    evaluations; it never exceeds `rank`.

    >>> config = QICTConfig(failure_alphabet={"a", "b"}, admissible_failures={"a"})
    >>> rank(config, config.initial_state()), admissible_rank(config, config.initial_state())
    (2, 1)
    """
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


def _hold_base(state: ControllerState, index: int, reason: str) -> ControllerState:
    excl, evid, comp = raw_state(state)
    return make_state(
        excl,
        evid,
        comp,
        state.dependencies,
        state.evidence_budget,
        state.compute_budget,
        state.dependency_budget,
        _HELD,
        None,
        index,
        state.clock,
        None,
        reason,
    )


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
    deps = state.dependencies
    eb, cb, db = state.evidence_budget, state.compute_budget, state.dependency_budget
    clock = state.clock
    if verdict == Verdict.YES:
        return ControllerAction.EXIT_ACCEPT, make_state(
            excl,
            evid,
            comp,
            deps,
            eb,
            cb,
            db,
            ControllerStatus.ACCEPTED,
            CandidateDisposition.TERMINALLY_ACCEPTED,
            index,
            clock,
            None,
            None,
        )
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
            return ControllerAction.EXCLUDE_RETRY, make_state(
                prefix.added(reason),
                evid,
                comp,
                deps,
                eb,
                cb,
                db,
                _RUNNING,
                None,
                index,
                clock,
                None,
                None,
            )
        return ControllerAction.HOLD, _hold_base(
            state, index, f"inadmissible or repeated failure: {reason}"
        )
    if verdict == Verdict.MAYBE:
        if type(payload) is EvidenceNeed:
            need = payload.evidence
            prefix = set_prefix(evid)
            if need in config.evidence_alphabet and not prefix.contains(need) and eb > 0:
                lease = Lease(
                    f"evidence:{need}:{index}", LeaseKind.EVIDENCE, need, clock + config.lease_ticks
                )
                return ControllerAction.GATHER, make_state(
                    excl,
                    prefix.added(need),
                    comp,
                    deps,
                    eb - 1,
                    cb,
                    db,
                    _RUNNING,
                    None,
                    index,
                    clock,
                    lease,
                    None,
                )
            return ControllerAction.HOLD, _hold_base(
                state, index, f"inadmissible or repeated evidence need: {need}"
            )
        if type(payload) is ComputeNeed:
            step = payload.step
            prefix = set_prefix(comp)
            if step in config.compute_alphabet and not prefix.contains(step) and cb > 0:
                return ControllerAction.ADMIT_NEXT, make_state(
                    excl,
                    evid,
                    prefix.added(step),
                    deps,
                    eb,
                    cb - 1,
                    db,
                    _RUNNING,
                    CandidateDisposition.SOURCE_ADMISSIBLE,
                    index,
                    clock,
                    None,
                    None,
                )
            return ControllerAction.HOLD, _hold_base(
                state, index, f"inadmissible or repeated compute need: {step}"
            )
        return ControllerAction.HOLD, _hold_base(
            state, index, "finite-rank control requires a typed MAYBE payload"
        )
    dependency = payload
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
            try:
                for a, b in relation:
                    if a not in unresolved or b not in unresolved:
                        raise ValueError("Dependency arcs must join unresolved vertices.")
                if not acyclic(relation):
                    raise ValueError("The unresolved dependency relation must be acyclic.")
            except ValueError as exc:
                return ControllerAction.HOLD, _hold_base(state, index, str(exc))
        record = make_record(used.added(dependency), unresolved, relation, raw_outcomes(deps))
        lease = Lease(
            f"dependency:{dependency}:{index}",
            LeaseKind.DEPENDENCY,
            dependency,
            clock + config.lease_ticks,
        )
        return ControllerAction.BIND, make_state(
            excl,
            evid,
            comp,
            record,
            eb,
            cb,
            db - 1,
            _RUNNING,
            None,
            index,
            clock,
            lease,
            None,
        )
    return ControllerAction.HOLD, _hold_base(
        state, index, f"inadmissible or repeated dependency: {dependency}"
    )


def _event_hold(state: ControllerState, reason: str, clock: int | None = None) -> ControllerState:
    excl, evid, comp = raw_state(state)
    return make_state(
        excl,
        evid,
        comp,
        state.dependencies,
        state.evidence_budget,
        state.compute_budget,
        state.dependency_budget,
        _HELD,
        state.candidate_disposition,
        state.evaluation_count,
        state.clock if clock is None else clock,
        None,
        reason,
    )


def _with_lease(
    state: ControllerState,
    lease: Lease | None,
    clock: int,
    disposition: CandidateDisposition | None,
    record: DependencyRecord,
) -> ControllerState:
    excl, evid, comp = raw_state(state)
    return make_state(
        excl,
        evid,
        comp,
        record,
        state.evidence_budget,
        state.compute_budget,
        state.dependency_budget,
        state.status,
        disposition,
        state.evaluation_count,
        clock,
        lease,
        state.held_reason,
    )


def _check_clock(clock: object) -> None:
    if clock is not None and (isinstance(clock, bool) or not isinstance(clock, int)):
        raise TypeError(f"clock must be an int, not {type(clock).__name__}")


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
            return hold, _event_hold(state, f"resolved dependency invalidated: {name}")
        return hold, _event_hold(state, "dependency invalidation has no prior resolution")
    lease = state.pending_lease
    if lease is None:
        return hold, _event_hold(state, "controller event has no pending lease")
    if kind == ControllerEventKind.ADVANCE_CLOCK:
        clock = event.clock
        _check_clock(clock)
        if clock is None or clock <= state.clock:
            return hold, _event_hold(state, "clock must advance strictly")
        if clock >= lease.deadline:
            return ControllerAction.EXPIRE, _event_hold(state, "lease expired", clock)
        return ControllerAction.WAIT, _with_lease(
            state, lease, clock, state.candidate_disposition, state.dependencies
        )
    if event.lease_id != lease.lease_id:
        return hold, _event_hold(state, "controller event names the wrong lease")
    if kind == ControllerEventKind.EXPIRE:
        return ControllerAction.EXPIRE, _event_hold(state, "lease expired")
    if kind == ControllerEventKind.EVIDENCE_RETURNED:
        if lease.kind != LeaseKind.EVIDENCE:
            return hold, _event_hold(state, "evidence returned for a dependency lease")
        return ControllerAction.REEVALUATE, _with_lease(
            state, None, state.clock, state.candidate_disposition, state.dependencies
        )
    if kind == ControllerEventKind.DEPENDENCY_RESOLVED:
        if lease.kind != LeaseKind.DEPENDENCY or event.outcome is None:
            return hold, _event_hold(state, "invalid dependency resolution event")
        return ControllerAction.REEVALUATE, _with_lease(
            state,
            None,
            state.clock,
            CandidateDisposition.SOURCE_ADMISSIBLE,
            _resolved(state.dependencies, lease.obligation, event.outcome),
        )
    return hold, _event_hold(state, "unsupported controller event")


def _resolved(record: DependencyRecord, name: str, outcome: object) -> DependencyRecord:
    outcomes = outcome_prefix(raw_outcomes(record))
    if outcomes.contains(name):
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
    return make_record(used, unresolved, relation, outcomes.added(name, outcome))


# --------------------------------------------------------------------------- digests


def _enc(value: object, out: list[bytes]) -> None:
    """Append the canonical, type-tagged encoding of a receipt value to `out`.

    str (and str enums) -> ``s<len>:<utf-8>``, None -> ``N``, bools -> ``T``/``F``,
    ints (and int enums) -> ``i<decimal>;``, floats -> ``f<repr>;``, tuples ->
    ``(...)``, sets -> ``{<count>:<sorted encodings>}``, needs -> ``E``/``K`` + field.
    """
    kind = type(value)
    if kind is str:
        assert isinstance(value, str)
        data = value.encode("utf-8", "surrogatepass")
        out.append(b"s%d:%b" % (len(data), data))
    elif value is None:
        out.append(b"N")
    elif kind is int:
        assert isinstance(value, int)
        out.append(b"i%d;" % value)
    elif kind is bool:
        out.append(b"T" if value else b"F")
    elif isinstance(value, Enum):
        _enc(value.value, out)
    elif kind is tuple:
        assert isinstance(value, tuple)
        out.append(b"(")
        for item in value:
            _enc(item, out)
        out.append(b")")
    elif kind is frozenset or kind is set:
        assert isinstance(value, AbstractSet)
        if not value:
            out.append(b"{0:}")
            return
        encoded = []
        for item in value:
            part: list[bytes] = []
            _enc(item, part)
            encoded.append(b"".join(part))
        encoded.sort()
        out.append(b"{%d:" % len(encoded))
        out.extend(encoded)
        out.append(b"}")
    elif kind is EvidenceNeed:
        assert isinstance(value, EvidenceNeed)
        out.append(b"E")
        _enc(value.evidence, out)
    elif kind is ComputeNeed:
        assert isinstance(value, ComputeNeed)
        out.append(b"K")
        _enc(value.step, out)
    elif kind is float:
        out.append(b"f%b;" % repr(value).encode())
    elif isinstance(value, str):
        _enc(str.__str__(value), out)
    elif isinstance(value, int):
        _enc(int.__int__(value), out)
    else:
        raise TypeError(f"{kind.__name__} values cannot be encoded in a receipt")


def _enc_state(state: ControllerState, out: list[bytes]) -> None:
    deps = state.dependencies
    lease = state.pending_lease
    _enc(
        (
            state.exclusions,
            state.used_evidence,
            state.used_compute,
            (deps.used, deps.unresolved, deps.relation, deps.outcomes),
            state.evidence_budget,
            state.compute_budget,
            state.dependency_budget,
            state.status,
            state.candidate_disposition,
            state.evaluation_count,
            state.clock,
            None
            if lease is None
            else (lease.lease_id, lease.kind, lease.obligation, lease.deadline),
            state.held_reason,
        ),
        out,
    )


_FINGERPRINTS: dict[int, tuple[QICTConfig, bytes]] = {}
_FINGERPRINT_CACHE_SIZE: Final = 16


def fingerprint(config: QICTConfig) -> bytes:
    """BLAKE2b-256 of the canonical encoding of the config's ten resolved fields.

    O(alphabet size); the last few configs (immutable) are cached by identity.

    >>> len(fingerprint(QICTConfig()))
    32
    """
    cached = _FINGERPRINTS.get(id(config))
    if cached is not None and cached[0] is config:
        return cached[1]
    result = _fingerprint(config)
    if len(_FINGERPRINTS) >= _FINGERPRINT_CACHE_SIZE:
        _FINGERPRINTS.pop(next(iter(_FINGERPRINTS)))
    _FINGERPRINTS[id(config)] = (config, result)
    return result


def _fingerprint(config: QICTConfig) -> bytes:
    out = [b"C"]
    _enc(
        (
            frozenset(config.failure_alphabet),
            frozenset(config.evidence_alphabet),
            frozenset(config.compute_alphabet),
            frozenset(config.dependency_alphabet),
            config.evidence_budget,
            config.compute_budget,
            config.dependency_budget,
            frozenset(config.admissible_failures or ()),
            frozenset(config.admissible_dependencies or ()),
            config.lease_ticks,
        ),
        out,
    )
    return blake2b(b"".join(out), digest_size=32).digest()


def genesis(config: QICTConfig, state: ControllerState) -> bytes:
    """The digest a trace starting at `state` under `config` chains from.

    >>> genesis(QICTConfig(), QICTConfig().initial_state()) == genesis(QICTConfig(), QICTConfig().initial_state())
    True
    """
    out = [b"G", _VERSION_TAG, fingerprint(config)]
    _enc_state(state, out)
    return blake2b(b"".join(out), digest_size=32).digest()


def _enc_bytes(value: object) -> bytes:
    out: list[bytes] = []
    _enc(value, out)
    return b"".join(out)


_VERDICT_BYTES: Final = {v: _enc_bytes(v) for v in Verdict}
_ACTION_BYTES: Final = {a: _enc_bytes(a) for a in ControllerAction}


def _evaluation_digest(
    prev: bytes, verdict: object, payload: object, arcs: object, action: object, index: object
) -> bytes:
    if (
        type(verdict) is Verdict
        and type(action) is ControllerAction
        and type(payload) is str
        and type(index) is int
        and type(arcs) is frozenset
        and not arcs
    ):  # the common shape, encoded exactly as the general path below would
        data = payload.encode("utf-8", "surrogatepass")
        message = b"R%bV%bs%d:%b{0:}%bi%d;" % (
            prev,
            _VERDICT_BYTES[verdict],
            len(data),
            data,
            _ACTION_BYTES[action],
            index,
        )
        return blake2b(message, digest_size=32).digest()
    out = [b"R", prev, b"V"]
    _enc(verdict, out)
    _enc(payload, out)
    _enc(arcs, out)
    _enc(action, out)
    _enc(index, out)
    return blake2b(b"".join(out), digest_size=32).digest()


def _event_digest(prev: bytes, event: ControllerEvent, action: object) -> bytes:
    out = [b"R", prev, b"W"]
    _enc(event.kind, out)
    _enc(event.lease_id, out)
    _enc(event.outcome, out)
    _enc(event.dependency, out)
    _enc(event.clock, out)
    _enc(action, out)
    return blake2b(b"".join(out), digest_size=32).digest()


def receipt_digest(prev: bytes, receipt: EvaluationReceipt | EventReceipt) -> bytes:
    """The digest `receipt` must carry when it follows a receipt whose digest is `prev`.

    Raises `TypeError` for a value that has no canonical encoding.
    """
    if isinstance(receipt, EvaluationReceipt):
        return _evaluation_digest(
            prev,
            receipt.verdict,
            receipt.payload,
            receipt.dependency_arcs,
            receipt.action,
            receipt.evaluation_index,
        )
    return _event_digest(prev, receipt.event, receipt.action)


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
    digest = _evaluation_digest(prev, verdict, payload, arcs, action, index)
    return EvaluationReceipt(state, verdict, payload, arcs, action, after, index, digest)


def handle(
    config: QICTConfig, state: ControllerState, event: ControllerEvent, prev: bytes
) -> EventReceipt:
    """One event step from `state`, as a receipt chained to `prev` (the config is only
    used by the digest chain; events never depend on it)."""
    action, after = _event_transition(state, event)
    return EventReceipt(state, event, action, after, _event_digest(prev, event, action))


# --------------------------------------------------------------------------- audit


def _replay_payload(verdict: object, payload: object) -> tuple[Verdict, Payload]:
    if verdict == Verdict.NO:
        if not isinstance(payload, str):
            raise TypeError("receipt payload must be a string")
        return Verdict.NO, payload
    if verdict == Verdict.YES:
        return Verdict.YES, None
    if verdict == Verdict.MAYBE:
        if not isinstance(payload, str | EvidenceNeed | ComputeNeed):
            raise TypeError("MAYBE receipt payload has the wrong type")
        return Verdict.MAYBE, payload
    if not isinstance(payload, str):
        raise TypeError("receipt payload must be a string")
    return Verdict.IFF, payload


def _audit_one(config: QICTConfig, cursor: AuditCursor, receipt: object, n: int) -> None:
    errors = cursor.errors
    is_evaluation = isinstance(receipt, EvaluationReceipt)
    if not is_evaluation and not isinstance(receipt, EventReceipt):
        errors.append(f"receipt {n}: not a transition receipt ({type(receipt).__name__})")
        return
    assert isinstance(receipt, EvaluationReceipt | EventReceipt)
    before = receipt.before
    after = receipt.after
    prev = cursor.prev
    try:
        if prev is None:
            prev = genesis(config, before)
        expected: bytes | None = receipt_digest(prev, receipt)
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
        if is_evaluation:
            assert isinstance(receipt, EvaluationReceipt)
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
            assert isinstance(receipt, EventReceipt)
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
    end = cursor.prev if cursor.prev is not None else genesis(config, cursor.initial_state)
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
