"""The search a judge's NO drives: attempts from a pristine workspace until the check
accepts one (``attempts``), each a sealed trajectory linked to its group, and the audit
of a whole group (``audit_group``).

    search = attempts(lambda a: a.run(G, V1, V2, emit, check=...), 4, task=..., workspace=...)
"""

from four.search._attempt import Attempt
from four.search._audit import GroupAudit, audit_group
from four.search._budget import Budget
from four.search._link import AttemptLink
from four.search._search import (
    DEFAULT_TEMPERATURE,
    Member,
    Search,
    attempts,
    next_attempt,
)

__all__ = [
    "DEFAULT_TEMPERATURE",
    "Attempt",
    "AttemptLink",
    "Budget",
    "GroupAudit",
    "Member",
    "Search",
    "attempts",
    "audit_group",
    "next_attempt",
]
