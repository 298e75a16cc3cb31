"""V1 for tool-call replies: one action per good ``bash`` call, one rejection per bad one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from returns.result import Success

from four import _arguments as check
from four._checked import checked
from four._types import Action, Checked, Rejected, Reply, ToolCall
from four.execute._output import EXIT_SIGNAL
from four.parse._regex import Parsed, Rules, fenced_blocks, finish_rule


@dataclass(frozen=True, slots=True)
class ToolcallParse(Checked, Rules):
    """V1 for tool calls. See ``toolcall_parse``."""

    tool: str = "bash"
    argument: str = "command"
    finish_on_plain_text: bool = False
    exit_signal: str = EXIT_SIGNAL

    def usage(self) -> str:
        """How to call the tool, in the words the model is given."""
        return (
            f'Call the `{self.tool}` tool with arguments {{"{self.argument}": "<shell command>"}}.'
        )

    @checked
    def __call__(self, reply: Reply, /) -> Parsed:
        if reply.tool_calls:
            return Success([self._read(call) for call in reply.tool_calls])
        return self.no_action(
            reply,
            fenced_blocks(reply.content),
            "Your reply has no tool call, so nothing was run.",
            "is text, not a tool call, so it was never run",
        )

    def expected(self) -> str:
        return self.usage() + " " + finish_rule(self.exit_signal, self.finish_on_plain_text)

    def _read(self, call: ToolCall) -> Action | Rejected:
        """The action a call asks for, or why it cannot run (never an exception)."""
        if call.name != self.tool:
            return Rejected(
                call.id, f"There is no tool named {call.name!r}; nothing was run. {self.usage()}"
            )
        arguments = arguments_of(call.arguments)
        if isinstance(arguments, str):
            return Rejected(call.id, f"{arguments} Nothing was run. {self.usage()}")
        command = arguments.get(self.argument)
        if not isinstance(command, str) or not command.strip():
            got = (
                f"no {self.argument!r} key (keys: {', '.join(map(repr, arguments)) or 'none'})"
                if command is None
                else f"{self.argument!r} is {_kind(command)}, not a non-empty string"
            )
            return Rejected(call.id, f"The arguments have {got}. Nothing was run. {self.usage()}")
        return Action(command, call.id)


@checked
def arguments_of(text: str) -> Mapping[str, object] | str:
    """A tool call's arguments, JSON text (as ``ToolCall.arguments`` holds them), as a
    mapping; or, when the model wrote them wrong, the problem (as text, for the model).
    Anything but text is the caller's mistake: a ``TypeError`` naming it.

    >>> arguments_of('{"command": "ls"}')
    {'command': 'ls'}
    >>> arguments_of("[1]")
    'The arguments must be a JSON object, not a list.'
    """
    try:
        value = json.loads(text)
        if isinstance(value, str):  # JSON text encoded twice: unwrap once
            value = json.loads(value)
    except json.JSONDecodeError as exc:
        return f"The arguments are not valid JSON ({exc.msg} at character {exc.pos})."
    except RecursionError:
        return "The arguments are nested too deeply to read."
    if isinstance(value, Mapping):
        return {str(k): v for k, v in cast(Mapping[object, object], value).items()}
    return f"The arguments must be a JSON object, not {_kind(value)}."


def _kind(value: object) -> str:
    names = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__) if value is not None else "null"


def toolcall_parse(
    tool: str = "bash",
    argument: str = "command",
    *,
    finish_on_plain_text: bool = False,
    exit_signal: str = EXIT_SIGNAL,
) -> ToolcallParse:
    """V1 that reads ``reply.tool_calls``: an ``Action`` per good call of ``tool``, a
    ``Rejected`` with the error per other call (docs/components.md).

    >>> from four import Assistant, ToolCall
    >>> toolcall_parse()(Assistant("", (ToolCall("c1", "bash", '{"command": "ls"}'),))).unwrap()
    [Action(command='ls', call_id='c1')]
    """
    check.text("toolcall_parse", "tool", tool)
    check.text("toolcall_parse", "argument", argument)
    check.flag("toolcall_parse", "finish_on_plain_text", finish_on_plain_text)
    check.text("toolcall_parse", "exit_signal", exit_signal)
    return ToolcallParse(tool, argument, finish_on_plain_text, exit_signal)
