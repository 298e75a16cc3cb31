"""Four-valued checks and a finite-rank controller with tamper-evident receipts.

A drop-in replacement for verdict4 0.2.0's `quaternary` package (same names, enum
values, messages, lease ids and receipt structure), without its quadratic costs, with
receipts chained by digests, JSON (de)serialisation of traces, and a tighter rank.
"""

from ._controller import (
    QICTController,
    admissible_rank,
    audit_trace,
    head_digest,
    rank,
)
from ._core import (
    CheckResult,
    ComputeNeed,
    EvidenceNeed,
    Needed,
    Verdict,
    iff,
    maybe,
    no,
    yes,
)
from ._receipts import dump_receipts, load_receipts
from ._runner import LoopOutcome, LoopStatus, run
from ._state import (
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
    QICTConfig,
    ResolutionOutcome,
    TransitionReceipt,
)

__version__ = "0.2.0"

__all__ = [
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
    "LoopStatus",
    "Needed",
    "QICTConfig",
    "QICTController",
    "ResolutionOutcome",
    "TransitionReceipt",
    "Verdict",
    "admissible_rank",
    "audit_trace",
    "dump_receipts",
    "head_digest",
    "iff",
    "load_receipts",
    "maybe",
    "no",
    "rank",
    "run",
    "yes",
]
