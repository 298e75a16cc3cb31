"""Our histories through litellm's Anthropic conversion, over HTTP to the loopback server.

litellm posts Anthropic's own format to ``{api_base}/v1/messages``; the server records
it, so these tests check what Anthropic would receive: tool_use / tool_result pairing,
thinking blocks in order, cache breakpoints.
"""

from __future__ import annotations

from typing import cast

from four import Assistant, Finished, Message, System, ToolCall, ToolResult, User, run
from four.invoke import litellm_toolcall_invoke
from tests._doubles import FakeEnv
from tests._server import JSON, MESSAGES, LoopbackServer, anthropic, anthropic_problems
from tests.invoke._support import bash_parse, keep

MODEL = "anthropic/claude-sonnet-4-5"


def test_toolcall_run_is_valid_for_anthropic(server: LoopbackServer) -> None:
    """Several steps, two calls in one turn: every request pairs tool_use with tool_result."""
    server.push(
        anthropic("Let me look.", [("toolu_1", "bash", {"command": "ls"})]),
        anthropic(
            None,
            [("toolu_2", "bash", {"command": "pwd"}), ("toolu_3", "bash", {"command": "id"})],
        ),
        anthropic(None, [("toolu_4", "bash", {"command": "submit yes"})]),
    )
    G = litellm_toolcall_invoke(MODEL, api_base=server.root, api_key="x", max_tokens=1000)
    history, outcome = run(G, bash_parse, FakeEnv(), keep, system="sys", prompt="task")

    assert outcome == Finished("yes")
    bodies = server.bodies(MESSAGES)
    assert len(bodies) == 3
    for body in bodies:
        assert anthropic_problems(body) == [], body
        assert body["system"] == [{"type": "text", "text": "sys"}]
    last = cast(list[dict[str, JSON]], bodies[2]["messages"])
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}},
    ]
    results = cast(list[dict[str, JSON]], last[4]["content"])
    assert [(r["tool_use_id"], r["content"]) for r in results] == [
        ("toolu_2", "ran pwd"),
        ("toolu_3", "ran id"),
    ]
    assert history[2] == Assistant(
        "Let me look.",
        (ToolCall("toolu_1", "bash", '{"command": "ls"}'),),
        finish_reason="tool_calls",
        usage=cast(Assistant, history[2]).usage,
        model=cast(Assistant, history[2]).model,
    )


def test_thinking_blocks_are_kept_and_sent_back_in_order(server: LoopbackServer) -> None:
    """Thinking comes back as reasoning (never content) and as blocks replayed verbatim."""
    server.push(
        anthropic(
            "ok",
            [("toolu_1", "bash", {"command": "ls"})],
            thinking=[("first thought", "sig-1"), ("second thought", "sig-2")],
        ),
        anthropic("done"),
    )
    G = litellm_toolcall_invoke(MODEL, api_base=server.root, api_key="x", max_tokens=1000)
    reply = G([User("task")]).unwrap()
    assert reply.content == "ok"
    assert reply.reasoning == "first thoughtsecond thought"
    assert [b["signature"] for b in reply.thinking] == ["sig-1", "sig-2"]

    G([User("task"), reply, ToolResult("toolu_1", "a b")])
    body = server.bodies(MESSAGES)[1]
    assert anthropic_problems(body) == []
    assistant = cast(list[dict[str, JSON]], body["messages"])[1]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "first thought", "signature": "sig-1"},
        {"type": "thinking", "thinking": "second thought", "signature": "sig-2"},
        {"type": "text", "text": "ok"},
        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}},
    ]


def test_max_tokens_stop_is_a_cut_off_reply(server: LoopbackServer) -> None:
    server.push(anthropic("$ rm -rf /tm", stop_reason="max_tokens"))
    G = litellm_toolcall_invoke(MODEL, api_base=server.root, api_key="x", max_tokens=10)
    assert G([User("task")]).unwrap().truncated


def test_cache_control_marks_system_and_last_messages(server: LoopbackServer) -> None:
    """Three breakpoints: the system prompt and the two newest texts; the rest untouched."""
    server.push(anthropic("fine"))
    G = litellm_toolcall_invoke(
        MODEL, api_base=server.root, api_key="x", max_tokens=100, cache_control=True
    )
    history: list[Message] = [
        System("sys"),
        User("task"),
        Assistant("a", (ToolCall("toolu_1", "bash", '{"command": "ls"}'),)),
        ToolResult("toolu_1", "out"),
        User("more"),
    ]
    G(history).unwrap()
    body = server.bodies(MESSAGES)[0]
    assert anthropic_problems(body) == []
    marked = str(body).count("'cache_control'")
    assert marked == 3
    assert cast(list[dict[str, JSON]], body["system"])[0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in str(cast(list[JSON], body["messages"])[0])
