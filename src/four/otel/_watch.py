"""The live view: a watch that hears the loop (``four.types.Event``) and sends each step
as a span as soon as it is done; its trace and span ids go into the run's trajectory."""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from typing import TypeAlias

from four._events import ActionRan, Event, Judged, ModelCalled, RunBegan, RunEnded
from four._outcomes import Outcome
from four._types import (
    JSON,
    ExecutionError,
    ModelError,
    Observation,
    RunInfo,
    Watch,
)
from four.otel._facts import AgentFacts, ChatFacts, agent_facts
from four.otel._send import Counts
from four.otel._senders import Out
from four.otel._spans import (
    SEMCONV,
    Agent,
    SpanEvent,
    agent_of,
    evaluations,
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
        "_agent", "_entries", "_events", "_facts", "_judged", "_tools", "content", "metrics",
        "sender", "then",
    )  # fmt: skip

    def __init__(
        self,
        sender: Out,
        content: bool = False,
        then: Watch | None = None,
        metrics: Counts | None = None,
    ) -> None:
        self.sender, self.content, self.then, self.metrics = sender, content, then, metrics
        self._agent: Agent | None = None
        self._facts: AgentFacts = (0, 0, 0.0, "", "", False)  # the run's, for its steps
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
        # The run's thread only notes the step: its ids and times for the trajectory, and
        # its facts (plain values) for the sender, which makes the span, counts it in the
        # metrics, encodes and sends it, away from the run.
        if isinstance(event, RunBegan):
            self._begin(event.info)
            return
        agent, facts = self._agent, self._facts
        if agent is None:
            return
        if isinstance(event, ModelCalled):
            reply, history, span_id = event.reply, event.history, _span_id()
            start, end = _since(agent, event.started), _since(agent, event.ended)
            t0, t1 = agent.started + start, agent.started + end
            inputs = tuple(history) if self.content else ()  # the run's own list: copied
            if isinstance(reply, ModelError):
                kind, message = reply.kind.value, reply.message
                self._entries.append(("chat", span_id, start, end, len(history), kind, message))
                chat: ChatFacts = ("chat", facts, span_id, t0, t1, kind, message, "", None,
                                   None, None, None, inputs)  # fmt: skip
            else:
                self._entries.append(("chat", span_id, start, end, len(history), None, ""))
                calls, usage = reply.tool_calls, reply.usage
                self._tools = {c.id: c.name for c in calls} if calls else {}
                chat = ("chat", facts, span_id, t0, t1, None, "", reply.model,
                        reply.finish_reason, None if usage is None else usage.prompt_tokens,
                        None if usage is None else usage.completion_tokens,
                        reply if self.content else None, inputs)  # fmt: skip
            self.sender.put(chat, self.metrics)
        elif isinstance(event, ActionRan):
            self._ran(agent, facts, event)
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
            usage = stats.usage
            self.sender.put(("invoke_agent", facts, end, event.outcome.text, stats.steps,
                             usage.prompt_tokens, usage.completion_tokens,
                             tuple(self._events)))  # fmt: skip

    def _begin(self, info: RunInfo) -> None:
        trace_id, span_id = random.getrandbits(128) or 1, _span_id()
        self._agent = agent_of(info.components, info.started_at, trace_id, span_id, self.content)
        self._facts = agent_facts(self._agent)
        self._entries, self._events, self._judged, self._tools = [], [], 0, {}

    def _ran(self, agent: Agent, facts: AgentFacts, event: ActionRan) -> None:
        action, seen, span_id = event.action, event.result, _span_id()
        start, end = _since(agent, event.started), _since(agent, event.ended)
        answered = action.call_id is not None or isinstance(seen, Observation)
        returncode, output, error, detail = None, None, None, ""
        if isinstance(seen, Observation):
            returncode, output = seen.returncode, seen.content
            if seen.timed_out:
                error, detail = "timeout", "the command timed out"
        elif isinstance(seen, ExecutionError):
            error, detail = "execution_error", seen.message
        else:  # Submitted
            output = seen.output
        # the answer goes into the history at its position; else the command is kept
        at = event.position if answered else action.command
        self._entries.append(("execute_tool", span_id, start, end, at, error, detail))
        name = self._tools.get(action.call_id, "bash") if action.call_id else "bash"
        shown = output if answered and self.content else None
        self.sender.put(("execute_tool", facts, span_id, agent.started + start,
                         agent.started + end, action.command, action.call_id, name,
                         returncode, shown, error, detail))  # fmt: skip


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
