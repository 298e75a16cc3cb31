"""The plan domain: the loop compiling a free-text mission into a validated launch.

G is the model; V1 (``plan_parse``) reads the plan it writes (tasks, checks, held-out
files); V2 (``plan_env``) validates it deterministically and tells every problem back
(each check run on the starting workspace, where it must fail, twice the same way;
held-out files out of the agents' reach; domains, environment and ``four lint``); the
check accepts only a plan V2 validated; emit writes the launch folder under the
planning run's seal. ``compile_launch`` runs it; ``four plan`` is the command.

>>> from four.domains.plan import read_plan
>>> read_plan('```json\\n{"tasks": [{"id": "a", "task": "t", "check": "false", "why": "w"}]}\\n```').tasks[0].id
'a'
"""

from four.domains.plan._compile import (
    Compiled,
    check_launch,
    compile_launch,
    launch_problems,
    read_launch,
)
from four.domains.plan._launch import Launch
from four.domains.plan._plan import Plan, PlanParse, PlanTask, plan_parse, read_plan
from four.domains.plan._prompt import SYSTEM
from four.domains.plan._validate import PlanEnv, Rejection, Verdict, plan_env, run_check, validate

__all__ = [
    "SYSTEM",
    "Compiled",
    "Launch",
    "Plan",
    "PlanEnv",
    "PlanParse",
    "PlanTask",
    "Rejection",
    "Verdict",
    "check_launch",
    "compile_launch",
    "launch_problems",
    "plan_env",
    "plan_parse",
    "read_launch",
    "read_plan",
    "run_check",
    "validate",
]
