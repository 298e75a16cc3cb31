"""Runs as traces, read back from a real receiver (Arize Phoenix, see conftest.py): the
tree, the GenAI attributes, the check's verdicts as evaluation events; a receiver that
is down leaves the run as it was, with one warning."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from four import arun, local_env, regex_parse, run, save_trajectory, scripted_invoke
from four.checks import command_check, verify
from four.otel import flush, otel_watch
from four.parse import toolcall_parse
from four.trajectory import load_trajectory
from four.types import Assistant, ModelError, ModelErrorKind, ToolCall, Usage
from tests.otel.conftest import Receiver, attributes, events, nowhere, status

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _tree(spans: list[dict[str, object]]) -> tuple[dict[str, object], list[dict[str, object]]]:
    """The root span and its children, in time order (each child's parent the root)."""
    roots = [s for s in spans if not s.get("parent_span_id")]
    assert len(roots) == 1, [s["name"] for s in roots]
    root = roots[0]
    children = sorted(
        (s for s in spans if s is not root), key=lambda s: int(str(s["start_time_unix_nano"]))
    )
    assert all(s["parent_span_id"] == root["span_id"] for s in children)
    return root, children


def test_a_verified_run_is_one_trace_of_its_model_calls_and_commands(
    receiver: Receiver, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    G = scripted_invoke([
        Assistant("done", usage=Usage(120, 4), model="scripted-1"),  # claimed too soon: NO
        Assistant("```bash\necho 42 > r.txt; exit 3\n```", usage=Usage(150, 9), model="scripted-1"),
        Assistant("```bash\nsleep 5\n```", usage=Usage(170, 5), model="scripted-1"),
        Assistant("done", usage=Usage(180, 2), model="scripted-1"),  # now YES
    ])  # fmt: skip
    watch = otel_watch(receiver.url)
    path = run(
        G, regex_parse(finish_on_plain_text=True), local_env(timeout=0.5, cwd=str(work)),
        save_trajectory(tmp_path / "runs"), prompt="write 42 to r.txt", watch=watch,
        check=verify(command_check('test "$(cat r.txt)" = 42')),
    )  # fmt: skip
    assert flush(60)
    saved = load_trajectory(path)
    assert saved.outcome == "accepted"
    record = saved.stats.extra["otel"]
    assert isinstance(record, dict) and record["trace_id"] == watch.trace_id

    root, children = _tree(receiver.spans(str(watch.trace_id), 7))
    assert root["name"] == "invoke_agent four"
    assert root["span_id"] == record["span_id"]
    assert status(root)[0] == 1  # OK
    top = attributes(root)
    assert top["gen_ai.operation.name"] == "invoke_agent"
    assert top["four.outcome"] == "accepted"
    assert top["gen_ai.usage.input_tokens"] == 620 and top["gen_ai.usage.output_tokens"] == 20
    assert [s["name"] for s in children] == [
        "chat scripted-1", "chat scripted-1", "execute_tool bash", "chat scripted-1",
        "execute_tool bash", "chat scripted-1",
    ]  # fmt: skip
    first = attributes(children[0])
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "four.scripted"
    assert first["gen_ai.request.model"] == "scripted-1"
    assert first["gen_ai.usage.input_tokens"] == 120
    assert first["gen_ai.usage.output_tokens"] == 4
    assert first["gen_ai.response.finish_reasons"] == ("stop",)
    assert "gen_ai.input.messages" not in first  # contents only when asked for
    failed = attributes(children[2])
    assert failed["four.command"] == "echo 42 > r.txt; exit 3"
    assert failed["process.exit.code"] == 3
    assert "gen_ai.tool.call.result" not in failed
    slow = attributes(children[4])
    assert slow["error.type"] == "timeout" and status(children[4])[0] == 2  # ERROR
    # the check's verdicts, on the run's span: what the feedback level lets be seen
    verdicts = events(root)
    assert [name for name, _ in verdicts] == ["gen_ai.evaluation.result"] * 2
    no, yes = (attrs for _, attrs in verdicts)
    assert no["gen_ai.evaluation.score.label"] == "NO"
    assert no["gen_ai.evaluation.explanation"] == "failure 1"  # not the check's command
    assert no["gen_ai.evaluation.score.value"] == 0.0
    assert yes["gen_ai.evaluation.score.label"] == "YES"
    assert "cat r.txt" not in json.dumps(verdicts)


def test_tool_calls_and_contents_when_asked_for(receiver: Receiver, tmp_path: Path) -> None:
    call = ToolCall("call_1", "bash", json.dumps({"command": "echo hi"}))
    G = scripted_invoke([
        Assistant("", (call,), finish_reason="tool_calls", model="m"),
        ModelError(ModelErrorKind.RATE_LIMIT, "slow down", status=429),
    ])  # fmt: skip
    watch = otel_watch(receiver.url, content=True)
    run(G, toolcall_parse(), local_env(), save_trajectory(tmp_path), system="be brief",
        prompt="say hi", watch=watch)  # fmt: skip
    assert flush(60)
    root, children = _tree(receiver.spans(str(watch.trace_id), 4))
    assert attributes(root)["four.outcome"] == "model_error"
    assert status(root)[0] == 2  # ERROR
    assert [s["name"] for s in children] == ["chat m", "execute_tool bash", "chat"]
    asked = attributes(children[0])
    assert json.loads(str(asked["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "say hi"}]}
    ]
    assert json.loads(str(asked["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "be brief"}
    ]
    assert asked["gen_ai.response.finish_reasons"] == ("tool_calls",)
    tool = attributes(children[1])
    assert tool["gen_ai.tool.call.id"] == "call_1"
    assert tool["four.command"] == "echo hi"
    assert "hi" in str(tool["gen_ai.tool.call.result"])
    failed = attributes(children[2])
    assert failed["error.type"] == "rate_limit"
    assert status(children[2]) == (2, "slow down")


def test_an_async_run_is_traced_the_same_way(receiver: Receiver, tmp_path: Path) -> None:
    watch = otel_watch(receiver.url)
    G = scripted_invoke(["```bash\ntrue\n```", "done"])
    asyncio.run(arun(G, regex_parse(finish_on_plain_text=True), local_env(),
                     save_trajectory(tmp_path), prompt="go", watch=watch))  # fmt: skip
    assert flush(60)
    root, children = _tree(receiver.spans(str(watch.trace_id), 4))
    assert [s["name"] for s in children] == ["chat scripted", "execute_tool bash", "chat scripted"]
    assert attributes(root)["four.steps"] == 2


def test_a_receiver_that_is_down_leaves_the_run_as_it_was_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    closed = nowhere()
    caplog.set_level(logging.WARNING)
    paths = []
    for _ in range(3):
        watch = otel_watch(closed)
        G = scripted_invoke(["```bash\necho hi\n```", "done"])
        paths.append(run(G, regex_parse(finish_on_plain_text=True), local_env(),
                         save_trajectory(tmp_path), prompt="go", watch=watch))  # fmt: skip
    flush(60)
    assert [load_trajectory(p).outcome for p in paths] == ["exit:task_complete"] * 3
    said = [
        r for r in caplog.records if r.name.startswith("opentelemetry") or r.name == "four.otel"
    ]
    assert len(said) == 1, [r.getMessage() for r in said]
    assert said[0].getMessage().startswith("four: otel: spans lost: not taken")
    assert closed in said[0].getMessage()
    assert watch.sender.failed == 12 and watch.sender.sent == 0
