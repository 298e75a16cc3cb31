"""Observers: deterministic readers of what runs left behind (no model involved).

tags(messages, outcome)    what went wrong in one run, by rule: format-error storms,
                           repeated action loops, exit-127 storms, timeouts, ...
survey(folder)             every run under a folder, as its files show it (Observed)
classify(run, process, now, policy)
                           its State (finished, running, stalled, over_budget, looping,
                           dead, failed, resumed): a pure function, what `four watch` says
"""

from four.observe._tags import TAGS, Tag, tags
from four.observe._watch import STATES, Observed, Policy, State, Verdict, classify, survey

__all__ = [
    "STATES",
    "TAGS",
    "Observed",
    "Policy",
    "State",
    "Tag",
    "Verdict",
    "classify",
    "survey",
    "tags",
]
