"""A saved run gives the spans it gave live (ids, times, attributes, events), through the
real SDK (its in-memory exporter); a run saved without a watch gets spans from its
messages, the same ids on every export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from four import local_env, regex_parse, run, save_trajectory, scripted_invoke
from four.checks import command_check, verify
from four.otel import SEMCONV, OtelWatch
from four.otel._facts import OPS
from four.otel._saved import saved_spans
from four.otel._send import Sender
from four.parse import toolcall_parse
from four.trajectory import load_trajectory
from four.types import (
    EXIT_SIGNAL,
    Assistant,
    ModelError,
    ModelErrorKind,
    Parse,
    ToolCall,
    Usage,
)


def _shape(span: ReadableSpan) -> tuple[object, ...]:
    context, parent = span.context, span.parent
    return (
        span.name, context.trace_id, context.span_id, parent.span_id if parent else None,
        span.start_time, span.end_time, dict(span.attributes or {}),
        [(e.name, e.timestamp, dict(e.attributes or {})) for e in span.events],
        span.status.status_code, span.status.description,
    )  # fmt: skip


def _sent(sender: Sender, memory: InMemorySpanExporter) -> list[tuple[object, ...]]:
    assert sender.flush(30)
    shapes = [_shape(s) for s in memory.get_finished_spans()]
    memory.clear()
    return shapes


def _again(
    sender: Sender, memory: InMemorySpanExporter, path: Path, content: bool
) -> list[tuple[object, ...]]:
    for span in saved_spans(load_trajectory(path), content):
        sender.put(span)
    return _sent(sender, memory)


CALL = ToolCall("call_9", "bash", json.dumps({"command": "printf 'a\\nb'"}))
SCRIPTS: dict[str, tuple[list[str | Assistant | ModelError], Parse]] = {
    "text": (["```bash\necho hi\n```", "```bash\nexit 4\n```", "done"], regex_parse(finish_on_plain_text=True)),
    "submitted by a command": ([f"```bash\necho {EXIT_SIGNAL}; echo out\n```"], regex_parse()),
    "tool calls": ([Assistant("", (CALL,), finish_reason="tool_calls", usage=Usage(9, 3), model="m"),
                    Assistant("ok", usage=Usage(12, 1), model="m")], toolcall_parse()),
    "model error": (["```bash\ntrue\n```", ModelError(ModelErrorKind.SERVER, "boom", 500)],
                    regex_parse(finish_on_plain_text=True)),
    "timeout": (["```bash\nsleep 5\n```", "done"], regex_parse(finish_on_plain_text=True)),
}  # fmt: skip


@pytest.mark.parametrize("content", [False, True], ids=["no content", "content"])
@pytest.mark.parametrize("case", sorted(SCRIPTS))
def test_a_saved_run_exports_the_spans_it_sent_live(
    case: str, content: bool, tmp_path: Path
) -> None:
    memory = InMemorySpanExporter()
    sender = Sender(memory, "memory")
    replies, V1 = SCRIPTS[case]
    path = run(scripted_invoke(replies), V1, local_env(timeout=0.5), save_trajectory(tmp_path),
               system="sys", prompt="go", watch=OtelWatch(sender, content))  # fmt: skip
    live = _sent(sender, memory)
    assert len(live) >= 2
    assert _again(sender, memory, path, content) == live


def test_a_verified_run_exports_its_verdicts_as_they_were_sent(tmp_path: Path) -> None:
    memory = InMemorySpanExporter()
    sender = Sender(memory, "memory")
    work = tmp_path / "w"
    work.mkdir()
    G = scripted_invoke(["done", "```bash\necho 42 > r.txt\n```", "done"])
    path = run(G, regex_parse(finish_on_plain_text=True), local_env(cwd=str(work)),
               save_trajectory(tmp_path / "runs"), prompt="go", watch=OtelWatch(sender),
               check=verify(command_check('test "$(cat r.txt)" = 42', feedback="output")))  # fmt: skip
    live = _sent(sender, memory)
    root = live[-1]
    verdicts = root[7]
    assert isinstance(verdicts, list)
    labels = [e[2]["gen_ai.evaluation.score.label"] for e in verdicts]
    assert labels == ["NO", "YES"]
    assert _again(sender, memory, path, False) == live
    saved = load_trajectory(path).stats.extra["otel"]
    assert isinstance(saved, dict) and saved["semconv"] == SEMCONV


def test_a_run_saved_without_a_watch_gets_its_spans_from_its_messages(tmp_path: Path) -> None:
    memory = InMemorySpanExporter()
    sender = Sender(memory, "memory")
    G = scripted_invoke(["```bash\necho hi\n```", "```bash\nexit 2\n```", "done"])
    path = run(G, regex_parse(finish_on_plain_text=True), local_env(), save_trajectory(tmp_path),
               prompt="go")  # fmt: skip
    first = _again(sender, memory, path, False)
    names = [s[0] for s in first]
    assert names == ["chat scripted", "execute_tool bash", "chat scripted", "execute_tool bash",
                     "chat scripted", "invoke_agent four"]  # fmt: skip
    root = first[-1]
    assert all(s[1] == root[1] and s[3] == root[2] for s in first[:-1])  # one tree
    assert first[3][6]["process.exit.code"] == 2  # type: ignore[index]
    saved = load_trajectory(path)
    started = float(saved.info.started_at or 0.0)
    assert first[1][5] == round((started + saved.timestamps[3]) * 1e9)  # the recorded times
    assert _again(sender, memory, path, False) == first  # the same ids again


def _earlier_shape(steps: dict[str, list[object]], ids: list[str]) -> list[dict[str, object]]:
    """The steps as ``stats.otel.spans`` kept them before their ids were made from the
    trace id: an object a step, its span's id, its times in seconds."""
    failed = {f[0]: f[1:] for f in steps["failed"] if isinstance(f, list)}
    entries: list[dict[str, object]] = []
    for i, (op, at) in enumerate(zip(str(steps["op"]), steps["at"], strict=True)):
        start, end = steps["t"][2 * i : 2 * i + 2]
        assert isinstance(start, int) and isinstance(end, int)
        entry: dict[str, object] = {"op": OPS[op], "t": [start / 1e6, end / 1e6]}
        if op == "e":
            entry["log"] = at
        else:
            entry["id"] = ids[i]
            entry["at" if isinstance(at, int) else "command"] = at
        if i in failed:
            entry["error"], entry["detail"] = failed[i]
        entries.append(entry)
    return entries


def test_a_run_kept_in_the_earlier_shape_exports_the_ids_it_kept(tmp_path: Path) -> None:
    memory = InMemorySpanExporter()
    sender = Sender(memory, "memory")
    G = scripted_invoke(["```bash\necho hi\n```", "```bash\nsleep 5\n```", "done"])
    path = run(G, regex_parse(finish_on_plain_text=True), local_env(timeout=0.5),
               save_trajectory(tmp_path), prompt="go", watch=OtelWatch(sender))  # fmt: skip
    live = _sent(sender, memory)
    document = json.loads(path.read_text())
    record = document["stats"]["otel"]
    steps = record.pop("steps")
    kept_ids = [f"{i + 1:016x}" for i in range(len(steps["op"]))]  # not those the trace's make
    record["spans"] = _earlier_shape(steps, kept_ids)
    path.write_text(json.dumps(document))
    again = _again(sender, memory, path, False)
    assert [s[2] for s in again[:-1]] == [int(i, 16) for i in kept_ids]
    assert [s[:2] + s[3:] for s in again] == [s[:2] + s[3:] for s in live]  # all else as live
