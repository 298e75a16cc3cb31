"""A step as the live watch notes it on the run's thread: a flat tuple of plain values
(cheap to make, and to pickle for the sender's process), made into its span later by the
sender (``span_of``), away from the run.

``AgentFacts``: the trace id, the run's span id, its start, model, provider and whether
content goes out. The facts of a step carry their run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

from four._types import Assistant, FinishReason, Message, Usage
from four.otel._spans import (
    Agent,
    Chat,
    Span,
    SpanEvent,
    Tool,
    agent_span,
    chat_span,
    tool_span,
)

AgentFacts: TypeAlias = tuple[int, int, float, str, str, bool]

ChatFacts: TypeAlias = tuple[
    Literal["chat"], AgentFacts, int, float, float,  # span id, start, end
    str | None, str,  # a failed call: its error's kind, its message
    str, FinishReason | None, int | None, int | None,  # the reply's model, finish, tokens
    Assistant | None, Sequence[Message],  # with content only: the reply, what G was sent
]  # fmt: skip
"""A model call (times in seconds since the epoch)."""

ToolFacts: TypeAlias = tuple[
    Literal["execute_tool"], AgentFacts, int, float, float,  # span id, start, end
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


def agent_facts(agent: Agent) -> AgentFacts:
    return (agent.trace_id, agent.span_id, agent.started, agent.model, agent.provider,
            agent.content)  # fmt: skip


def span_of(facts: Facts) -> Span:
    """The span the facts of one step describe (``chat_span``, ``tool_span`` or
    ``agent_span``, as for a saved run)."""
    agent = Agent(*facts[1])
    if facts[0] == "chat":
        _, _, span_id, start, end, error, detail, model, finish, tin, tout, reply, inputs = facts
        if error is not None:
            return chat_span(agent, Chat(span_id, start, end, None, error, detail, inputs))
        if reply is None:  # what the span says of a reply (without content)
            usage = None if tin is None or tout is None else Usage(tin, tout)
            reply = Assistant("", finish_reason=finish, usage=usage, model=model)
        return chat_span(agent, Chat(span_id, start, end, reply, inputs=inputs))
    if facts[0] == "execute_tool":
        _, _, span_id, start, end, command, call_id, name, code, output, error, detail = facts
        return tool_span(
            agent, Tool(span_id, start, end, command, call_id, name, code, output, error, detail)
        )
    _, _, end, outcome, steps, tin, tout, events = facts
    return agent_span(agent, end, outcome, steps, Usage(tin, tout), events)
