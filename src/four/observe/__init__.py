"""Observers: deterministic readers of what runs left behind (no model involved).

tags(messages, outcome)    what went wrong in one run, by rule: format-error storms,
                           repeated action loops, exit-127 storms, timeouts, ...
fleet(folders)             one status per folder of runs, what needs attention first
survey(folder)             every run under a folder, as its files show it (Observed)
classify(run, process, now, policy)
                           its State (finished, running, stalled, over_budget, looping,
                           dead, failed, resumed): a pure function, what `four watch` says
Check                      one row of ``four doctor``: GO, WARN or NO-GO, and the fix
lint_text(text, source, tools), lint_prompt(path, tools)
                           the commands a prompt tells the model to run against the
                           tools' real interfaces (``toolbox(env, cwd)``): ``four lint``
"""

from four.observe._check import Check
from four.observe._fleet import FolderStatus, fleet
from four.observe._interface import Toolbox, toolbox
from four.observe._lint import Finding, PromptError, lint_prompt, lint_text
from four.observe._tags import TAGS, Tag, tags
from four.observe._watch import STATES, Observed, Policy, State, Verdict, classify, survey

__all__ = [
    "STATES",
    "TAGS",
    "Check",
    "Finding",
    "FolderStatus",
    "Observed",
    "Policy",
    "PromptError",
    "State",
    "Tag",
    "Toolbox",
    "Verdict",
    "classify",
    "fleet",
    "lint_prompt",
    "lint_text",
    "survey",
    "tags",
    "toolbox",
]
