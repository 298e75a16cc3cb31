"""Four-valued checks and a finite-rank controller with tamper-evident receipts: a
drop-in replacement for verdict4 0.2.0's `quaternary` package (docs/seal.md)."""

# ruff: noqa: F403, F405 - the public names are the private modules' own (as httpx's)
from ._controller import *
from ._core import *
from ._receipts import dump_receipts, load_receipts
from ._runner import *
from ._state import *

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
