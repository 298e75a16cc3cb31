"""The QICT controller: one verdict at a time, each step recorded as a chained receipt."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from four._checked import checked

from . import _accounting as acc
from ._core import CheckResult, Verdict
from ._state import (
    AuditCursor,
    AuditResult,
    ControllerEvent,
    ControllerEventKind,
    ControllerState,
    EvaluationReceipt,
    EventReceipt,
    Payload,
    QICTConfig,
    ResolutionOutcome,
    TransitionReceipt,
)

__all__ = ["QICTController", "admissible_rank", "audit_trace", "head_digest", "rank"]


class _ReceiptLog(list[TransitionReceipt]):
    """The controller's receipt list. Appending is free; any other mutation marks the
    log so that the next incremental audit starts over."""

    stable = 0  # how many receipts were audited and not touched since (-1: touched)


def _touching(method: Callable[..., Any]) -> Callable[..., Any]:
    def touched(log: _ReceiptLog, /, *args: Any, **kwargs: Any) -> Any:
        log.stable = -1
        return method(log, *args, **kwargs)

    return touched


for _name in ("__setitem__", "__delitem__", "__imul__", "insert", "pop", "remove", "clear",
              "sort", "reverse"):  # fmt: skip
    setattr(_ReceiptLog, _name, _touching(getattr(list, _name)))


def _payload(result: CheckResult) -> Payload:
    verdict = result.verdict
    if verdict == Verdict.NO:
        return result.reason
    if verdict == Verdict.MAYBE:
        return result.needed
    if verdict == Verdict.IFF:
        return result.dependency
    return None


class QICTController:
    """Finite-rank bookkeeping for one candidate loop, with tamper-evident receipts: each
    chained to the previous one and the config (``head``: where the trace ends). Behaves
    like verdict4 0.2.0's controller, its quirks included (docs/seal.md).

    >>> from four.quaternary import ComputeNeed, maybe, yes
    >>> controller = QICTController(QICTConfig(compute_alphabet={"next_1"}))
    >>> controller.process(maybe(ComputeNeed("next_1"))).action
    <ControllerAction.ADMIT_NEXT: 'admit_next'>
    >>> controller.process(yes()).action
    <ControllerAction.EXIT_ACCEPT: 'exit_accept'>
    >>> controller.audit().valid
    True
    """

    @checked
    def __init__(self, config: QICTConfig) -> None:
        self.config = config
        # the current state (may be replaced; the next receipt then breaks the chain)
        self.state = config.initial_state()
        self._receipts = _ReceiptLog()
        self._cursor: AuditCursor | None = None

    @property
    def receipts(self) -> list[TransitionReceipt]:
        """Every receipt so far, in order."""
        return self._receipts

    @receipts.setter
    def receipts(self, value: Iterable[TransitionReceipt]) -> None:
        self._receipts = _ReceiptLog(value)
        self._cursor = None

    @property
    def head(self) -> bytes:
        """The digest the trace ends at: the last receipt's, or the genesis digest."""
        receipts = self._receipts
        if receipts:
            last = receipts[-1]
            if isinstance(last, EvaluationReceipt | EventReceipt):
                return last.digest
        return acc.genesis(self.config, self.state)

    def process(
        self, result: CheckResult, *, dependency_arcs: Iterable[tuple[str, str]] = ()
    ) -> EvaluationReceipt:
        """Account for one evaluator verdict; raises if terminal or a lease is pending."""
        arcs = frozenset(dependency_arcs)
        receipt = acc.evaluate(
            self.config, self.state, result.verdict, _payload(result), arcs, self.head
        )
        self.state = receipt.after
        self._receipts.append(receipt)
        return receipt

    def _event(self, event: ControllerEvent) -> EventReceipt:
        receipt = acc.handle(self.config, self.state, event, self.head)
        self.state = receipt.after
        self._receipts.append(receipt)
        return receipt

    def evidence_returned(self, lease_id: str) -> EventReceipt:
        """The evidence of the pending evidence lease came back."""
        return self._event(ControllerEvent(ControllerEventKind.EVIDENCE_RETURNED, lease_id))

    def resolve_dependency(self, lease_id: str, outcome: ResolutionOutcome) -> EventReceipt:
        """The dependency of the pending dependency lease resolved (HOLDS or FAILS)."""
        return self._event(
            ControllerEvent(ControllerEventKind.DEPENDENCY_RESOLVED, lease_id, outcome=outcome)
        )

    def advance_clock(self, clock: int) -> EventReceipt:
        """Move the logical clock; reaching the lease deadline expires it."""
        return self._event(ControllerEvent(ControllerEventKind.ADVANCE_CLOCK, clock=clock))

    def expire(self, lease_id: str) -> EventReceipt:
        """Expire the pending lease explicitly (terminal)."""
        return self._event(ControllerEvent(ControllerEventKind.EXPIRE, lease_id))

    def invalidate_dependency(self, dependency: str) -> EventReceipt:
        """Invalidate a dependency (always terminal, as in verdict4)."""
        return self._event(
            ControllerEvent(ControllerEventKind.INVALIDATE_DEPENDENCY, dependency=dependency)
        )

    def audit(self) -> AuditResult:
        """Audit this controller's own receipts from `config.initial_state()`.

        Incremental: only receipts appended since the last call are replayed (a
        mutation of earlier receipts makes it start over).
        """
        log = self._receipts
        cursor = self._cursor
        if cursor is None or log.stable < cursor.position:
            initial = self.config.initial_state()
            cursor = self._cursor = AuditCursor(initial, acc.rank(self.config, initial))
        acc.audit_feed(self.config, cursor, log, cursor.position)
        log.stable = len(log)
        return acc.audit_result(self.config, cursor, None)


@checked
def rank(config: QICTConfig, state: ControllerState) -> int:
    """rho = |F minus E| + B_G + B_K + B_I, exactly as verdict4 defines it.

    O(1) amortised for states the controller produced.

    >>> config = QICTConfig(failure_alphabet={"a", "b"}, compute_alphabet={"k"})
    >>> rank(config, config.initial_state())
    3
    """
    return acc.rank(config, state)


@checked
def admissible_rank(config: QICTConfig, state: ControllerState) -> int:
    """A tighter rank counting only opportunities that can still be consumed.

    |A_F minus E| + min(B_G, |G minus used|) + min(B_K, |K minus used|) +
    min(B_I, |A_I minus used|). Every continuing evaluation lowers it by exactly one
    and events never change it, so a run makes at most admissible_rank + 1 evaluations;
    it never exceeds `rank`.

    >>> config = QICTConfig(failure_alphabet={"a", "b"}, admissible_failures={"a"})
    >>> admissible_rank(config, config.initial_state())
    1
    """
    return acc.admissible_rank(config, state)


@checked
def audit_trace(
    config: QICTConfig,
    receipts: Iterable[TransitionReceipt],
    *,
    initial_state: ControllerState | None = None,
    head: bytes | None = None,
    version: int = acc.FORMAT_VERSION,
) -> AuditResult:
    """Replay a whole trace and report every inconsistency (verdict4's, and the chain's:
    docs/seal.md); ``head`` catches a trace cut short, ``version`` is the document's.

    >>> from four.quaternary import no
    >>> controller = QICTController(QICTConfig(failure_alphabet={"a"}))
    >>> _ = controller.process(no("a"))
    >>> audit_trace(controller.config, controller.receipts, head=controller.head).valid
    True
    >>> audit_trace(controller.config, [], head=controller.head).valid
    False
    """
    start = acc.initial_state(config) if initial_state is None else initial_state
    if version not in (1, acc.FORMAT_VERSION):
        raise ValueError(f"unsupported receipts version: {version!r}")
    cursor = AuditCursor(start, acc.rank(config, start), version)
    items = receipts if isinstance(receipts, list | tuple) else list(receipts)
    acc.audit_feed(config, cursor, items, 0)
    return acc.audit_result(config, cursor, head)


@checked
def head_digest(
    config: QICTConfig,
    receipts: Iterable[TransitionReceipt],
    *,
    initial_state: ControllerState | None = None,
) -> bytes:
    """The digest a trace ends at (to store beside it and pass to `audit_trace(head=)`).

    For an empty trace this is the genesis digest of `initial_state` under `config`.

    >>> controller = QICTController(QICTConfig())
    >>> head_digest(controller.config, controller.receipts) == controller.head
    True
    """
    last = deque(receipts, maxlen=1)  # the last receipt, if any
    if last and isinstance(last[0], EvaluationReceipt | EventReceipt):
        return last[0].digest
    start = config.initial_state() if initial_state is None else initial_state
    return acc.genesis(config, start)
