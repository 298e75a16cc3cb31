"""http_response_invoke against the loopback server's /v1/responses."""

from __future__ import annotations

import json
import time
from typing import cast

from four import Assistant, Finished, ModelErrorKind, ToolCall, ToolResult, User, run
from four._describe import describe
from four.invoke import http_response_invoke, retry_invoke
from tests._doubles import FakeEnv
from tests._server import (
    JSON,
    RESPONSES,
    LoopbackServer,
    error,
    hang,
    malformed,
    responses,
    responses_input_problems,
)
from tests.invoke._support import bash_parse, keep


def test_toolcall_run_pairs_function_calls_and_outputs(server: LoopbackServer) -> None:
    """Each request replays calls as function_call items answered by call_id."""
    server.push(
        responses("Looking.", [("call_1", "bash", '{"command": "ls"}')], reasoning="plan: list"),
        responses(
            None,
            [("call_2", "bash", '{"command": "pwd"}'), ("call_3", "bash", '{"command": "id"}')],
        ),
        responses(None, [("call_4", "bash", '{"command": "submit fine"}')]),
    )
    G = http_response_invoke("test-model", server.url, "sk-r", max_output_tokens=512)
    history, outcome = run(G, bash_parse, FakeEnv(), keep, system="sys", prompt="task")

    assert outcome == Finished("fine")
    bodies = server.bodies(RESPONSES)
    assert len(bodies) == 3
    for body in bodies:
        assert responses_input_problems(cast(list[JSON], body["input"])) == [], body["input"]
        assert body["max_output_tokens"] == 512 and body["model"] == "test-model"
    items = cast(list[dict[str, JSON]], bodies[2]["input"])
    assert [i.get("type", i.get("role")) for i in items] == [
        "system",
        "user",
        "reasoning",
        "assistant",
        "function_call",
        "function_call_output",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert items[4] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "bash",
        "arguments": '{"command": "ls"}',
    }
    assert items[5] == {"type": "function_call_output", "call_id": "call_1", "output": "ran ls"}
    first = history[2]
    assert isinstance(first, Assistant)
    assert (first.content, first.reasoning, first.finish_reason) == (
        "Looking.",
        "plan: list",
        "tool_calls",
    )
    assert first.tool_calls == (ToolCall("call_1", "bash", '{"command": "ls"}'),)
    tools = cast(list[dict[str, JSON]], bodies[0]["tools"])
    assert tools[0]["name"] == "bash" and tools[0]["type"] == "function"
    assert server.requests[0].headers["authorization"] == "Bearer sk-r"


def test_text_reply_and_usage(server: LoopbackServer) -> None:
    server.push(responses("hello", usage=(120, 30)))
    reply = http_response_invoke("m", server.url, bash_tool=False, prices=(1e-6, 1e-6))(
        [User("hi")]
    ).unwrap()
    assert reply.content == "hello" and reply.tool_calls == () and reply.finish_reason == "stop"
    assert reply.usage is not None and reply.usage.total_tokens == 150
    assert reply.usage.cost == 150e-6
    assert "tools" not in server.bodies()[0]


def test_cost_is_unknown_without_prices(server: LoopbackServer) -> None:
    server.push(responses("hello"))
    usage = http_response_invoke("m", server.url)([User("hi")]).unwrap().usage
    assert usage is not None and usage.cost is None and usage.cost_unknown_calls == 1


def test_reasoning_items_can_stay_home(server: LoopbackServer) -> None:
    server.push(responses("a", reasoning="secret plan"), responses("b"))
    G = http_response_invoke("m", server.url, reasoning_items=False)
    first = G([User("q")]).unwrap()
    assert first.thinking and first.thinking[0]["type"] == "reasoning"
    G([User("q"), first, User("next")])
    types = [i.get("type") for i in cast(list[dict[str, JSON]], server.bodies()[1]["input"])]
    assert "reasoning" not in types


def test_incomplete_at_max_output_tokens_is_cut_off(server: LoopbackServer) -> None:
    server.push(responses("$ rm -rf /t", status="incomplete", incomplete="max_output_tokens"))
    reply = http_response_invoke("m", server.url)([User("q")]).unwrap()
    assert reply.truncated


def test_errors_are_typed_by_status_and_code(server: LoopbackServer) -> None:
    server.push(
        error(401, "bad key"),
        error(429, "slow", headers={"Retry-After": "4"}),
        error(400, "too long", code="context_length_exceeded"),
        malformed(),
        error(503, "busy"),
    )
    G = http_response_invoke("m", server.url)
    got = [G([User("q")]).failure() for _ in range(5)]
    assert [(e.kind, e.status) for e in got] == [
        (ModelErrorKind.AUTHENTICATION, 401),
        (ModelErrorKind.RATE_LIMIT, 429),
        (ModelErrorKind.CONTEXT_WINDOW, 400),
        (ModelErrorKind.SERVER, None),
        (ModelErrorKind.OVERLOADED, 503),
    ]
    assert got[0].message == "HTTP 401: bad key"
    assert got[1].retry_after == 4.0


def test_retry_then_success(server: LoopbackServer) -> None:
    server.push(error(429, "slow", headers={"Retry-After": "2"}), responses("ok"))
    waits: list[float] = []
    G = retry_invoke(http_response_invoke("m", server.url), sleep=waits.append)
    assert G([User("q")]).unwrap().content == "ok"
    assert waits == [2.0]


def test_hanging_server_times_out(server: LoopbackServer) -> None:
    server.push(hang())
    start = time.monotonic()
    failure = http_response_invoke("m", server.url, timeout=0.3)([User("q")]).failure()
    assert failure.kind is ModelErrorKind.TIMEOUT
    assert time.monotonic() - start < 3


def test_connection_refused() -> None:
    with LoopbackServer() as gone:
        url = gone.url
    failure = http_response_invoke("m", url, timeout=2)([User("q")]).failure()
    assert failure.kind is ModelErrorKind.CONNECTION


def test_described_without_the_key(server: LoopbackServer) -> None:
    G = http_response_invoke("m", server.url, "sk-hidden", temperature=0.2)
    text = json.dumps(describe(G))
    assert "sk-hidden" not in text and "_client" not in text and '"temperature": 0.2' in text
    G.close()


def test_tool_result_without_call_is_still_sent_in_order(server: LoopbackServer) -> None:
    """Conversion is faithful: the checker flags a history the loop would never build."""
    server.push(responses("x"))
    http_response_invoke("m", server.url)([User("q"), ToolResult("nope", "out")])
    items = cast(list[JSON], server.bodies()[0]["input"])
    assert responses_input_problems(items) == ["item 1: output for unknown or answered call 'nope'"]
