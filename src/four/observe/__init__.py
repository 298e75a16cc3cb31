"""Observers: deterministic readers of what runs left behind (no model involved).

tags(messages, outcome)    what went wrong in one run, by rule: format-error storms,
                           repeated action loops, exit-127 storms, timeouts, ...
fleet(folders)             one status per folder of runs, what needs attention first
survey(folder)             every run under a folder, as its files show it (Observed)
classify(run, process, now, policy)
                           its State (finished, running, stalled, over_budget, looping,
                           dead, failed, resumed): a pure function, what `four watch` says
Check                      one row of ``four doctor``: GO, WARN or NO-GO, and the fix
"""

from four.observe._check import Check
from four.observe._fleet import FolderStatus, fleet
from four.observe._tags import TAGS, Tag, tags
from four.observe._watch import STATES, Observed, Policy, State, Verdict, classify, survey

__all__ = [
    "STATES",
    "TAGS",
    "Check",
    "FolderStatus",
    "Observed",
    "Policy",
    "State",
    "Tag",
    "Verdict",
    "classify",
    "fleet",
    "survey",
    "tags",
]
