"""V1 for MCP tools beside another parser's actions (the shell's).

A reply's tool calls of MCP tools (tool-call mode), or its ``<tool_call>`` blocks (text
mode: ``{"name": ..., "arguments": {...}}`` between ``<tool_call>`` and
``</tool_call>``, the form Qwen and Hermes models are trained on), become
``ToolAction``s, their arguments checked against the tool's input schema first; the
rest of the reply is read by the base parser (``regex_parse``, ``toolcall_parse``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._types import (
    JSON,
    Action,
    Assistant,
    FormatError,
    Parse,
    Rejected,
    Reply,
    Submitted,
    ToolCall,
)
from four.domains.mcp._tools import McpTool, ToolAction, usage
from four.invoke._chat import to_json
from four.parse import fenced_blocks
from four.parse._toolcall import arguments_of

_CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"^\s*(```|~~~)[^\n]*\n(.*?)\n?\s*(```|~~~)\s*$", re.DOTALL)


class Catalog(Protocol):
    """What the parser asks of the tools (``McpEnv`` is one)."""

    @property
    def tools(self) -> tuple[McpTool, ...]: ...

    def tool(self, name: str) -> McpTool | None: ...

    def problem(self, name: str, arguments: Mapping[str, JSON]) -> str | None: ...


@dataclass(frozen=True, slots=True)
class McpParse:
    """V1 for MCP tool calls, and ``base`` for the rest. See ``mcp_parse``."""

    base: Parse
    catalog: Catalog = field(repr=False)
    names: tuple[str, ...] = ()

    def __call__(
        self, reply: Reply, /
    ) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        if reply.tool_calls:
            return Success([read for call in reply.tool_calls for read in self._call(call)])
        found = _text_calls(reply.content)
        if isinstance(found, str):
            return Failure(FormatError(f"{found}\n\n{self._how()}"))
        if not found:
            return self._base(reply)
        actions: list[Action | Rejected] = []
        for segment, body in found:
            if "```" in segment or "~~~" in segment:
                read = self.base(Assistant(segment))
                if isinstance(read, Success):
                    actions.extend(read.unwrap())
                elif isinstance(problem := read.failure(), FormatError):
                    return Failure(FormatError(f"{problem.feedback}\n\n{self._how()}"))
            if body is not None:
                action = self._text_call(body)
                if isinstance(action, str):
                    return Failure(FormatError(f"{action}\n\n{self._how()}"))
                actions.append(action)
        return Success(actions)

    def _base(self, reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        read = self.base(reply)
        if isinstance(read, Failure) and isinstance(problem := read.failure(), FormatError):
            return Failure(FormatError(f"{problem.feedback}\n\n{self._how()}"))
        return read

    def _how(self) -> str:
        return (
            f"{usage(self.catalog.tools)} In a text reply, call one with a block "
            '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>.'
        )

    def _call(self, call: ToolCall) -> Sequence[Action | Rejected]:
        """One tool call: an MCP tool's (checked), else the base parser's."""
        if self.catalog.tool(call.name) is None:
            own = getattr(self.base, "tool", None)  # the base parser's tool (bash)
            if own is None or call.name == own:
                read = self.base(Assistant("", (call,)))
                done: Sequence[Action | Rejected] = read.value_or(())
                if done:
                    return done
            return [Rejected(call.id, self._unknown(call.name))]
        arguments = arguments_of(call.arguments)
        if isinstance(arguments, str):
            return [Rejected(call.id, f"{arguments} Nothing was sent.")]
        data: Mapping[str, JSON] = {k: to_json(v) for k, v in arguments.items()}
        problem = self.catalog.problem(call.name, data)
        if problem is not None:
            return [Rejected(call.id, problem)]
        return [ToolAction(call_id=call.id, tool=call.name, arguments=data)]

    def _text_call(self, body: str) -> ToolAction | str:
        """A ``<tool_call>`` block's call, or why it cannot be sent."""
        text = body.strip()
        fenced = _FENCE.match(text)
        if fenced is not None:
            text = fenced.group(2)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return f"A <tool_call> block is not valid JSON ({exc.msg} at character {exc.pos}); nothing was run."
        except RecursionError:
            return "A <tool_call> block is nested too deeply to read; nothing was run."
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            return 'A <tool_call> block must be a JSON object with a "name"; nothing was run.'
        name: str = value["name"]
        raw = value.get("arguments", value.get("parameters", {}))
        # decoded with the block: back to the JSON text a call's arguments are
        arguments = arguments_of(
            raw if isinstance(raw, str) else json.dumps({} if raw is None else raw)
        )
        if isinstance(arguments, str):
            return f"In the call of {name}: {arguments} Nothing was run."
        if self.catalog.tool(name) is None:
            return self._unknown(name)
        data: Mapping[str, JSON] = {k: to_json(v) for k, v in arguments.items()}
        problem = self.catalog.problem(name, data)
        if problem is not None:
            return problem
        return ToolAction(tool=name, arguments=data)

    def _unknown(self, name: str) -> str:
        base = getattr(self.base, "tool", None)
        offered = [*([base] if isinstance(base, str) else []), *self.names]
        return f"There is no tool named {name!r}; nothing was run. The tools: {', '.join(offered)}."


def _text_calls(content: str) -> list[tuple[str, str | None]] | str:
    """The reply cut at its ``<tool_call>`` blocks outside code fences: (text before,
    the block's body) pairs, the last with None for the text after the last block; an
    empty list for a reply without any; a str saying what is wrong with an unclosed one."""
    if "<tool_call>" not in content:
        return []
    lines = content.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    fenced = [(starts[b.line - 1], starts[min(b.last, len(lines))]) for b in fenced_blocks(content)]
    pieces: list[tuple[str, str | None]] = []
    at = 0
    for match in _CALL.finditer(content):
        if any(lo <= match.start() < hi for lo, hi in fenced):
            continue  # a tag inside a code block is text (a heredoc, say), never a call
        if not match.group(2):
            return (
                "A <tool_call> block is never closed (no </tool_call> after it); nothing was run."
            )
        pieces.append((content[at : match.start()], match.group(1)))
        at = match.end()
    if not pieces:
        return []
    pieces.append((content[at:], None))
    return pieces


def mcp_parse(catalog: Catalog, base: Parse) -> McpParse:
    """V1 that reads calls of ``catalog``'s MCP tools (an ``McpEnv``), and the rest of a
    reply with ``base`` (``regex_parse()`` in text mode, ``toolcall_parse()`` with tool
    calls).

    A call of an MCP tool becomes a ``ToolAction`` once its arguments fit the tool's
    input schema; otherwise it is not sent, and the model reads why: as the call's
    result (``Rejected``) in tool-call mode, as a format error in text mode, where a
    call is a block ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
    outside code fences. A reply's text-mode calls and shell blocks run in the order
    they are written. A reply with no call of either kind is ``base``'s to judge
    (a submission, or a format error that also names the MCP tools).

    >>> V1 = mcp_parse(env, regex_parse())  # doctest: +SKIP
    """
    check.component("mcp_parse", "base", base, "a parser (a V1, e.g. regex_parse())")
    for name in ("tools", "tool", "problem"):
        if not hasattr(catalog, name):
            raise TypeError(f"mcp_parse: catalog={catalog!r:.60} is not an McpEnv (no {name})")
    return McpParse(base, catalog, tuple(t.name for t in catalog.tools))
