"""The plan the model writes, and V1: reading it from a reply.

A plan is one JSON object in a ```json block::

    {"tasks": [{"id": "sum", "task": "...", "check": "./sum 2 3 | grep -qx 5",
                "why": "...", "domain": "cli", "max_steps": 20,
                "held_out": {"tests_hidden/test_sum.py": "..."}}],
     "system": "an optional system prompt of the launch's own"}

V1 checks its shape only (what a field is); whether the plan is any good is V2's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from returns.result import Failure, Result, Success

from four._grammar import WHITESPACE, Chars, Expr, Grammar, Lit, Ref, Rep, grammar_of
from four._types import JSON, Action, FormatError, Rejected, Reply, Submitted
from four.parse._regex import fenced_blocks
from four.parse._shapes import THOUGHT_LINES, alt, opt, prose, seq, thought

MAX_PLAN = 1 << 20
"""Characters of a plan read at most (held-out files included)."""
MAX_TASKS = 200
GRAMMAR_TASKS = 20
"""Tasks a plan of the grammar holds at most (the built-in model's plans are small)."""
_HEX = "0123456789abcdefABCDEF"

_KNOWN = frozenset({"id", "task", "check", "why", "domain", "max_steps", "held_out"})


@dataclass(frozen=True, slots=True)
class PlanTask:
    """One task of a launch: what the agent is asked, the command that judges it, why
    that command proves the task done, its domain, its step budget (None: the launch's),
    and its held-out files (path in the workspace -> content), there only while the check
    runs."""

    id: str
    task: str
    check: str
    why: str
    domain: str = "bash"
    max_steps: int | None = None
    held_out: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, JSON]:
        data: dict[str, JSON] = {"id": self.id, "task": self.task, "check": self.check,
                                 "why": self.why, "domain": self.domain}  # fmt: skip
        if self.max_steps is not None:
            data["max_steps"] = self.max_steps
        if self.held_out:
            data["held_out"] = dict(self.held_out)
        return data


@dataclass(frozen=True, slots=True)
class Plan:
    """A launch as the model planned it: its tasks, and a system prompt of its own (or
    None: each domain's)."""

    tasks: tuple[PlanTask, ...]
    system: str | None = None

    def to_json(self) -> dict[str, JSON]:
        data: dict[str, JSON] = {"tasks": [t.to_json() for t in self.tasks]}
        if self.system is not None:
            data["system"] = self.system
        return data

    def text(self) -> str:
        """The plan as the JSON text V2 is given (the action's command)."""
        return json.dumps(self.to_json(), indent=1, ensure_ascii=False)


def plan_from_json(data: object) -> Plan:
    """A plan from decoded JSON; ``ValueError`` names the first field that is wrong.

    >>> plan_from_json({"tasks": [{"id": "a", "task": "t", "check": "false", "why": "w"}]}).tasks[0].domain
    'bash'
    """
    if not isinstance(data, dict):
        raise ValueError('the plan must be one JSON object: {"tasks": [...]}')
    unknown = sorted(set(data) - {"tasks", "system"})
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}: a plan has only tasks and system")
    tasks = data.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise ValueError('"tasks" must be a list of at least one task')
    if len(tasks) > MAX_TASKS:
        raise ValueError(f'"tasks" has {len(tasks)} tasks; at most {MAX_TASKS}')
    system = data.get("system")
    if system is not None and not (isinstance(system, str) and system.strip()):
        raise ValueError('"system" must be a non-empty string, or left out')
    return Plan(tuple(_task(t, i) for i, t in enumerate(tasks)), system)


def _task(data: object, index: int) -> PlanTask:
    where = f"tasks[{index}]"
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object with id, task, check and why")
    unknown = sorted(set(data) - _KNOWN)
    if unknown:
        raise ValueError(
            f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(sorted(_KNOWN))})"
        )
    texts = {}
    for name in ("id", "task", "check", "why"):
        value = data.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{where}.{name} must be a non-empty string")
        texts[name] = value.strip() if name != "task" else value
    domain = data.get("domain", "bash")
    if not isinstance(domain, str):
        raise ValueError(f"{where}.domain must be a string")
    steps = data.get("max_steps")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(f"{where}.max_steps must be a whole number of at least 1")
    held = data.get("held_out", {})
    if not isinstance(held, dict) or not all(isinstance(v, str) for v in held.values()):
        raise ValueError(f"{where}.held_out must be an object of file paths and their contents")
    return PlanTask(texts["id"], texts["task"], texts["check"], texts["why"], domain, steps, held)


_JSON_TAGS = ("json", "")


def read_plan(text: str) -> Plan:
    """The plan in a reply: its ```json block (or the reply itself, when it is JSON).
    ``ValueError`` says what to fix."""
    if len(text) > MAX_PLAN:
        raise ValueError(
            f"the reply is longer than {MAX_PLAN:,} characters: plan fewer, smaller tasks"
        )
    blocks = [b for b in fenced_blocks(text, ()) if b.tag in _JSON_TAGS]
    candidates = [b.body for b in blocks] or ([text] if text.lstrip().startswith("{") else [])
    if not candidates:
        raise ValueError(
            'no plan found: reply with the whole plan in one ```json block holding {"tasks": [...]}'
        )
    if len(candidates) > 1:
        raise ValueError("several ```json blocks: reply with the whole plan in one block")
    try:
        data = json.loads(candidates[0])
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"the plan is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise ValueError("the plan is nested too deeply") from None
    return plan_from_json(data)


_SIGNAL = re.compile(r"^\s*COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\s*$", re.M)


@dataclass(frozen=True, slots=True)
class PlanParse:
    """V1 of the plan domain: the reply's plan as one action (its JSON text) for V2, or
    a format error saying what to fix. A plan is never submitted by the model's word:
    only V2 submits one, once it validates."""

    def grammar(self) -> Grammar:
        """The replies the built-in model is held to (see ``Constrained``): a short
        thought, then the plan in one ```json block, its fields in the order the prompt
        shows them, up to ``GRAMMAR_TASKS`` tasks (the size of a reply is the model's
        ``max_tokens``, well under ``MAX_PLAN``).

        >>> [name for name, _ in plan_parse().grammar().rules][:3]
        ['root', 'plan', 'task']
        """
        ws = opt(alt(Lit(" "), seq(Lit("\n"), Rep(Lit(" "), 0, 12))))

        def field(name: str, value: str, first: bool = False) -> Expr:
            head = seq(ws, Lit(f'"{name}"'), ws, Lit(":"), ws, Ref(value))
            return head if first else seq(ws, Lit(","), head)

        def obj(*fields: Expr) -> Expr:
            return seq(Lit("{"), *fields, ws, Lit("}"))

        control = "".join(map(chr, range(32)))
        escape = seq(Lit("\\"), alt(Chars('"\\/bfnrt'), seq(Lit("u"), Rep(Chars(_HEX), 4, 4))))
        char = alt(Chars('"\\' + control, negated=True), escape)
        pair = seq(ws, Ref("string"), ws, Lit(":"), ws, Ref("string"))
        return grammar_of(
            ("root", seq(thought(THOUGHT_LINES), Lit("```json\n"), Ref("plan"), Lit("\n```"))),
            ("plan", obj(
                seq(field("tasks", "tasks", first=True)), opt(field("system", "text"))
            )),
            ("task", obj(
                field("id", "text", first=True), field("task", "text"), field("check", "text"),
                field("why", "text"), opt(field("domain", "string")),
                opt(field("max_steps", "steps")), opt(field("held_out", "files")),
            )),
            ("tasks", seq(
                Lit("["), ws, Ref("task"),
                Rep(seq(ws, Lit(","), ws, Ref("task")), 0, GRAMMAR_TASKS - 1), ws, Lit("]"),
            )),
            ("files", seq(Lit("{"), opt(seq(pair, Rep(seq(ws, Lit(","), pair)))), ws, Lit("}"))),
            ("steps", seq(Chars("123456789"), Rep(Chars("0123456789"), 0, 5))),
            # A text holds a character that is not blank, so it is not blank once stripped.
            ("text", seq(Lit('"'), Rep(char), Chars('"\\' + control + WHITESPACE, negated=True),
                         Rep(char), Lit('"'))),
            ("string", seq(Lit('"'), Rep(char), Lit('"'))),
            *prose(),
        )  # fmt: skip

    def __call__(
        self, reply: Reply, /
    ) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        try:
            plan = read_plan(reply.content)
        except ValueError as exc:
            said = (
                ""
                if not _SIGNAL.search(reply.content)
                else (" (a plan is done when it validates, not when you say so)")
            )
            return Failure(FormatError(f"{exc}{said}"))
        return Success([Action(plan.text())])


def plan_parse() -> PlanParse:
    """V1 of the plan domain (see ``PlanParse``).

    >>> from four import Assistant
    >>> plan_parse()(Assistant("no plan here")).failure().feedback[:13]
    'no plan found'
    """
    return PlanParse()
