"""The live view: a watch that hears the loop (``four.types.Event``) and sends each step
as a span as soon as it is done; its trace id and its steps' times go into the run's
trajectory. A step costs the run's thread one tuple of plain values and a few numbers
appended to the run's columns, nothing left for the garbage collector to walk.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence

from four._checked import checked
from four._outcomes import Outcome
from four._types import (
    JSON,
    Action,
    ActionRan,
    Event,
    ExecutionError,
    Judged,
    Message,
    ModelCalled,
    ModelError,
    Observation,
    Reply,
    RunBegan,
    RunEnded,
    RunInfo,
    Submitted,
    Watch,
)
from four.otel._facts import AgentFacts, ChatFacts, ToolFacts, agent_facts, answer, at, micros
from four.otel._send import Counts
from four.otel._senders import Out
from four.otel._spans import SEMCONV, Agent, SpanEvent, agent_of, evaluations

log = logging.getLogger("four.otel")

_NO_TOOLS: Mapping[str, str] = {}


class OtelWatch:
    """One run's spans (see ``otel_watch``). ``then`` is the watch it stands in front
    of (a batch's supervisor...): asked whether to stop, told of each beat."""

    __slots__ = (
        "_agent", "_at", "_events", "_facts", "_failed", "_had", "_judged", "_ops", "_times",
        "_tools", "content", "metrics", "sender", "then",
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
        self._ops: list[str] = []  # the steps, as the trajectory keeps them: a letter each,
        self._times: list[float] = []  # its start and end (the clock's),
        self._at: list[int | str] = []  # where its message is (see ``record``),
        self._failed: list[JSON] = []  # and [index, error's kind, detail] if it failed
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
        try:
            if isinstance(event, ModelCalled):
                self.model_called(event.reply, event.history, event.started, event.ended)
            elif isinstance(event, ActionRan):
                self.action_ran(
                    event.action, event.result, event.started, event.ended, event.position
                )
            elif isinstance(event, RunBegan):
                self._begin(event.info)
            elif isinstance(event, Judged):
                self._judged_now(event)
            elif isinstance(event, RunEnded):
                self._ended(event)
        except Exception as exc:  # a span lost, never a run
            self._lost(type(event).__name__, exc)

    def record(self) -> Mapping[str, JSON]:
        """The trace's ids and its steps, for the trajectory (under its seal): ``four
        export otel`` sends the saved run with them. ``steps``, a column each:
        ``op``, a letter a step (``c`` a model call, ``t`` an action, ``e`` a
        judgement); ``t``, its start and end in microseconds since the run began;
        ``at``, where its message is in the history (an action not answered: its
        command; a judgement: how many verdicts it gave); ``failed``, ``[index, error's
        kind, detail]`` for each step that failed. Step ``i``'s span id is
        ``step_span_id(trace_id, i)``."""
        agent = self._agent
        if agent is None:
            return {}
        started = agent.started
        steps: dict[str, JSON] = {
            "op": "".join(self._ops),
            "t": [round((t - started) * 1e6) for t in self._times],  # as ``micros``
            "at": list(self._at),
            "failed": list(self._failed),
        }
        return {
            "otel": {
                "semconv": SEMCONV,
                "trace_id": f"{agent.trace_id:032x}",
                "span_id": f"{agent.span_id:016x}",
                "steps": steps,
            }
        }

    def model_called(
        self, reply: Reply | ModelError, history: Sequence[Message], t0: float, t1: float
    ) -> None:
        """``ModelCalled``, its fields given as they are (``hear`` or the loop: no
        event is made for this watch)."""
        try:
            facts = self._facts
            if facts is None:
                return
            n, new, k = len(history), None, len(self._ops)
            if self.content:  # the messages not sent yet: the run's own list, copied
                had = self._had
                new, self._had = (had, tuple(history[had:n])), n
            chat: ChatFacts
            if isinstance(reply, ModelError):
                kind, message = reply.kind.value, reply.message
                self._failed.append([k, kind, message])
                chat = ("chat", facts, k, t0, t1, kind, message, "", None, None, None, None,
                        n, new)  # fmt: skip
            else:
                calls, usage = reply.tool_calls, reply.usage
                self._tools = {c.id: c.name for c in calls} if calls else _NO_TOOLS
                chat = ("chat", facts, k, t0, t1, None, "", reply.model, reply.finish_reason,
                        None if usage is None else usage.prompt_tokens,
                        None if usage is None else usage.completion_tokens,
                        reply if self.content else None, n, new)  # fmt: skip
            self._ops.append("c")  # the columns grow together, once nothing can fail
            self._times += (t0, t1)
            self._at.append(n)
            self.sender.put(chat, self.metrics)
        except Exception as exc:  # a span lost, never a run
            self._lost("ModelCalled", exc)

    def action_ran(
        self,
        action: Action,
        seen: Observation | Submitted | ExecutionError,
        t0: float,
        t1: float,
        position: int,
    ) -> None:
        """``ActionRan``, its fields given as they are (see ``model_called``)."""
        try:
            facts = self._facts
            if facts is None:
                return
            k = len(self._ops)
            answered, code, output, error, detail = answer(action, seen)
            call_id = action.call_id
            tool: ToolFacts = (
                "execute_tool", facts, k, t0, t1, action.command, call_id,
                self._tools.get(call_id, "bash") if call_id else "bash", code,
                output if answered and self.content else None, error, detail,
            )  # fmt: skip
            if error is not None:
                self._failed.append([k, error, detail])
            self._ops.append("t")
            self._times += (t0, t1)
            self._at.append(position if answered else action.command)
            self.sender.put(tool)
        except Exception as exc:  # a span lost, never a run
            self._lost("ActionRan", exc)

    def _lost(self, what: str, exc: Exception) -> None:
        self.sender.failed += 1
        log.debug("four: otel: %s not sent: %s", what, exc)

    def _judged_now(self, event: Judged) -> None:
        agent = self._agent
        log_ = event.record.get("log")
        verdicts = log_ if isinstance(log_, list) else []
        new, self._judged = verdicts[self._judged :], len(verdicts)
        if agent is not None and new:
            self._ops.append("e")
            self._times += (event.started, event.ended)
            self._at.append(len(new))
            end = at(agent.started, micros(agent.started, event.ended))
            self._events.extend(evaluations(new, end))

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
        self._facts = agent_facts(self._agent, self.metrics is not None)
        self._ops, self._times, self._at, self._failed, self._events = [], [], [], [], []
        self._judged, self._tools, self._had = 0, _NO_TOOLS, 0
