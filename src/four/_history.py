"""Facts about a message history that keep it valid for real providers."""

from __future__ import annotations

from collections.abc import Sequence

from four._types import Assistant, Message, ToolCall, ToolResult


def unanswered(history: Sequence[Message]) -> list[ToolCall]:
    """Tool calls of the last assistant turn that have no result yet.

    Only the last turn can be open: the loop answers every call before the next G call.

    >>> from four._types import User
    >>> unanswered([User("hi")])
    []
    """
    answered: set[str] = set()
    for message in reversed(history):
        if isinstance(message, ToolResult):
            answered.add(message.tool_call_id)
        elif isinstance(message, Assistant):
            return [call for call in message.tool_calls if call.id not in answered]
    return []
