"""Stub for the compiled accounting core; mirrors `four.quaternary._accounting_py`.

Checked against the built extension by `python -m mypy.stubtest four.quaternary._accounting_c`.
"""

from collections.abc import Sequence
from typing import Final

from four.quaternary._core import Verdict
from four.quaternary._state import (
    AuditCursor,
    AuditResult,
    ControllerEvent,
    ControllerState,
    EvaluationReceipt,
    EventReceipt,
    Payload,
    QICTConfig,
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

FORMAT_VERSION: Final[int]

def rank(config: QICTConfig, state: ControllerState) -> int: ...
def admissible_rank(config: QICTConfig, state: ControllerState) -> int: ...
def fingerprint(config: QICTConfig) -> bytes: ...
def initial_state(config: QICTConfig) -> ControllerState: ...
def genesis(config: QICTConfig, state: ControllerState, version: int = ...) -> bytes: ...
def receipt_digest(
    prev: bytes, receipt: EvaluationReceipt | EventReceipt, version: int = ...
) -> bytes: ...
def evaluate(
    config: QICTConfig,
    state: ControllerState,
    verdict: Verdict,
    payload: Payload,
    arcs: frozenset[tuple[str, str]],
    prev: bytes,
) -> EvaluationReceipt: ...
def handle(
    config: QICTConfig, state: ControllerState, event: ControllerEvent, prev: bytes
) -> EventReceipt: ...
def audit_feed(
    config: QICTConfig, cursor: AuditCursor, receipts: Sequence[object], start: int
) -> None: ...
def audit_result(config: QICTConfig, cursor: AuditCursor, head: bytes | None) -> AuditResult: ...
