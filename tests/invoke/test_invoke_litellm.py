"""litellm_invoke and litellm_toolcall_invoke over real HTTP against the loopback server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import cast

from returns.result import Failure, Success

from four import (
    Assistant,
    Finished,
    Message,
    ModelErrorKind,
    ModelFailed,
    System,
    ToolCall,
    ToolResult,
    User,
    load_trajectory,
    run,
    save_trajectory,
)
from four._describe import describe
from four.invoke import litellm_invoke, litellm_toolcall_invoke, retry_invoke
from tests._doubles import FakeEnv
from tests._server import (
    CHAT,
    JSON,
    LoopbackServer,
    call,
    chat,
    error,
    hang,
    malformed,
    openai_history_problems,
)
from tests.invoke._support import bash_parse, keep


def _all_valid(server: LoopbackServer) -> list[list[JSON]]:
    """Every request's messages, each asserted to be a valid OpenAI history."""
    histories = []
    for body in server.bodies(CHAT):
        messages = cast(list[JSON], body["messages"])
        assert openai_history_problems(messages) == [], messages
        histories.append(messages)
    return histories


def test_text_run_of_several_steps(server: LoopbackServer) -> None:
    """A text run: each request is a valid history, observations are user turns."""
    server.push(chat("$ ls"), chat("Now:\n$ cat notes"), chat("$ submit 42"))
    env = FakeEnv()
    G = litellm_invoke("openai/test-model", api_base=server.url, api_key="sk-test")
    history, outcome = run(G, bash_parse, env, keep, system="sys", prompt="task")

    assert outcome == Finished("42")
    assert env.seen == ["ls", "cat notes", "submit 42"]
    sent = _all_valid(server)
    assert len(sent) == 3
    assert sent[2] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "$ ls"},
        {"role": "user", "content": "ran ls"},
        {"role": "assistant", "content": "Now:\n$ cat notes"},
        {"role": "user", "content": "ran cat notes"},
    ]
    assert "tools" not in server.bodies()[0]
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    replies = [m for m in history if isinstance(m, Assistant)]
    assert [r.usage.total_tokens if r.usage else None for r in replies] == [15, 15, 15]
    assert all(r.finish_reason == "stop" and r.model == "test-model" for r in replies)


def test_toolcall_run_keeps_calls_in_tool_calls_and_pairs_results(server: LoopbackServer) -> None:
    """Tool calls are structured, text beside them is kept, and results pair by id."""
    server.push(
        chat("Looking first.", [call(command="ls", id="call_a")]),
        chat(None, [call(command="pwd", id="call_b"), call("bash", "not json", id="call_c")]),
        chat(None, [call(command="submit ok", id="call_d")]),
    )
    G = litellm_toolcall_invoke("openai/test-model", api_base=server.url, api_key="x")
    history, outcome = run(G, bash_parse, FakeEnv(), keep, system="sys", prompt="task")

    assert outcome == Finished("ok")
    assert history[2] == Assistant(
        "Looking first.",
        (ToolCall("call_a", "bash", '{"command": "ls"}'),),
        finish_reason="tool_calls",
        usage=history[2].usage if isinstance(history[2], Assistant) else None,
        model="test-model",
    )
    assert history[3] == ToolResult("call_a", "ran ls", "bash", "observation", 0)
    sent = _all_valid(server)
    assert sent[1][2] == {
        "role": "assistant",
        "content": "Looking first.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "ls"}'},
            }
        ],
    }
    assert sent[1][3] == {"role": "tool", "tool_call_id": "call_a", "content": "ran ls"}
    assert cast(dict[str, JSON], sent[2][4]).get("content") is None
    assert [m["tool_call_id"] for m in sent[2][5:]] == ["call_b", "call_c"]  # type: ignore[index, call-overload]
    tools = server.bodies()[0]["tools"]
    assert isinstance(tools, list) and len(tools) == 1
    assert tools[0] == {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run one shell command and see its output and exit code.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "The command to run."}},
                "required": ["command"],
            },
        },
    }


def test_callers_tools_are_kept_beside_bash(server: LoopbackServer) -> None:
    """A caller's tools are offered along with the default bash tool."""
    search: dict[str, JSON] = {
        "type": "function",
        "function": {"name": "search", "parameters": {"type": "object"}},
    }
    server.push(chat("hi"), chat("hi"))
    litellm_toolcall_invoke("openai/m", tools=[search], api_base=server.url, api_key="x")(
        [User("q")]
    )
    litellm_toolcall_invoke(
        "openai/m", tools=[search], bash_tool=False, api_base=server.url, api_key="x"
    )([User("q")])
    names = [
        [t["function"]["name"] for t in cast(list[dict[str, dict[str, str]]], b["tools"])]
        for b in server.bodies()
    ]
    assert names == [["bash", "search"], ["search"]]


def test_text_mode_ignores_tool_calls_it_did_not_offer(server: LoopbackServer) -> None:
    """Without tools offered, stray tool calls are dropped so the history stays valid."""
    server.push(chat("text", [call(command="ls")]))
    reply = litellm_invoke("openai/m", api_base=server.url, api_key="x")([User("q")]).unwrap()
    assert (reply.content, reply.tool_calls) == ("text", ())


def test_missing_tool_call_ids_get_unique_ones(server: LoopbackServer) -> None:
    """A server that omits call ids still yields a pairable history."""
    nameless = [call(command="a"), call(command="b")]
    for c in nameless:
        c["id"] = ""
    server.push(chat(None, nameless))
    reply = litellm_toolcall_invoke("openai/m", api_base=server.url, api_key="x")(
        [User("q")]
    ).unwrap()
    ids = [c.id for c in reply.tool_calls]
    assert len(set(ids)) == 2 and all(ids)


def test_reasoning_is_kept_apart_and_never_sent_or_run(server: LoopbackServer) -> None:
    """Reasoning text is stored beside the reply, not parsed, not sent back."""
    server.push(chat("$ ls", reasoning="maybe\n$ rm -rf /"), chat("DONE fine"))
    env = FakeEnv()
    history, outcome = run(
        litellm_invoke("openai/m", api_base=server.url, api_key="x"), bash_parse, env, keep
    )
    assert outcome == Finished("fine")
    assert env.seen == ["ls"]
    first = history[2]
    assert isinstance(first, Assistant) and first.reasoning == "maybe\n$ rm -rf /"
    sent = _all_valid(server)
    assert sent[1][1] == {"role": "assistant", "content": "$ ls"}


def test_cut_off_reply_becomes_feedback_not_a_command(server: LoopbackServer) -> None:
    """finish_reason=length: nothing runs, the model is told it was cut off."""
    server.push(chat("$ rm -rf /tmp/bu", finish_reason="length"), chat("$ submit short"))
    env = FakeEnv()
    history, outcome = run(
        litellm_invoke("openai/m", api_base=server.url, api_key="x"), bash_parse, env, keep
    )
    assert outcome == Finished("short")
    assert env.seen == ["submit short"]
    cut = history[2]
    assert isinstance(cut, Assistant) and cut.truncated
    feedback = _all_valid(server)[1][-1]
    assert isinstance(feedback, dict) and "cut off" in str(feedback["content"])


def test_cut_off_tool_calls_are_answered_with_feedback(server: LoopbackServer) -> None:
    """A truncated tool-call turn: each call gets the feedback as its result, none runs."""
    server.push(
        chat(None, [call("bash", '{"command": "ec', id="c1")], finish_reason="length"),
        chat(None, [call(command="submit done", id="c2")]),
    )
    env = FakeEnv()
    _, outcome = run(
        litellm_toolcall_invoke("openai/m", api_base=server.url, api_key="x"), bash_parse, env, keep
    )
    assert outcome == Finished("done")
    assert env.seen == ["submit done"]
    last = cast(dict[str, str], _all_valid(server)[1][-1])
    assert last["tool_call_id"] == "c1" and "cut off" in last["content"]


def test_429_then_200_is_retried(server: LoopbackServer) -> None:
    """A rate limit is retried after a (fake) backoff; one request per attempt."""
    server.push(error(429, "slow down", "rate_limit_error"), chat("hello"))
    waits: list[float] = []
    G = retry_invoke(
        litellm_invoke("openai/m", api_base=server.url, api_key="x"),
        sleep=waits.append,
        rng=lambda: 0.0,
    )
    assert G([User("hi")]).unwrap().content == "hello"
    assert len(server.requests) == 2
    assert waits == [0.5]


def test_503_with_retry_after_waits_that_long(server: LoopbackServer) -> None:
    """Retry-After is honoured: the wait is the server's, not the shorter backoff."""
    server.push(error(503, "busy", headers={"Retry-After": "7"}), chat("back"))
    waits: list[float] = []
    G = retry_invoke(
        litellm_invoke("openai/m", api_base=server.url, api_key="x"), sleep=waits.append
    )
    assert G([User("hi")]).unwrap().content == "back"
    assert waits == [7.0]


def test_transient_errors_exhaust_attempts_and_record_them(server: LoopbackServer) -> None:
    """After max_attempts transient failures the error says how many attempts were made."""
    server.push(*[error(500, "down")] * 3)
    G = retry_invoke(
        litellm_invoke("openai/m", api_base=server.url, api_key="x"),
        max_attempts=3,
        sleep=lambda _: None,
    )
    failure = G([User("hi")]).failure()
    assert (failure.kind, failure.status, failure.attempts) == (ModelErrorKind.SERVER, 500, 3)
    assert len(server.requests) == 3


def test_hanging_server_times_out(server: LoopbackServer) -> None:
    """The request timeout ends a call to a server that never answers."""
    server.push(hang())
    start = time.monotonic()
    result = litellm_invoke("openai/m", api_base=server.url, api_key="x", timeout=0.3)([User("hi")])
    assert isinstance(result, Failure)
    assert result.failure().kind is ModelErrorKind.TIMEOUT
    assert result.failure().kind.transient
    assert time.monotonic() - start < 3


def test_401_fails_at_once_without_retry(server: LoopbackServer) -> None:
    """Authentication errors are not retried."""
    server.push(error(401, "bad key", "invalid_request_error", code="invalid_api_key"), chat("x"))
    waits: list[float] = []
    G = retry_invoke(
        litellm_invoke("openai/m", api_base=server.url, api_key="x"), sleep=waits.append
    )
    failure = G([User("hi")]).failure()
    assert (failure.kind, failure.status, failure.attempts) == (
        ModelErrorKind.AUTHENTICATION,
        401,
        1,
    )
    assert waits == [] and len(server.requests) == 1


def test_401_ends_a_run_as_model_error(server: LoopbackServer) -> None:
    """Through run, a model error is the outcome, with its kind."""
    server.push(error(401, "bad key"))
    _, outcome = run(
        litellm_invoke("openai/m", api_base=server.url, api_key="x"), bash_parse, FakeEnv(), keep
    )
    assert isinstance(outcome, ModelFailed)
    assert outcome.text.startswith("model_error: authentication: ")


def test_malformed_json_body_is_a_transient_server_error(server: LoopbackServer) -> None:
    """A 200 whose body is not JSON is an error value (retried), not a crash."""
    server.push(malformed(), chat("fine"))
    G = litellm_invoke("openai/m", api_base=server.url, api_key="x")
    failure = G([User("hi")]).failure()
    assert failure.kind is ModelErrorKind.SERVER
    assert retry_invoke(G, sleep=lambda _: None)([User("hi")]).unwrap().content == "fine"


def test_context_window_error_is_typed_and_not_retried(server: LoopbackServer) -> None:
    """The provider's context-length error is CONTEXT_WINDOW and fails at once."""
    server.push(
        error(
            400,
            "This model's maximum context length is 8192 tokens",
            code="context_length_exceeded",
        )
    )
    G = retry_invoke(
        litellm_invoke("openai/m", api_base=server.url, api_key="x"), sleep=lambda _: None
    )
    failure = G([User("hi")]).failure()
    assert (failure.kind, failure.attempts) == (ModelErrorKind.CONTEXT_WINDOW, 1)


def test_connection_refused_is_a_connection_error() -> None:
    """Nothing listening: CONNECTION (transient), whatever litellm calls it."""
    with LoopbackServer() as gone:
        url = gone.url
    failure = litellm_invoke("openai/m", api_base=url, api_key="x", timeout=2)(
        [User("hi")]
    ).failure()
    assert failure.kind is ModelErrorKind.CONNECTION


def test_model_missing_from_price_map_costs_unknown_and_is_stored(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """Tokens are counted, cost is None (not 0, no crash), and the run's record keeps both."""
    server.push(chat("$ ls", usage=(100, 20)), chat("$ submit x", usage=(150, 30)))
    G = litellm_invoke("openai/no-such-model-anywhere", api_base=server.url, api_key="x")
    path = run(G, bash_parse, FakeEnv(), save_trajectory(tmp_path), prompt="task")
    trajectory = load_trajectory(path)
    replies = [m for m in trajectory.messages if isinstance(m, Assistant)]
    assert [r.usage.cost if r.usage else 0 for r in replies] == [None, None]
    usage = trajectory.stats.usage
    assert usage.prompt_tokens == 250 and usage.completion_tokens == 50
    assert usage.cost_unknown_calls == 2 and usage.calls == 2


def test_known_model_has_a_cost_and_prices_override_it(server: LoopbackServer) -> None:
    """litellm's price map prices known models; given prices win over it."""
    server.push(chat("a", usage=(1000, 100)), chat("b", usage=(1000, 100)))
    known = litellm_invoke("openai/gpt-4o-mini", api_base=server.url, api_key="x")([User("q")])
    priced = litellm_invoke(
        "openai/no-such-model", api_base=server.url, api_key="x", prices=(1e-6, 2e-6)
    )([User("q")])
    known_usage = known.unwrap().usage
    assert known_usage is not None and known_usage.cost is not None and known_usage.cost > 0
    priced_usage = priced.unwrap().usage
    assert priced_usage is not None and priced_usage.cost == 1000 * 1e-6 + 100 * 2e-6


def test_settings_are_described_without_secrets(server: LoopbackServer) -> None:
    """The trajectory records the settings, never the key or secret headers."""
    G = litellm_toolcall_invoke(
        "openai/m",
        api_base=server.url,
        api_key="sk-secret",
        temperature=0.5,
        extra_headers={"Authorization": "Bearer sk-other"},
    )
    text = json.dumps(describe(G))
    assert "sk-secret" not in text and "sk-other" not in text
    assert '"temperature": 0.5' in text and '"model": "openai/m"' in text
    server.push(chat("ok"))
    assert isinstance(G([User("q")]), Success)
    assert server.requests[0].headers["authorization"] == "Bearer sk-other"


def test_empty_system_message_is_not_sent(server: LoopbackServer) -> None:
    """run() starts with System(''); providers get no empty system message."""
    server.push(chat("ok"))
    litellm_invoke("openai/m", api_base=server.url, api_key="x")([System(""), User("hi")])
    assert server.bodies()[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_thinking_blocks_go_only_to_providers_that_sign_them(server: LoopbackServer) -> None:
    """An OpenAI-compatible server never sees thinking blocks unless asked to."""
    block = {"type": "thinking", "thinking": "t", "signature": "s"}
    history: list[Message] = [User("q"), Assistant("a", thinking=(block,)), User("b")]
    server.push(chat("ok"), chat("ok"))
    litellm_invoke("openai/m", api_base=server.url, api_key="x")(history)
    litellm_invoke("openai/m", api_base=server.url, api_key="x", send_thinking=True)(history)
    first, forced = (cast(list[dict[str, JSON]], b["messages"])[1] for b in server.bodies())
    assert first == {"role": "assistant", "content": "a"}
    assert forced["thinking_blocks"] == [block]
    assert litellm_invoke("anthropic/claude-x").sends_thinking
    assert litellm_invoke("claude-3-5-sonnet").sends_thinking
    assert not litellm_invoke("hosted_vllm/qwen").sends_thinking
