"""A saved run's spans: the same facts the live watch sent (``_spans``), read off the
trajectory. A run recorded with ``otel_watch`` keeps its trace and span ids and each
span's times (``stats.otel``): its spans are the live ones again. Any other run gets ids
made from its file's name (a second export gives the same ids) and the times of its
messages."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TypeAlias

import msgspec

from four._types import JSON, Assistant, Message, ToolResult, User
from four.otel._facts import OPS
from four.otel._spans import (
    Agent,
    Chat,
    Span,
    SpanEvent,
    Tool,
    agent_of,
    agent_span,
    chat_span,
    evaluations,
    step_span_id,
    tool_span,
)
from four.trajectory import Trajectory

_ACTIONS = frozenset({"observation", "submission", "error"})


def saved_spans(run: Trajectory, content: bool = False) -> list[Span]:
    """Every span of the saved ``run``, the run's own last.

    A run that never ended (a killed driver: no outcome) has its steps but no run span
    to hang them on: they come with a run span that ends at its last message, status
    ``unfinished``.
    """
    info, stats = run.info, run.stats
    started = _float(info.started_at, _float(stats.started_at, 0.0))
    record = stats.extra.get("otel")
    kept = record if isinstance(record, dict) else {}
    ids = _ids(kept)
    trace_id, span_id = ids or _made_ids(run, -1)
    agent = agent_of(info.components, started, trace_id, span_id, content)
    steps, spans_kept = kept.get("steps"), kept.get("spans")
    if ids and isinstance(steps, dict):  # as otel_watch keeps them
        entries = _of_steps(steps, trace_id)
    elif ids and isinstance(spans_kept, list):  # as it kept them before (an id a step)
        entries = [_of_entry(entry) for entry in spans_kept]
    else:
        entries = _entries_of(run)
    spans, events = _steps(agent, run.messages, entries, _log(run))
    ended = stats.ended_at
    if ended is not None:
        end = started + round(float(ended) - started, 6)
    else:  # never ended: its last message
        end = started + (run.timestamps[-1] if run.timestamps else 0.0)
    steps_run = stats.steps or sum(isinstance(m, Assistant) for m in run.messages)
    spans.append(
        agent_span(agent, end, run.outcome or "unfinished", steps_run, stats.usage.usage(), events)
    )
    return spans


Entry: TypeAlias = tuple[str, int, float, float, "int | str | None", "str | None", str]
"""A step, whichever way it was kept: what, its span's id, its times in seconds since
the run began, where its message is (or an unanswered action's command; for
``evaluate``: how many verdicts), its error's kind and detail."""

_SKIPPED: Entry = ("", 1, 0.0, 0.0, None, None, "")


def _of_steps(steps: Mapping[str, JSON], trace_id: int) -> list[Entry]:
    """The steps as ``otel_watch`` keeps them: in columns (see ``OtelWatch.record``)."""
    ops, times, where, failed = (
        steps.get("op"),
        steps.get("t"),
        steps.get("at"),
        steps.get("failed"),
    )
    if not (isinstance(ops, str) and isinstance(times, list) and isinstance(where, list)):
        return []
    errors: dict[int, tuple[str, str]] = {}
    for each in failed if isinstance(failed, list) else []:
        if isinstance(each, list) and len(each) == 3 and isinstance(each[0], int):
            errors[each[0]] = (str(each[1]), str(each[2]))
    entries: list[Entry] = []
    for i, (letter, at_) in enumerate(zip(ops, where, strict=False)):
        start, end = times[2 * i : 2 * i + 2] if len(times) >= 2 * i + 2 else (0, 0)
        if not (isinstance(start, int) and isinstance(end, int)):
            continue
        error, detail = errors.get(i, (None, ""))
        entries.append((
            OPS.get(letter, ""), step_span_id(trace_id, i), start / 1e6, end / 1e6,
            at_ if isinstance(at_, int | str) and not isinstance(at_, bool) else None,
            error, detail,
        ))  # fmt: skip
    return entries


def _of_entry(entry: JSON) -> Entry:
    """A step as kept before: ``{"op", "id", "t": [start, end], "at" | "command" | "log",
    "error", "detail"}``."""
    if not isinstance(entry, dict):
        return _SKIPPED
    op, times = entry.get("op"), entry.get("t")
    if not isinstance(op, str) or not isinstance(times, list) or len(times) != 2:
        return _SKIPPED
    error = entry.get("error")
    where = entry.get("log") if op == "evaluate" else entry.get("at", entry.get("command"))
    at_ = where if isinstance(where, int | str) and not isinstance(where, bool) else None
    return (
        op, _hex(entry.get("id")), _float(times[0], 0.0), _float(times[1], 0.0), at_,
        error if isinstance(error, str) else None, str(entry.get("detail") or ""),
    )  # fmt: skip


def _log(run: Trajectory) -> list[JSON]:
    """The verdict log as the file holds it (the evaluation events' source)."""
    verdicts = run.stats.verdicts
    return [] if verdicts is None else [msgspec.to_builtins(v) for v in verdicts.log]


def _steps(
    agent: Agent, messages: Sequence[Message], entries: Sequence[Entry], log: list[JSON]
) -> tuple[list[Span], list[SpanEvent]]:
    spans: list[Span] = []
    events: list[SpanEvent] = []
    judged = 0
    for op, span_id, t0, t1, at_, error, detail in entries:
        start, end = agent.started + t0, agent.started + t1
        where = at_ if isinstance(at_, int) and 0 <= at_ <= len(messages) else None
        if op == "chat":
            reply = messages[where] if where is not None and where < len(messages) else None
            inputs = messages[:where] if agent.content and where is not None else ()
            if error is not None:
                spans.append(
                    chat_span(agent, Chat(span_id, start, end, None, error, detail, inputs))
                )
            elif isinstance(reply, Assistant):
                spans.append(chat_span(agent, Chat(span_id, start, end, reply, inputs=inputs)))
        elif op == "execute_tool":
            command = at_ if isinstance(at_, str) else ""
            spans.append(
                tool_span(
                    agent, _tool(span_id, messages, where, command, start, end, error, detail)
                )
            )
        elif op == "evaluate":
            count = at_ if isinstance(at_, int) else 0
            events.extend(evaluations(log[judged : judged + count], end))
            judged += count
    return spans, events


def _tool(
    span_id: int,
    messages: Sequence[Message],
    where: int | None,
    command: str,
    start: float,
    end: float,
    failed: str | None,
    detail: str,
) -> Tool:
    answer = messages[where] if where is not None and where < len(messages) else None
    if isinstance(answer, ToolResult):
        output = None if answer.kind == "error" else answer.content
        return Tool(
            span_id, start, end, answer.command or "", answer.tool_call_id, answer.name,
            answer.returncode, output, failed, detail,
        )  # fmt: skip
    if isinstance(answer, User):
        return Tool(span_id, start, end, answer.command or "", None, "bash",
                    answer.returncode, answer.content, failed, detail)  # fmt: skip
    return Tool(span_id, start, end, command, None, "bash", None, None, failed, detail)


def _entries_of(run: Trajectory) -> list[Entry]:
    """A run saved without ``otel_watch``: its steps from its messages, each from the
    message before it to its own (times where the file has them), made-up ids."""
    times = run.timestamps
    first = run.info.resumed_from
    entries: list[Entry] = []
    for i, message in enumerate(run.messages):
        if i < first or i == 0:
            continue
        t0, t1 = (times[i - 1], times[i]) if len(times) == len(run.messages) else (0.0, 0.0)
        span = _made_ids(run, i)[1]
        if isinstance(message, Assistant):
            entries.append(("chat", span, t0, t1, i, None, ""))
        elif (isinstance(message, ToolResult) and message.kind in _ACTIONS) or (
            isinstance(message, User) and message.kind == "observation"
        ):
            entries.append(("execute_tool", span, t0, t1, i, None, ""))
    if log := _log(run):
        end = run.timestamps[-1] if run.timestamps else 0.0
        entries.append(("evaluate", 1, end, end, len(log), None, ""))
    return entries


def _ids(record: Mapping[str, JSON]) -> tuple[int, int] | None:
    trace, span = record.get("trace_id"), record.get("span_id")
    try:
        ids = int(str(trace), 16), int(str(span), 16)
    except ValueError:
        return None
    return ids if 0 < ids[0] < 1 << 128 and 0 < ids[1] < 1 << 64 else None


def _made_ids(run: Trajectory, index: int) -> tuple[int, int]:
    """Ids that depend only on the file's name and the step: the same on every export."""
    digest = hashlib.sha256(f"{run.path.name}\0{index}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


def _hex(value: JSON) -> int:
    try:
        return int(str(value), 16) or 1
    except ValueError:
        return 1


def _float(value: JSON, default: float) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return default
