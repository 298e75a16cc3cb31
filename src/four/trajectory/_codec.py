"""Messages to JSON and back, in the OpenAI chat shape plus our metadata keys."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import cast

from four._types import (
    JSON,
    Assistant,
    CycleBreak,
    Message,
    Sampling,
    System,
    ToolCall,
    ToolResult,
    Usage,
    User,
    finish_reason,
    tool_result_kind,
    user_kind,
)

JSONDict = dict[str, JSON]


def usage_to_json(usage: Usage) -> JSONDict:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost": usage.cost,
        "calls": usage.calls,
        "cost_unknown_calls": usage.cost_unknown_calls,
    }


def usage_from_json(data: Mapping[str, JSON]) -> Usage:
    cost = data.get("cost")
    return Usage(
        _int(data.get("prompt_tokens")),
        _int(data.get("completion_tokens")),
        float(cost) if isinstance(cost, int | float) else None,
        _int(data.get("calls", 1)),
        _int(data.get("cost_unknown_calls")),
    )


def cycle_break_to_json(change: CycleBreak) -> JSONDict:
    """What a cycle breaker changed in a call, as stored with its reply.

    >>> cycle_break_to_json(CycleBreak("the reply repeated", 2, (3, 4), Sampling(0.7, 9)))
    {'reason': 'the reply repeated', 'repeats': 2, 'dropped': [3, 4], 'temperature': 0.7, 'seed': 9, 'discarded': 0}
    """
    sampling = change.sampling
    return {
        "reason": change.reason,
        "repeats": change.repeats,
        "dropped": list(change.dropped),
        "temperature": None if sampling is None else sampling.temperature,
        "seed": None if sampling is None else sampling.seed,
        "discarded": change.discarded,
    }


def cycle_break_from_json(data: Mapping[str, JSON]) -> CycleBreak:
    temperature, seed = data.get("temperature"), data.get("seed")
    sampled = isinstance(temperature, int | float) or isinstance(seed, int)
    return CycleBreak(
        str(data.get("reason") or ""),
        _int(data.get("repeats")),
        tuple(i for i in _list(data.get("dropped")) if isinstance(i, int)),
        Sampling(
            float(temperature) if isinstance(temperature, int | float) else None,
            seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        )
        if sampled
        else None,
        _int(data.get("discarded")),
    )


def message_to_json(message: Message) -> JSONDict:
    """One message as a JSON object.

    >>> message_to_json(User("hi"))
    {'role': 'user', 'content': 'hi'}
    """
    if isinstance(message, Assistant):
        out: JSONDict = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ]
        if message.reasoning:
            out["reasoning"] = message.reasoning
        if message.thinking:
            out["thinking_blocks"] = [dict(b) for b in message.thinking]
        out["finish_reason"] = message.finish_reason
        if message.usage is not None:
            out["usage"] = usage_to_json(message.usage)
        if message.model:
            out["model"] = message.model
        if message.cycle_break is not None:
            out["cycle_break"] = cycle_break_to_json(message.cycle_break)
        return out
    if isinstance(message, ToolResult):
        out = {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "content": message.content,
            "kind": message.kind,
        }
    elif isinstance(message, User):
        out = {"role": "user", "content": message.content}
        if message.kind != "text":
            out["kind"] = message.kind
    else:
        return {"role": "system", "content": message.content}
    if message.returncode is not None:
        out["returncode"] = message.returncode
    if message.command is not None:
        out["command"] = message.command
    return out


def message_from_json(data: Mapping[str, JSON]) -> Message | None:
    """Read one message (ours, OpenAI's or mini-swe-agent's); None for non-messages."""
    role = data.get("role")
    content = _text(data.get("content"))
    if role == "system":
        return System(content)
    extra = data.get("extra")  # mini-swe-agent keeps the return code there
    kind = data.get("kind")
    returncode = data.get(
        "returncode", extra.get("returncode") if isinstance(extra, dict) else None
    )
    code = returncode if isinstance(returncode, int) and not isinstance(returncode, bool) else None
    recorded = data.get("command")
    command = recorded if isinstance(recorded, str) else None
    if role == "user":
        return User(content, user_kind(kind), code, command)
    if role == "tool":
        return ToolResult(
            str(data.get("tool_call_id") or ""),
            content,
            str(data.get("name") or "bash"),
            tool_result_kind(kind),
            code,
            command,
        )
    if role != "assistant":
        return None  # e.g. mini-swe-agent's final {"role": "exit"}
    usage = data.get("usage")
    thinking = data.get("thinking_blocks")
    finish = data.get("finish_reason", "stop")
    return Assistant(
        content,
        tuple(_tool_call(c) for c in _list(data.get("tool_calls"))),
        _text(data.get("reasoning") or data.get("reasoning_content")),
        tuple(cast(Mapping[str, JSON], b) for b in _list(thinking) if isinstance(b, dict)),
        finish_reason(finish),
        usage_from_json(usage) if isinstance(usage, dict) else None,
        str(data.get("model") or ""),
        cycle_break_from_json(change)
        if isinstance(change := data.get("cycle_break"), dict)
        else None,
    )


def _tool_call(data: JSON) -> ToolCall:
    if not isinstance(data, dict):
        return ToolCall("", "", "")
    function = data.get("function")
    fn = function if isinstance(function, dict) else {}
    arguments = fn.get("arguments", "")
    return ToolCall(
        str(data.get("id") or ""),
        str(fn.get("name") or ""),
        arguments if isinstance(arguments, str) else json.dumps(arguments),
    )


def _text(value: JSON) -> str:
    """Content as text: a string, or the text parts of a content list."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(part.get("text", "")) for part in value if isinstance(part, dict))
    return "" if value is None else str(value)


def _list(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def _int(value: JSON) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
