"""Spokes: new components of four, written by the loop itself and accepted only when typed.

    new_spoke(NAME, purpose, G)   the Python domain writes spokes/NAME.py for ``purpose``
    accept(path)                  mypy --strict against four's Protocols, import, dry run
    four spoke new NAME "..."     the same from the terminal

A spoke module defines ``KIND`` ("G", "V1", "V2", "emit" or "domain"), ``make()`` (the
component, typed as its arrow), ``DRY_RUN`` (a scripted model's replies) and ``EXPECT``
(how that dry run must end); see ``CONTRACT``. Shipped examples, each using only the
public extension API: ``four.spokes.observer`` (V2 over a folder of trajectories, emit a
metrics and failure-taxonomy report) and ``four.spokes.python_code`` (the Python domain
itself, ``four.domains.python``, as a spoke of kind "domain").
"""

from four.spokes._accept import KINDS, Verdict, accept, name_problem
from four.spokes._new import API, CONTRACT, NewSpoke, SpokeCheck, new_spoke, system_prompt

__all__ = [
    "API",
    "CONTRACT",
    "KINDS",
    "NewSpoke",
    "SpokeCheck",
    "Verdict",
    "accept",
    "name_problem",
    "new_spoke",
    "system_prompt",
]
