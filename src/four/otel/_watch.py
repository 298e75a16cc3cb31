"""The live view: a watch that hears the loop (``four.types.Event``) and sends each step
as a span as soon as it is done; its trace and span ids go into the run's trajectory."""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping

from four._checked import checked
from four._events import ActionRan, Event, Judged, ModelCalled, RunBegan, RunEnded
from four._outcomes import Outcome
from four._types import JSON, ModelError, RunInfo, Watch
from four.otel._facts import AgentFacts, Kept, agent_facts, answer, at, micros
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

_NO_TOOLS: Mapping[str, str] = {}


class OtelWatch:
    """One run's spans (see ``otel_watch``). ``then`` is the watch it stands in front
    of (a batch's supervisor...): asked whether to stop, told of each beat."""

    __slots__ = (
        "_agent", "_events", "_facts", "_had", "_judged", "_kept", "_tools", "content",
        "metrics", "sender", "then",
    )  # fmt: skip

    @checked
    def __init__(
        self,
        sender: Out,
        content: bool = False,
        then: Watch | None = None,
        metrics: Counts | None = None,
    ) -> None:
        self.sender, self.content, self.then, self.metrics = sender, content, then, metrics
        self._agent: Agent | None = None
        self._facts: AgentFacts | None = None  # the run's, for its steps (once it began)
        self._kept: list[Kept] = []  # the steps, as the trajectory keeps them
        self._events: list[SpanEvent] = []  # the verdicts, on the run's span
        self._judged = 0  # entries of the judge's log already sent
        self._tools: Mapping[str, str] = _NO_TOOLS  # the last reply's tool names, by call id
        self._had = 0  # messages of the history sent already (with content)

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
        # The run's thread only notes the step: one tuple, kept for the trajectory and
        # put for the sender, which makes it flat, makes its span, counts it in the
        # metrics, encodes and sends it, away from the run.
        try:
            kind = type(event)
            if kind is ModelCalled:
                self._called(event)  # type: ignore[arg-type]
            elif kind is ActionRan:
                self._ran(event)  # type: ignore[arg-type]
            else:
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
                "steps": [list(kept) for kept in self._kept],
            }
        }

    def _hear(self, event: Event) -> None:
        if isinstance(event, ModelCalled):
            self._called(event)
        elif isinstance(event, ActionRan):
            self._ran(event)
        elif isinstance(event, RunBegan):
            self._begin(event.info)
        elif isinstance(event, Judged):
            self._judged_now(event)
        elif isinstance(event, RunEnded):
            self._ended(event)

    def _called(self, event: ModelCalled) -> None:
        facts = self._facts
        if facts is None:
            return
        notes, history, reply, started = self._kept, event.history, event.reply, facts[2]
        n, new = len(history), None
        if self.content:  # the messages not sent yet: the run's own list, copied
            had = self._had
            new, self._had = (had, tuple(history[had:n])), n
        start, end = round((event.started - started) * 1e6), round((event.ended - started) * 1e6)
        if isinstance(reply, ModelError):
            kept: Kept = ("chat", start, end, n, reply.kind.value, reply.message)
        else:
            kept = ("chat", start, end, n)
            calls = reply.tool_calls
            self._tools = {c.id: c.name for c in calls} if calls else _NO_TOOLS
        self.sender.put(("model_called", facts, len(notes), reply, kept, new), self.metrics)
        notes.append(kept)

    def _ran(self, event: ActionRan) -> None:
        facts = self._facts
        if facts is None:
            return
        notes, started = self._kept, facts[2]
        start, end = round((event.started - started) * 1e6), round((event.ended - started) * 1e6)
        answered, _, _, error, detail = answer(event)
        where = event.position if answered else event.action.command
        kept: Kept = (
            ("execute_tool", start, end, where)
            if error is None
            else ("execute_tool", start, end, where, error, detail)
        )
        self.sender.put(("action_ran", facts, len(notes), event, self._tools, kept))
        notes.append(kept)

    def _judged_now(self, event: Judged) -> None:
        agent = self._agent
        log_ = event.record.get("log")
        verdicts = log_ if isinstance(log_, list) else []
        new, self._judged = verdicts[self._judged :], len(verdicts)
        if agent is not None and new:
            start, end = micros(agent.started, event.started), micros(agent.started, event.ended)
            self._kept.append(("evaluate", start, end, len(new)))
            self._events.extend(evaluations(new, at(agent.started, end)))

    def _ended(self, event: RunEnded) -> None:
        agent, facts = self._agent, self._facts
        if agent is None or facts is None:
            return
        stats = event.stats
        end = agent.started + round(stats.ended_at - agent.started, 6)
        usage = stats.usage
        self.sender.put(("invoke_agent", facts, end, event.outcome.text, stats.steps,
                         usage.prompt_tokens, usage.completion_tokens,
                         tuple(self._events)))  # fmt: skip

    def _begin(self, info: RunInfo) -> None:
        trace_id, span_id = random.getrandbits(128) or 1, random.getrandbits(64) or 1
        self._agent = agent_of(info.components, info.started_at, trace_id, span_id, self.content)
        self._facts = agent_facts(self._agent)
        self._kept, self._events, self._judged, self._tools, self._had = [], [], 0, _NO_TOOLS, 0
