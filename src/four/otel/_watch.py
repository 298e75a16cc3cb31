"""The live view: a watch that hears the loop (``four.types.Event``) and sends each step
as a span as soon as it is done; its trace and span ids go into the run's trajectory."""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TypeAlias

from four._events import ActionRan, Event, Judged, ModelCalled, RunBegan, RunEnded
from four._outcomes import Outcome
from four._types import (
    JSON,
    ExecutionError,
    Message,
    ModelError,
    Observation,
    Reply,
    RunInfo,
    Watch,
)
from four.otel._metrics import Metrics
from four.otel._send import Sender
from four.otel._spans import (
    SEMCONV,
    Agent,
    Chat,
    Span,
    SpanEvent,
    Tool,
    agent_of,
    agent_span,
    chat_span,
    evaluations,
    tool_span,
)

log = logging.getLogger("four.otel")

Noted: TypeAlias = tuple[str, int, float, float, "int | str", "str | None", str]
"""A step noted for the trajectory: ``op``, span id, start and end (seconds since the
run began), where its message is (or, unanswered, its command; for ``evaluate``: how
many verdicts), the error's kind and detail (see ``_entry``)."""


class OtelWatch:
    """One run's spans (see ``otel_watch``). ``then`` is the watch it stands in front
    of (a batch's supervisor...): asked whether to stop, told of each beat."""

    __slots__ = (
        "_agent", "_entries", "_events", "_judged", "_tools", "content", "metrics", "sender",
        "then",
    )  # fmt: skip

    def __init__(
        self,
        sender: Sender,
        content: bool = False,
        then: Watch | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.sender, self.content, self.then, self.metrics = sender, content, then, metrics
        self._agent: Agent | None = None
        self._entries: list[Noted] = []  # what the trajectory keeps: ids and times
        self._events: list[SpanEvent] = []  # the verdicts, on the run's span
        self._judged = 0  # entries of the judge's log already sent
        self._tools: Mapping[str, str] = {}  # the last reply's tool names, by call id

    @property
    def trace_id(self) -> str | None:
        """The run's trace id (32 hex digits), once it has started."""
        return None if self._agent is None else f"{self._agent.trace_id:032x}"

    def beat(self) -> None:
        if self.then is not None:
            self.then.beat()

    def stopped(self) -> Outcome | None:
        return self.then.stopped() if self.then is not None else None

    def hear(self, event: Event) -> None:
        try:
            self._hear(event)
        except Exception as exc:  # a span lost, never a run
            self.sender.failed += 1
            log.debug("four: otel: %s not sent: %s", type(event).__name__, exc)

    def record(self) -> Mapping[str, JSON]:
        """The trace's ids and each span's times, for the trajectory (under its seal):
        ``four export otel`` sends the saved run with them."""
        agent = self._agent
        if agent is None:
            return {}
        return {
            "otel": {
                "semconv": SEMCONV,
                "trace_id": f"{agent.trace_id:032x}",
                "span_id": f"{agent.span_id:016x}",
                "spans": [_entry(e) for e in self._entries],
            }
        }

    def _hear(self, event: Event) -> None:
        # The run's thread only notes the step (its ids and times, for the trajectory)
        # and queues the way to make its span: the span is made, counted in the metrics,
        # encoded and sent by the sender's thread.
        if isinstance(event, RunBegan):
            self._begin(event.info)
            return
        agent = self._agent
        if agent is None:
            return
        if isinstance(event, ModelCalled):
            reply, history = event.reply, event.history
            start, end = _since(agent, event.started), _since(agent, event.ended)
            if isinstance(reply, ModelError):
                noted: Noted = ("chat", _span_id(), start, end, len(history), reply.kind.value,
                                reply.message)  # fmt: skip
            else:
                noted = ("chat", _span_id(), start, end, len(history), None, "")
                calls = reply.tool_calls
                self._tools = {c.id: c.name for c in calls} if calls else {}
            self._entries.append(noted)
            inputs = tuple(history) if self.content else ()  # the run's own list: copied
            self.sender.put(partial(_chat, agent, noted, reply, inputs, self.metrics))
        elif isinstance(event, ActionRan):
            self._ran(agent, event)
        elif isinstance(event, Judged):
            log_ = event.record.get("log")
            verdicts = log_ if isinstance(log_, list) else []
            new, self._judged = verdicts[self._judged :], len(verdicts)
            start, end = _since(agent, event.started), _since(agent, event.ended)
            if new:
                self._entries.append(("evaluate", 0, start, end, len(new), None, ""))
                self._events.extend(evaluations(new, agent.started + end))
        elif isinstance(event, RunEnded):
            stats = event.stats
            end = agent.started + _since(agent, stats.ended_at)
            self.sender.put(partial(agent_span, agent, end, event.outcome.text, stats.steps,
                                    stats.usage, tuple(self._events)))  # fmt: skip

    def _begin(self, info: RunInfo) -> None:
        trace_id, span_id = random.getrandbits(128) or 1, _span_id()
        self._agent = agent_of(info.components, info.started_at, trace_id, span_id, self.content)
        self._entries, self._events, self._judged, self._tools = [], [], 0, {}

    def _ran(self, agent: Agent, event: ActionRan) -> None:
        action, seen = event.action, event.result
        start, end = _since(agent, event.started), _since(agent, event.ended)
        answered = action.call_id is not None or isinstance(seen, Observation)
        error, detail = None, ""
        if isinstance(seen, Observation):
            if seen.timed_out:
                error, detail = "timeout", "the command timed out"
        elif isinstance(seen, ExecutionError):
            error, detail = "execution_error", seen.message
        # the answer goes into the history at its position; else the command is kept
        at = event.position if answered else action.command
        noted: Noted = ("execute_tool", _span_id(), start, end, at, error, detail)
        self._entries.append(noted)
        name = self._tools.get(action.call_id, "bash") if action.call_id else "bash"
        self.sender.put(partial(_tool, agent, noted, event, name, answered))


def _chat(
    agent: Agent,
    noted: Noted,
    reply: Reply | ModelError,
    inputs: Sequence[Message],
    metrics: Metrics | None,
) -> Span:
    """A model call's span, counted in the metrics (in the sender's thread)."""
    _, span_id, start, end, _, error, detail = noted
    started, ended = agent.started + start, agent.started + end
    if isinstance(reply, ModelError):
        chat = Chat(span_id, started, ended, None, error, detail, inputs)
    else:
        chat = Chat(span_id, started, ended, reply, inputs=inputs)
    span = chat_span(agent, chat)
    if metrics is not None:
        metrics.chat(span)
    return span


def _tool(agent: Agent, noted: Noted, event: ActionRan, name: str, answered: bool) -> Span:
    """An action's span (in the sender's thread)."""
    _, span_id, start, end, _, error, detail = noted
    action, seen = event.action, event.result
    returncode, output = None, None
    if isinstance(seen, Observation):
        returncode, output = seen.returncode, seen.content
    elif not isinstance(seen, ExecutionError):  # Submitted
        output = seen.output
    tool = Tool(
        span_id, agent.started + start, agent.started + end, action.command, action.call_id,
        name, returncode, output if answered else None, error, detail,
    )  # fmt: skip
    return tool_span(agent, tool)


def _entry(noted: Noted) -> JSON:
    """A step as the trajectory keeps it (``stats.otel.spans``): what, its span's id,
    its times since the run began, where its message is (or the command), why it
    failed."""
    op, span_id, start, end, at, error, detail = noted
    if op == "evaluate":
        return {"op": op, "t": [start, end], "log": at}
    entry: dict[str, JSON] = {"op": op, "id": f"{span_id:016x}", "t": [start, end]}
    if isinstance(at, int):
        entry["at"] = at
    else:
        entry["command"] = at
    if error is not None:
        entry.update(error=error, detail=detail)
    return entry


def _since(agent: Agent, t: float) -> float:
    """Seconds since the run began, to the microsecond: as kept, so as sent again."""
    return round(t - agent.started, 6)


def _span_id() -> int:
    return random.getrandbits(64) or 1
