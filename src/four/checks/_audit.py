"""four.audit: replay a trajectory's verdict receipts and say whether they hold."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from four._types import JSON
from four.checks._config import config_from_json
from four.quaternary import AuditResult, audit_trace, load_receipts
from four.trajectory import Trajectory, load_trajectory


def audit(trajectory: str | os.PathLike[str] | Trajectory) -> AuditResult:
    """Replay the receipts a verified run stored, against its config and head digest.

    Invalid when a receipt was edited, reordered, dropped or cut short, when the config
    differs, or when the evaluations exceed initial_rank + 1. A trajectory with no
    verdicts, or with a malformed record, is reported invalid with the reason.

    >>> audit("missing.json")
    Traceback (most recent call last):
    ...
    four.trajectory._load.TrajectoryError: cannot read missing.json: No such file or directory
    """
    loaded = trajectory if isinstance(trajectory, Trajectory) else load_trajectory(trajectory)
    record = loaded.stats.get("verdicts")
    if not isinstance(record, dict):
        return _invalid("the trajectory holds no verdicts to audit")
    try:
        config = config_from_json(_mapping(record.get("config")))
        head = bytes.fromhex(str(record.get("head")))
        receipts = load_receipts(json.dumps(record.get("receipts")))
    except ValueError as exc:
        return _invalid(f"cannot read the verdict record: {exc}")
    return audit_trace(config, receipts, head=head)


def _mapping(value: JSON) -> Mapping[str, JSON]:
    if not isinstance(value, dict):
        raise ValueError("config is missing")
    return value


def _invalid(error: str) -> AuditResult:
    return AuditResult(False, (error,), 0, 0, 0)
