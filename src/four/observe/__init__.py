"""Observers: deterministic readers of what runs left behind (no model involved).

tags(messages, outcome)    what went wrong in one run, by rule: format-error storms,
                           repeated action loops, exit-127 storms, timeouts, ...
"""

from four.observe._tags import TAGS, Tag, tags

__all__ = ["TAGS", "Tag", "tags"]
