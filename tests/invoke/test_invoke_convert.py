"""Typed histories to provider shapes: always valid, metadata never sent."""

from __future__ import annotations

import json
from typing import cast

from hypothesis import given

from four import Assistant, Message, System, ToolCall, ToolResult, Usage, User
from four.invoke import BASH_TOOL, to_chat, to_responses_input
from four.invoke._convert import responses_tool, tool_name, with_bash
from tests._server import JSON, openai_history_problems, responses_input_problems
from tests.invoke._support import histories


@given(histories())
def test_chat_shape_is_a_valid_openai_history(history: list[Message]) -> None:
    assert openai_history_problems(cast(list[JSON], to_chat(history))) == []


@given(histories())
def test_responses_shape_pairs_every_call(history: list[Message]) -> None:
    assert responses_input_problems(cast(list[JSON], to_responses_input(history))) == []


def test_metadata_and_reasoning_are_never_sent() -> None:
    reply = Assistant(
        "text",
        (ToolCall("c1", "bash", "{}"),),
        reasoning="SECRET-REASONING",
        finish_reason="tool_calls",
        usage=Usage(1, 2, 0.5),
        model="MODEL-NAME",
    )
    history: list[Message] = [User("q"), reply, ToolResult("c1", "out")]
    for shape in (to_chat(history), to_responses_input(history)):
        text = json.dumps(shape)
        for leaked in ("SECRET-REASONING", "MODEL-NAME", "finish_reason", "usage", "0.5"):
            assert leaked not in text


def test_cache_control_uses_at_most_three_breakpoints() -> None:
    history: list[Message] = [System("s"), User("t"), Assistant("a"), User("b"), Assistant("c")]
    marked = [m for m in to_chat(history, cache_control=True) if isinstance(m["content"], list)]
    assert [m["role"] for m in marked] == ["system", "user", "assistant"]
    assert to_chat(history) == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "t"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
    ]


def test_tool_shapes() -> None:
    flat = responses_tool(BASH_TOOL)
    assert flat["name"] == "bash" and flat["type"] == "function" and "function" not in flat
    assert tool_name(flat) == tool_name(BASH_TOOL) == "bash"
    mine: dict[str, JSON] = {"type": "function", "function": {"name": "bash", "parameters": {}}}
    assert with_bash([mine]) == (mine,)
    assert with_bash([]) == (BASH_TOOL,)
