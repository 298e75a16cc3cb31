"""Our typed messages to provider request bodies, in one place. An assistant's ``usage``,
``finish_reason``, ``model`` and ``reasoning`` are never sent; thinking blocks and reasoning
items go back as they came, in order, so a provider can check its own signatures."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

from four._checked import checked
from four._types import JSON, Assistant, Message, System, ToolResult, User

JSONDict: TypeAlias = dict[str, JSON]

_EPHEMERAL: JSONDict = {"type": "ephemeral"}

BASH_TOOL: Mapping[str, JSON] = {
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
"""The default tool of the tool-call invokes (chat-completions shape)."""


@checked
def to_chat(
    messages: Sequence[Message], cache_control: bool = False, thinking: bool = True
) -> list[JSONDict]:
    """A history as chat-completions ``messages`` (OpenAI's shape; litellm converts it),
    with Anthropic cache breakpoints if ``cache_control`` and thinking blocks if ``thinking``.

    >>> to_chat([System("be brief"), User("hi")])
    [{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'hi'}]
    """
    out = _items(
        messages,
        lambda m: [_assistant(m, thinking)],
        lambda r: {"role": "tool", "tool_call_id": r.tool_call_id, "content": r.content},
    )
    if cache_control:
        _mark_cache(out)
    return out


def _assistant(message: Assistant, thinking: bool) -> JSONDict:
    content = message.content or (None if message.tool_calls else "")  # null beside calls
    out: JSONDict = {"role": "assistant", "content": content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if thinking and message.thinking:
        out["thinking_blocks"] = [dict(block) for block in message.thinking]
    return out


def _mark_cache(out: list[JSONDict]) -> None:
    """Anthropic allows four breakpoints: the system prompt and the last two texts use three."""
    texts = [
        m for m in out if m["role"] != "system" and isinstance(m["content"], str) and m["content"]
    ]
    system = [m for m in out if m["role"] == "system"][:1]
    for message in [*texts[-2:], *system]:
        part = {"type": "text", "text": message["content"], "cache_control": dict(_EPHEMERAL)}
        message["content"] = [part]


@checked
def to_responses_input(messages: Sequence[Message], reasoning_items: bool = True) -> list[JSONDict]:
    """A history as Responses-API ``input`` items (docs/components.md has the mapping).

    >>> from four._types import ToolCall
    >>> [i.get("type", i.get("role")) for i in to_responses_input(
    ...     [User("hi"), Assistant("", (ToolCall("c1", "bash", "{}"),)), ToolResult("c1", "ok")])]
    ['user', 'function_call', 'function_call_output']
    """
    return _items(
        messages,
        lambda m: _output_items(m, reasoning_items),
        lambda r: {"type": "function_call_output", "call_id": r.tool_call_id, "output": r.content},
    )


def _output_items(message: Assistant, reasoning_items: bool) -> list[JSONDict]:
    out = [dict(i) for i in message.thinking if reasoning_items and i.get("type") == "reasoning"]
    if message.content:
        out.append({"role": "assistant", "content": message.content})
    out.extend(
        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
        for c in message.tool_calls
    )
    return out


def _items(
    messages: Sequence[Message],
    assistant: Callable[[Assistant], list[JSONDict]],
    result: Callable[[ToolResult], JSONDict],
) -> list[JSONDict]:
    """``messages`` as a provider's items: system and user turns as both APIs take them (an
    empty system prompt left out), assistant turns and tool results as ``assistant`` and
    ``result`` make them."""
    out: list[JSONDict] = []
    for message in messages:
        if isinstance(message, ToolResult):
            out.append(result(message))
        elif isinstance(message, Assistant):
            out.extend(assistant(message))
        elif isinstance(message, User) or message.content:
            role = "system" if isinstance(message, System) else "user"
            out.append({"role": role, "content": message.content})
    return out


def responses_tool(tool: Mapping[str, JSON]) -> JSONDict:
    """A chat-completions tool definition in the Responses API's flat shape (others unchanged).

    >>> responses_tool(BASH_TOOL)["name"]
    'bash'
    """
    function = tool.get("function")
    if tool.get("type") == "function" and isinstance(function, dict):
        return {"type": "function", **function}
    return dict(tool)


def tool_name(tool: Mapping[str, JSON]) -> str:
    """The name of a tool definition in either shape ('' if it has none)."""
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else ""


def with_bash(tools: Sequence[Mapping[str, JSON]]) -> tuple[Mapping[str, JSON], ...]:
    """The caller's tools, plus ``BASH_TOOL`` unless one of them is already named bash."""
    if any(tool_name(t) == "bash" for t in tools):
        return tuple(tools)
    return (BASH_TOOL, *tools)
