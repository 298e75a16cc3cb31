"""The live view: a watch that hears the loop (``four.types.Event``) and sends each step
as a span as soon as it is done; its trace and span ids go into the run's trajectory."""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping

from four._checked import checked
from four._events import ActionRan, Event, Judged, ModelCalled, RunBegan, RunEnded
from four._outcomes import Outcome
from four._types import JSON, ExecutionError, ModelError, Observation, RunInfo, Watch
from four.otel._metrics import Metrics
from four.otel._send import Sender
from four.otel._spans import (
    SEMCONV,
    Agent,
    Chat,
    SpanEvent,
    Tool,
    agent_of,
    agent_span,
    chat_span,
    evaluations,
    tool_span,
)

log = logging.getLogger("four.otel")


class OtelWatch:
    """One run's spans (see ``otel_watch``). ``then`` is the watch it stands in front
    of (a batch's supervisor...): asked whether to stop, told of each beat."""

    __slots__ = (
        "_agent", "_entries", "_events", "_judged", "_tools", "content", "metrics", "sender",
        "then",
    )  # fmt: skip

    @checked
    def __init__(
        self,
        sender: Sender,
        content: bool = False,
        then: Watch | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.sender, self.content, self.then, self.metrics = sender, content, then, metrics
        self._agent: Agent | None = None
        self._entries: list[JSON] = []  # what the trajectory keeps: ids and times
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
                "spans": list(self._entries),
            }
        }

    def _hear(self, event: Event) -> None:
        if isinstance(event, RunBegan):
            self._begin(event.info)
            return
        agent = self._agent
        if agent is None:
            return
        if isinstance(event, ModelCalled):
            reply, span_id = event.reply, _span_id()
            start, end = _since(agent, event.started), _since(agent, event.ended)
            entry: dict[str, JSON] = {"op": "chat", "id": f"{span_id:016x}", "t": [start, end]}
            inputs = event.history if self.content else ()
            if isinstance(reply, ModelError):
                entry.update(at=len(event.history), error=reply.kind.value, detail=reply.message)
                chat = Chat(span_id, agent.started + start, agent.started + end, None,
                            reply.kind.value, reply.message, inputs)  # fmt: skip
            else:
                entry["at"] = len(event.history)
                self._tools = {c.id: c.name for c in reply.tool_calls}
                chat = Chat(span_id, agent.started + start, agent.started + end, reply,
                            inputs=inputs)  # fmt: skip
            self._entries.append(entry)
            span = chat_span(agent, chat)
            self.sender.put(span)
            if self.metrics is not None:
                self.metrics.chat(span)
        elif isinstance(event, ActionRan):
            self._ran(agent, event)
        elif isinstance(event, Judged):
            log_ = event.record.get("log")
            verdicts = log_ if isinstance(log_, list) else []
            new, self._judged = verdicts[self._judged :], len(verdicts)
            start, end = _since(agent, event.started), _since(agent, event.ended)
            if new:
                self._entries.append({"op": "evaluate", "t": [start, end], "log": len(new)})
                self._events.extend(evaluations(new, agent.started + end))
        elif isinstance(event, RunEnded):
            stats = event.stats
            end = agent.started + _since(agent, stats.ended_at)
            self.sender.put(
                agent_span(agent, end, event.outcome.text, stats.steps, stats.usage, self._events)
            )

    def _begin(self, info: RunInfo) -> None:
        trace_id, span_id = random.getrandbits(128) or 1, _span_id()
        self._agent = agent_of(info.components, info.started_at, trace_id, span_id, self.content)
        self._entries, self._events, self._judged, self._tools = [], [], 0, {}

    def _ran(self, agent: Agent, event: ActionRan) -> None:
        action, seen, span_id = event.action, event.result, _span_id()
        start, end = _since(agent, event.started), _since(agent, event.ended)
        entry: dict[str, JSON] = {"op": "execute_tool", "id": f"{span_id:016x}", "t": [start, end]}
        answered = action.call_id is not None or isinstance(seen, Observation)
        if answered:  # the answer goes into the history there
            entry["at"] = event.position
        else:
            entry["command"] = action.command
        returncode, output, error, detail = None, None, None, ""
        if isinstance(seen, Observation):
            returncode, output = seen.returncode, seen.content
            if seen.timed_out:
                error, detail = "timeout", "the command timed out"
        elif isinstance(seen, ExecutionError):
            error, detail = "execution_error", seen.message
        else:  # Submitted
            output = seen.output if answered else None
        if error is not None:
            entry.update(error=error, detail=detail)
        name = self._tools.get(action.call_id, "bash") if action.call_id else "bash"
        tool = Tool(
            span_id, agent.started + start, agent.started + end, action.command,
            action.call_id, name, returncode, output if answered else None, error, detail,
        )  # fmt: skip
        self._entries.append(entry)
        self.sender.put(tool_span(agent, tool))


def _since(agent: Agent, t: float) -> float:
    """Seconds since the run began, to the microsecond: as kept, so as sent again."""
    return round(t - agent.started, 6)


def _span_id() -> int:
    return random.getrandbits(64) or 1
