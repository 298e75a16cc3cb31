"""Observers: deterministic readers of what runs left behind (no model involved).

tags(messages, outcome)    what went wrong in one run, by rule: format-error storms,
                           repeated action loops, exit-127 storms, timeouts, ...
fleet(folders)             one status per folder of runs, what needs attention first
classify(sealed, ...)      finished, running or stalled, from what a run's record says
Check                      one row of ``four doctor``: GO, WARN or NO-GO, and the fix
"""

from four.observe._check import Check
from four.observe._fleet import FolderStatus, classify, fleet
from four.observe._tags import TAGS, Tag, tags

__all__ = ["TAGS", "Check", "FolderStatus", "Tag", "classify", "fleet", "tags"]
