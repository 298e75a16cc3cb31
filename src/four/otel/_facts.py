"""A step as the live watch notes it, and as it crosses to the sender's process.

The run's thread only notes each step (``Note``: one tuple of the loop's event and what
it cannot read later: the history's length, for content the messages new since the last
call). The sender's feeding thread makes each note flat (``flat``: plain values, cheap to
pickle; ``Facts``), and the sender makes the span of the facts (``Maker``), away from the
run. A step's span id is not noted: it is made from the trace id and the step's index in
the run (``step_span_id``), by the sender live and by ``four export otel`` later alike.

``AgentFacts``: the trace id, the run's span id, its start, model, provider and whether
content goes out. The notes and facts of a step carry their run's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

from four._events import ActionRan
from four._types import (
    Assistant,
    ExecutionError,
    FinishReason,
    Message,
    ModelError,
    Observation,
    Reply,
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

AgentFacts: TypeAlias = tuple[int, int, float, str, str, bool]

New: TypeAlias = tuple[int, tuple[Message, ...]]
"""Messages of the history new since the run's last model call, and where they start."""

Kept: TypeAlias = tuple["str | int", ...]
"""A step as the trajectory keeps it (``stats.otel.steps``, see ``OtelWatch.record``):
``(op, start, end, at)`` (times in microseconds since the run began; ``at``: where its
message is in the history, or an unanswered action's command, or how many verdicts a
judgement gave), then, if it failed, its error's kind and detail. Plain values only:
the run keeps one a step for its trajectory at no cost to its garbage collector."""

ChatNote: TypeAlias = tuple[
    Literal["model_called"], AgentFacts, int,  # the step's index in the run
    Reply | ModelError, Kept, New | None,  # the reply, the step as kept; what is new
]  # fmt: skip
"""A model call, as the run's thread hands it to the sender."""

ToolNote: TypeAlias = tuple[
    Literal["action_ran"], AgentFacts, int,  # the step's index in the run
    ActionRan, Mapping[str, str], Kept,  # the event; the last reply's tool names, by call id
]  # fmt: skip
"""An action, as the run's thread hands it to the sender."""

ChatFacts: TypeAlias = tuple[
    Literal["chat"], AgentFacts, int, int, int,  # the step's index; start, end (us)
    str | None, str,  # a failed call: its error's kind, its message
    str, FinishReason | None, int | None, int | None,  # the reply's model, finish, tokens
    Assistant | None, int, New | None,  # with content only: the reply, what G was sent
]  # fmt: skip
"""A model call (times in microseconds since the run began)."""

ToolFacts: TypeAlias = tuple[
    Literal["execute_tool"], AgentFacts, int, int, int,  # the step's index; start, end (us)
    str, str | None, str, int | None,  # the command, its call's id, the tool's name, exit code
    str | None, str | None, str,  # its output (with content only), error's kind, detail
]  # fmt: skip
"""An action."""

RunFacts: TypeAlias = tuple[
    Literal["invoke_agent"], AgentFacts, float, str, int, int, int,  # end, outcome, steps,
    tuple[SpanEvent, ...],  # tokens in and out, the verdicts
]  # fmt: skip
"""The run, at its end."""

Note: TypeAlias = ChatNote | ToolNote
Facts: TypeAlias = ChatFacts | ToolFacts | RunFacts

_KEPT = 1024
"""Runs whose history a ``Maker`` keeps at most (for content; a run's is let go at its end)."""


def agent_facts(agent: Agent) -> AgentFacts:
    return (agent.trace_id, agent.span_id, agent.started, agent.model, agent.provider,
            agent.content)  # fmt: skip


def micros(started: float, t: float) -> int:
    """``t``, in whole microseconds since ``started``: as the trajectory keeps it."""
    return round((t - started) * 1e6)


def at(started: float, us: int) -> float:
    """The time (seconds since the epoch) of ``us`` microseconds since ``started``: the
    one expression the live spans and the exported ones are timed by."""
    return started + us / 1e6


def answer(event: ActionRan) -> tuple[bool, int | None, str | None, str | None, str]:
    """What an action came to: whether it was answered (its answer at ``position`` of
    the history), its exit code, its output, its error's kind and detail."""
    seen = event.result
    answered = event.action.call_id is not None or isinstance(seen, Observation)
    if isinstance(seen, Observation):
        if seen.timed_out:
            return answered, seen.returncode, seen.content, "timeout", "the command timed out"
        return answered, seen.returncode, seen.content, None, ""
    if isinstance(seen, ExecutionError):
        return answered, None, None, "execution_error", seen.message
    return answered, None, seen.output, None, ""  # Submitted


def flat(item: Note | Facts) -> Facts:
    """The facts of a note (plain values, to pickle); facts as they are."""
    if item[0] == "model_called":
        _, agent, k, reply, kept, new = item
        start, end, n = int(kept[1]), int(kept[2]), int(kept[3])
        if isinstance(reply, ModelError):
            return ("chat", agent, k, start, end, reply.kind.value, reply.message, "", None,
                    None, None, None, n, new)  # fmt: skip
        usage = reply.usage
        return ("chat", agent, k, start, end, None, "", reply.model, reply.finish_reason,
                None if usage is None else usage.prompt_tokens,
                None if usage is None else usage.completion_tokens,
                reply if agent[5] else None, n, new)  # fmt: skip
    if item[0] == "action_ran":
        _, agent, k, event, tools, kept = item
        action = event.action
        answered, code, output, error, detail = answer(event)
        call_id = action.call_id
        name = tools.get(call_id, "bash") if call_id else "bash"
        shown = output if answered and agent[5] else None
        return ("execute_tool", agent, k, int(kept[1]), int(kept[2]), action.command, call_id,
                name, code, shown, error, detail)  # fmt: skip
    return item


class Maker:
    """Makes the span of a note or facts (``span``, as for a saved run); with content,
    keeps each running trace's history as its model calls bring it (``New``), to show
    each call what it was sent."""

    __slots__ = ("_histories",)

    def __init__(self) -> None:
        self._histories: dict[int, list[Message | None]] = {}

    def span(self, item: Note | Facts) -> Span:
        facts = flat(item)
        agent = Agent(*facts[1])
        if facts[0] == "chat":
            _, _, k, start, end, error, detail, model, finish, tin, tout, reply, n, new = facts
            span_id, t0, t1 = (
                step_span_id(agent.trace_id, k),
                at(agent.started, start),
                at(agent.started, end),
            )
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
                step_span_id(agent.trace_id, k), at(agent.started, start), at(agent.started, end),
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
