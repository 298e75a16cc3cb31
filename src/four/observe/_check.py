"""One row of ``four doctor``: a check's verdict, what it saw, and the fix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from four._checked import Checked
from four._types import JSON

Status: TypeAlias = Literal["GO", "WARN", "NO-GO"]


@dataclass(frozen=True, slots=True)
class Check(Checked):
    """One row of the readiness table: what was checked, the verdict, what it saw, the fix."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {"check": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def exit_code(checks: Sequence[Check]) -> int:
    """0 when every check is GO, 1 when one is NO-GO, 3 when the worst is a WARN.

    >>> exit_code([Check("a", "GO", ""), Check("b", "WARN", "")])
    3
    """
    statuses = {c.status for c in checks}
    if "NO-GO" in statuses:
        return 1
    return 3 if "WARN" in statuses else 0
