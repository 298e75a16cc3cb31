"""A step as the live watch notes it on the run's thread: a flat tuple of plain values
(``Facts``: cheap to make, and to pickle for the sender's process), made into its span
later by the sender (``Maker``), away from the run.

The sender's process takes them as one flat list of values, record after record
(``records``): a record's first value says its kind, and so its width. A step's span id
is not noted: it is made from the trace id and the step's index in the run
(``step_span_id``), by the sender live and by ``four export otel`` later alike.

``AgentFacts``: the trace id, the run's span id, its start, model, provider, whether
content goes out, and whether its model calls count in the metrics. The facts of a step
carry their run's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal, TypeAlias, cast

from four._types import (
    Action,
    Assistant,
    ExecutionError,
    FinishReason,
    Message,
    Observation,
    Submitted,
    Usage,
)
from four.otel._spans import (
    Agent,
    Chat,
    Span,
    SpanEvent,
    Tool,
    agent_span,
    chat_span,
    step_span_id,
    tool_span,
)

AgentFacts: TypeAlias = tuple[int, int, float, str, str, bool, bool]

New: TypeAlias = tuple[int, tuple[Message, ...]]
"""Messages of the history new since the run's last model call, and where they start."""

ChatFacts: TypeAlias = tuple[
    Literal["chat"], AgentFacts, int, float, float,  # the step's index; start, end
    str | None, str,  # a failed call: its error's kind, its message
    str, FinishReason | None, int | None, int | None,  # the reply's model, finish, tokens
    Assistant | None, int, New | None,  # with content only: the reply; the history's length,
]  # fmt: skip  # (with content only) its messages new since the last call
"""A model call (times as the run's clock gave them: the span's are ``micros`` of them)."""

ToolFacts: TypeAlias = tuple[
    Literal["execute_tool"], AgentFacts, int, float, float,  # the step's index; start, end
    str, str | None, str, int | None,  # the command, its call's id, the tool's name, exit code
    str | None, str | None, str,  # its output (with content only), error's kind, detail
]  # fmt: skip
"""An action."""

RunFacts: TypeAlias = tuple[
    Literal["invoke_agent"], AgentFacts, float, str, int, int, int,  # end, outcome, steps,
    tuple[SpanEvent, ...],  # tokens in and out, the verdicts
]  # fmt: skip
"""The run, at its end."""

Facts: TypeAlias = ChatFacts | ToolFacts | RunFacts

WIDTHS: dict[object, int] = {"chat": 14, "execute_tool": 12, "invoke_agent": 8, "span": 2}
"""How many values a record of each kind takes in a flat list (``records``); a span
(of a saved run) is ``"span", span``."""

OPS = {"c": "chat", "t": "execute_tool", "e": "evaluate"}
"""The letters of the trajectory's ``stats.otel.steps.op`` (see ``OtelWatch.record``)."""

_KEPT = 1024
"""Runs whose history a ``Maker`` keeps at most (for content; a run's is let go at its end)."""


def agent_facts(agent: Agent, counted: bool) -> AgentFacts:
    return (agent.trace_id, agent.span_id, agent.started, agent.model, agent.provider,
            agent.content, counted)  # fmt: skip


def micros(started: float, t: float) -> int:
    """``t``, in whole microseconds since ``started``: as the trajectory keeps it."""
    return round((t - started) * 1e6)


def at(started: float, us: int) -> float:
    """The time (seconds since the epoch) of ``us`` microseconds since ``started``: the
    one expression the live spans and the exported ones are timed by."""
    return started + us / 1e6


def answer(
    action: Action, seen: Observation | Submitted | ExecutionError
) -> tuple[bool, int | None, str | None, str | None, str]:
    """What an action came to: whether it was answered (its answer at ``position`` of
    the history), its exit code, its output, its error's kind and detail."""
    if isinstance(seen, Observation):
        if seen.timed_out:
            return True, seen.returncode, seen.content, "timeout", "the command timed out"
        return True, seen.returncode, seen.content, None, ""
    answered = action.call_id is not None
    if isinstance(seen, ExecutionError):
        return answered, None, None, "execution_error", seen.message
    return answered, None, seen.output, None, ""  # Submitted


def records(values: Sequence[object]) -> Iterator[Facts | Span]:
    """The records of a flat list of values (facts, or ``"span", span``), in order.

    >>> list(records(["span", "a", "span", "b"]))
    ['a', 'b']
    """
    i, end = 0, len(values)
    while i < end:
        kind = values[i]
        width = WIDTHS[kind]
        if kind == "span":
            yield cast(Span, values[i + 1])
        else:
            yield cast(Facts, tuple(values[i : i + width]))
        i += width


def count(values: Sequence[object], most: int | None = None) -> tuple[int, int]:
    """How many whole records a flat list of values holds, and how many values they take:
    all, or those within ``most`` values (one record at least).

    >>> count(["span", "a", "span", "b", "span", "c"], 5)
    (2, 4)
    """
    i, end, n = 0, len(values), 0
    limit = end if most is None else min(end, most)
    while i < end:
        width = WIDTHS[values[i]]
        if i + width > limit and n:
            break
        i += width
        n += 1
    return n, i


class Maker:
    """Makes the span of facts (as for a saved run); with content, keeps each running
    trace's history as its model calls bring it (``New``), to show each call what it
    was sent."""

    __slots__ = ("_histories",)

    def __init__(self) -> None:
        self._histories: dict[int, list[Message | None]] = {}

    def span(self, facts: Facts) -> Span:
        agent = Agent(*facts[1][:6])
        started = agent.started
        if facts[0] == "chat":
            _, _, k, start, end, error, detail, model, finish, tin, tout, reply, n, new = facts
            span_id = step_span_id(agent.trace_id, k)
            t0, t1 = at(started, micros(started, start)), at(started, micros(started, end))
            inputs = self._inputs(agent.trace_id, n, new) if agent.content else ()
            if error is not None:
                return chat_span(agent, Chat(span_id, t0, t1, None, error, detail, inputs))
            if reply is None:  # what the span says of a reply (without content)
                usage = None if tin is None or tout is None else Usage(tin, tout)
                reply = Assistant("", finish_reason=finish, usage=usage, model=model)
            return chat_span(agent, Chat(span_id, t0, t1, reply, inputs=inputs))
        if facts[0] == "execute_tool":
            _, _, k, start, end, command, call_id, name, code, output, error, detail = facts
            return tool_span(agent, Tool(
                step_span_id(agent.trace_id, k), at(started, micros(started, start)),
                at(started, micros(started, end)),
                command, call_id, name, code, output, error, detail,
            ))  # fmt: skip
        _, _, end_at, outcome, steps, tin, tout, events = facts
        self._histories.pop(agent.trace_id, None)  # the run is over
        return agent_span(agent, end_at, outcome, steps, Usage(tin, tout), events)

    def _inputs(self, trace_id: int, n: int, new: New | None) -> Sequence[Message]:
        """The first ``n`` messages of the run's history, ``new`` added to those kept (a
        call whose facts were lost leaves a gap: those messages are not shown)."""
        history = self._histories.get(trace_id)
        if history is None:
            if len(self._histories) >= _KEPT:  # runs whose end never came: the oldest
                del self._histories[next(iter(self._histories))]
            history = self._histories[trace_id] = []
        if new is not None:
            first, messages = new
            if first > len(history):
                history.extend([None] * (first - len(history)))
            history[first : first + len(messages)] = messages
        return [m for m in history[:n] if m is not None]
