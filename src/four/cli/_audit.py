"""``four audit TRAJ``: replay a verified run's receipts and say whether they hold.

Exit 0 valid, 1 invalid (each reason printed), 2 when there is nothing to audit (a
run made without ``--check`` stores no receipts) or the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from four._types import JSON
from four.cli._errors import UsageError
from four.cli._steps import max_size


def main(args: argparse.Namespace) -> int:
    """Audit ``args.trajectory``; print the result as text or, with ``--json``, JSON."""
    from four.checks import audit
    from four.cli._steps import load_trajectory_or_say

    path = Path(str(args.trajectory))
    trajectory = load_trajectory_or_say(path, max_size(args))
    if not isinstance(trajectory.stats.get("verdicts"), dict):
        raise UsageError(
            f"nothing to audit: {path} holds no verdicts "
            "(only a verified run, `four run --check CMD`, stores receipts)"
        )
    result = audit(trajectory)
    if args.json:
        report: dict[str, JSON] = {
            "path": str(path),
            "valid": result.valid,
            "errors": list(result.errors),
            "evaluations": result.evaluations,
            "initial_rank": result.initial_rank,
            "final_rank": result.final_rank,
            "head": result.head.hex(),
            "outcome": trajectory.outcome,
        }
        print(json.dumps(report, indent=2))
    elif result.valid:
        print(
            f"valid: {path}\n"
            f"  {result.evaluations} evaluations, rank {result.initial_rank} -> "
            f"{result.final_rank}, head {result.head.hex()[:16]}\n"
            f"  outcome {trajectory.outcome}"
        )
    else:
        print(f"invalid: {path}")
        for error in result.errors:
            print(f"  - {error}")
    return 0 if result.valid else 1
