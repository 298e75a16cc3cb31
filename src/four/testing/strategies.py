"""Hypothesis strategies for the loop's values, valid by construction.

Each returns a ``SearchStrategy`` of one of four's types, shrinking toward the simplest
value of it (short text, no tool calls, the first enum member)::

    from hypothesis import given
    from four.testing import strategies as fs

    @given(fs.replies())
    def test_my_parser_never_raises(reply):
        my_parser(reply)

Installing four registers them with Hypothesis (its ``hypothesis`` entry point), so
``st.from_type(four.Reply)`` and the like draw from these in any script.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from four._grammar import Alt, Chars, Expr, Grammar, Lit, Rep, Seq
from four._outcomes import (
    Accepted,
    Blocked,
    CostLimitReached,
    Crashed,
    ExecutionFailed,
    Finished,
    Held,
    Interrupted,
    ModelFailed,
    Outcome,
    RepeatedFormatError,
    Stalled,
    StepsExhausted,
    Stopped,
    TimeLimitReached,
)
from four._types import (
    EXIT_SIGNAL,
    Action,
    Assistant,
    ExecutionError,
    FormatError,
    Message,
    ModelError,
    ModelErrorKind,
    Observation,
    Rejected,
    Submitted,
    System,
    ToolCall,
    ToolResult,
    Usage,
    User,
)
from four.quaternary import (
    CheckResult,
    ComputeNeed,
    EvidenceNeed,
    QICTConfig,
    iff,
    maybe,
    no,
    yes,
)

__all__ = [
    "actions",
    "commands",
    "for_type",
    "histories",
    "model_errors",
    "observations",
    "outcomes",
    "qict_configs",
    "replies",
    "texts",
    "tool_calls",
    "usages",
    "verdict_sequences",
    "verdicts",
]

# Characters that break naive code: NUL, escapes, a lone surrogate, CR, right-to-left.
_ODD = ["\x00", "\x1b[2J", "\ud800", "\r", "\u202e", "\t", "é", "😀", "\\", "`", "$"]


def texts(max_size: int = 200) -> st.SearchStrategy[str]:
    """Text a model might write: plain words, odd characters (NUL, escapes, a lone
    surrogate), now and then a very long line."""
    return st.one_of(
        st.text(st.sampled_from("abc xyz\n"), max_size=max_size),
        st.text(max_size=max_size),
        st.lists(st.sampled_from(_ODD), max_size=8).map("".join),
        st.integers(10_000, 200_000).map(lambda n: "x" * n),
    )


def _fenced(tags: Sequence[str]) -> st.SearchStrategy[str]:
    body = st.one_of(st.sampled_from(["ls -la", "echo hi", "cat <<'EOF'\n```\nEOF", ""]), texts(40))
    return st.builds(lambda tag, text: f"```{tag}\n{text}\n```", st.sampled_from(tags), body)


def _content() -> st.SearchStrategy[str]:
    part = st.one_of(
        texts(80),
        _fenced(["bash", "sh", "python", "", "console", "mswea_bash_command"]),
        st.just(EXIT_SIGNAL),
        st.just(f"  {EXIT_SIGNAL} "),
        st.just("```bash\n"),  # an unclosed fence
    )
    return st.lists(part, max_size=5).map("\n".join)


@st.composite
def tool_calls(draw: st.DrawFn, max_calls: int = 3) -> tuple[ToolCall, ...]:
    """Tool calls with unique ids: valid ``{"command": ...}`` arguments, broken JSON,
    other shapes and other tool names."""
    arguments = st.one_of(
        st.builds(lambda c: json.dumps({"command": c}), st.sampled_from(["ls", "echo hi", ""])),
        st.builds(lambda c: json.dumps({"command": c}), texts(40)),
        st.sampled_from(['{"command": ', "[]", '"ls"', "null", "{}", '{"cmd": "ls"}', ""]),
        texts(30),
    )
    n = draw(st.integers(0, max_calls))
    names = st.sampled_from(["bash", "bash", "python", ""])
    return tuple(ToolCall(f"call_{i}", draw(names), draw(arguments)) for i in range(n))


def usages() -> st.SearchStrategy[Usage]:
    """Token counts and cost, the cost sometimes unknown."""
    return st.builds(
        Usage,
        st.integers(0, 10**6),
        st.integers(0, 10**5),
        st.one_of(st.none(), st.floats(0, 10, allow_nan=False)),
    )


@st.composite
def replies(draw: st.DrawFn, tool_calls_too: bool = True) -> Assistant:
    """Model replies: text with and without fenced blocks and exit signals, tool calls
    with valid and broken arguments, replies cut off at the token limit, huge text."""
    calls = draw(tool_calls()) if tool_calls_too and draw(st.booleans()) else ()
    finish = draw(
        st.sampled_from(["stop", "stop", "length", "content_filter"])
        if not calls
        else st.sampled_from(["tool_calls", "length"])
    )
    return Assistant(
        draw(_content()),
        calls,
        reasoning=draw(st.sampled_from(["", "thinking about it"])),
        finish_reason=finish,  # type: ignore[arg-type]  # one of the closed set
        usage=draw(st.one_of(st.none(), usages())),
    )


@st.composite
def histories(draw: st.DrawFn, max_turns: int = 8) -> list[Message]:
    """Histories a provider accepts: system, task, then whole turns, each tool call
    answered by a result with its id, text turns by a user observation."""
    out: list[Message] = [System(draw(texts(60))), User(draw(texts(60)), "task")]
    for turn in range(draw(st.integers(0, max_turns))):
        calls = tuple(
            ToolCall(f"call_{turn}_{i}", "bash", json.dumps({"command": "ls"}))
            for i in range(draw(st.integers(0, 2)))
        )
        out.append(Assistant(draw(texts(60)), calls, usage=draw(st.one_of(st.none(), usages()))))
        for call in calls:
            out.append(ToolResult(call.id, draw(texts(60)), call.name, "observation", 0))
        if not calls:
            out.append(User(draw(texts(60)), "observation", draw(st.integers(0, 2))))
    return out


def commands() -> st.SearchStrategy[str]:
    """Harmless bash commands of every shape of outcome: output on both streams, exit
    codes, no output, much output, bytes that are not UTF-8, a short sleep."""
    word = st.text(st.sampled_from("abcxyz é$`\\'\""), max_size=20).map(shlex.quote)
    return st.one_of(
        st.builds(lambda w: f"echo {w}", word),
        st.builds(lambda w: f"echo {w} >&2", word),
        st.builds(lambda n: f"exit {n}", st.integers(0, 255)),
        st.sampled_from(["true", "false", "printf '\\377\\376 not utf-8'", "sleep 0.05",
                         "cat /dev/null", "pwd", "echo $((6 * 7))"]),
        st.builds(lambda n: f"seq 1 {n}", st.integers(1, 5000)),
        st.builds(lambda n: f"head -c {n} /dev/zero | tr '\\0' x", st.integers(0, 200_000)),
    )  # fmt: skip


def actions() -> st.SearchStrategy[Action]:
    """Actions of ``commands()``, some paired with a tool call id."""
    return st.builds(Action, commands(), st.one_of(st.none(), st.just("call_0")))


def observations() -> st.SearchStrategy[Observation]:
    return st.builds(
        Observation,
        texts(200),
        st.one_of(st.none(), st.integers(-9, 255)),
        st.booleans(),
        st.floats(0, 60, allow_nan=False),
    )


def model_errors() -> st.SearchStrategy[ModelError]:
    """Model errors of every kind, with statuses, Retry-After and billed usage."""
    return st.builds(
        ModelError,
        st.sampled_from(list(ModelErrorKind)),
        texts(80),
        st.one_of(st.none(), st.sampled_from([400, 401, 403, 404, 408, 429, 500, 503, 529])),
        st.one_of(st.none(), st.floats(0, 120, allow_nan=False)),
        st.integers(1, 5),
        st.one_of(st.none(), usages()),
    )


def outcomes() -> st.SearchStrategy[Outcome]:
    """Every way a run can end."""
    text = texts(40)
    return st.one_of(
        st.builds(Finished, text),
        st.builds(ModelFailed, text),
        st.builds(RepeatedFormatError, text),
        st.just(StepsExhausted()),
        st.builds(ExecutionFailed, text),
        st.builds(CostLimitReached, text),
        st.builds(Stalled, text),
        st.builds(TimeLimitReached, text),
        st.builds(Interrupted, st.sampled_from(["KeyboardInterrupt", "CancelledError"])),
        st.builds(Crashed, st.sampled_from(["G", "V1", "V2", "check", "emit", "loop"]), text),
        st.builds(Accepted, text),
        st.builds(Held, text),
        st.builds(Blocked, text),
        st.builds(Stopped, text),
    )


def verdicts(
    reasons: Sequence[str] = ("r1", "r2", "r3"),
    evidence: Sequence[str] = ("logs",),
    compute: Sequence[str] = ("step_1", "step_2"),
    dependencies: Sequence[str] = ("dep",),
) -> st.SearchStrategy[CheckResult]:
    """A check's verdicts: NO with a reason, YES, MAYBE needing evidence or compute (or
    a need outside the alphabets), IFF on a dependency."""
    return st.one_of(
        st.builds(no, st.sampled_from([*reasons, "unlisted reason"])),
        st.just(yes()),
        st.builds(lambda e: maybe(EvidenceNeed(e)), st.sampled_from([*evidence, "unknown"])),
        st.builds(lambda s: maybe(ComputeNeed(s)), st.sampled_from([*compute, "unknown_step"])),
        st.builds(iff, st.sampled_from([*dependencies, "other dependency"])),
    )


def verdict_sequences(max_size: int = 12) -> st.SearchStrategy[list[CheckResult]]:
    return st.lists(verdicts(), min_size=1, max_size=max_size)


def qict_configs() -> st.SearchStrategy[QICTConfig]:
    """Small QICT configurations: alphabets of a few names, budgets within them."""
    names = st.frozensets(st.sampled_from(["a", "b", "c", "d"]), max_size=4)
    budget = st.one_of(st.none(), st.integers(0, 3))
    return st.builds(
        QICTConfig,
        failure_alphabet=names,
        evidence_alphabet=names,
        compute_alphabet=names,
        dependency_alphabet=names,
        evidence_budget=budget,
        compute_budget=budget,
        dependency_budget=budget,
    )


def for_type(kind: type) -> st.SearchStrategy[object]:
    """The strategy ``st.from_type(kind)`` draws from, for each type of four's that
    Hypothesis' entry point registers (``four.testing._hypothesis``)."""
    made: dict[type, Callable[[], st.SearchStrategy[object]]] = {
        Assistant: replies,
        Action: actions,
        Observation: observations,
        ModelError: model_errors,
        Usage: usages,
        CheckResult: verdicts,
        QICTConfig: qict_configs,
        FormatError: lambda: st.builds(FormatError, texts(80)),
        Submitted: lambda: st.builds(Submitted, texts(80)),
        ExecutionError: lambda: st.builds(ExecutionError, texts(80)),
        Rejected: lambda: st.builds(Rejected, st.just("call_0"), texts(80)),
    }
    return made[kind]()


def grammar_texts(grammar: Grammar, more: int = 3) -> st.SearchStrategy[str]:
    """Strings ``grammar`` allows (see ``four.types.Grammar``), each drawn node by node: a
    repetition with no upper bound at most ``more`` times past its least; a negated
    character class any character but its own.

    >>> from four import regex_parse
    >>> text = grammar_texts(regex_parse().grammar()).example()  # doctest: +SKIP
    """
    rules = dict(grammar.rules)
    made: dict[str, st.SearchStrategy[str]] = {}

    def rule(name: str) -> st.SearchStrategy[str]:
        if name not in made:
            made[name] = st.deferred(lambda: of(rules[name]))
        return made[name]

    def of(expr: Expr) -> st.SearchStrategy[str]:
        if isinstance(expr, Lit):
            return st.just(expr.text)
        if isinstance(expr, Chars):
            if expr.negated:
                return st.characters(exclude_characters=expr.chars)
            return st.sampled_from(expr.chars)
        if isinstance(expr, Seq):
            return st.tuples(*map(of, expr.items)).map("".join)
        if isinstance(expr, Alt):
            return st.one_of(*map(of, expr.options))
        if isinstance(expr, Rep):
            high = expr.low + more if expr.high is None else expr.high
            return st.lists(of(expr.item), min_size=expr.low, max_size=high).map("".join)
        return rule(expr.name)

    return rule("root")
