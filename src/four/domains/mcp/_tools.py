"""MCP tools as the loop sees them: their names, the actions that call them, the check of
a call's arguments against a tool's input schema, and how they are offered to a model.

Nothing here talks to a server (the SDK is not imported): a tool is what its server
listed at start, and a call is checked here before anything is sent.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from four._types import JSON, Action

NAME_LIMIT = 64
"""Characters of a tool name that OpenAI, Anthropic and Gemini all accept."""

_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool of one server, as the model calls it.

    ``name`` is the server's prefix, two underscores, and the server's own tool name
    (``files__read``); ``tool`` is the name the server knows it by; ``input_schema`` is
    its JSON Schema, passed to the model as the server gave it.
    """

    name: str
    server: str
    tool: str
    description: str = ""
    input_schema: Mapping[str, JSON] = field(default_factory=dict)

    def definition(self) -> dict[str, JSON]:
        """The tool as an OpenAI-style function definition (litellm converts it for
        other providers).

        >>> McpTool("s__t", "s", "t", "Does t.").definition()["function"]["name"]
        's__t'
        """
        schema: dict[str, JSON] = dict(self.input_schema) or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description or f"The tool {self.tool!r} of {self.server}.",
                "parameters": schema,
            },
        }


@dataclass(frozen=True, slots=True)
class ToolAction(Action):
    """A call of an MCP tool: ``tool`` (the name the model used) with ``arguments``.

    ``command`` (made from the call when not given) is a shell comment naming it, so an
    environment that knows no MCP tools runs nothing and says so instead of running the
    arguments as shell.

    >>> ToolAction(tool="files__read", arguments={"path": "a.txt"}).command.splitlines()[0]
    '# files__read {"path": "a.txt"}'
    """

    command: str = ""
    call_id: str | None = None
    tool: str = ""
    arguments: Mapping[str, JSON] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.command:
            shown = json.dumps(self.arguments, ensure_ascii=False)
            object.__setattr__(
                self,
                "command",
                f"# {self.tool} {shown}\necho 'this environment cannot call MCP tools' >&2; exit 2",
            )


def prefix_of(name: str) -> str:
    """A server's name made fit to prefix tool names (letters, digits, ``_`` and ``-``).

    >>> prefix_of("my files.server"), prefix_of("...")
    ('my_files_server', 'mcp')
    """
    cleaned = _NOT_NAME.sub("_", name).strip("_")
    return cleaned[:24] or "mcp"


def tool_name(prefix: str, tool: str, taken: Iterable[str] = ()) -> str:
    """The name the model calls ``tool`` of the server ``prefix`` by: unique among
    ``taken``, at most ``NAME_LIMIT`` characters of ``[A-Za-z0-9_-]``.

    >>> tool_name("files", "read.file"), tool_name("files", "read", ["files__read"])
    ('files__read_file', 'files__read_2')
    """
    base = f"{prefix}__{_NOT_NAME.sub('_', tool).strip('_') or 'tool'}"[:NAME_LIMIT]
    seen = set(taken)
    name, number = base, 1
    while name in seen:
        number += 1
        suffix = f"_{number}"
        name = base[: NAME_LIMIT - len(suffix)] + suffix
    return name


Validate = Callable[[Mapping[str, JSON]], str | None]
"""A tool's check of arguments: None when they fit its input schema, else the problem."""


def validator(schema: Mapping[str, JSON]) -> Validate:
    """The check of arguments against ``schema`` (JSON Schema, its own draft or 2020-12).

    A schema that is not valid JSON Schema checks nothing (the server judges then).

    >>> check = validator({"type": "object", "required": ["path"]})
    >>> check({}), check({"path": "a"})
    ("'path' is a required property", None)
    """
    from jsonschema.exceptions import SchemaError, best_match
    from jsonschema.validators import validator_for

    kind = validator_for(schema)
    try:
        kind.check_schema(schema)
    except SchemaError:
        return lambda arguments: None
    checker = kind(schema)

    def check(arguments: Mapping[str, JSON]) -> str | None:
        errors = list(itertools.islice(checker.iter_errors(dict(arguments)), 5))
        if not errors:
            return None
        first = best_match(errors)  # the most telling first, then the others as found
        ordered = [first, *(e for e in errors if e is not first)] if first else errors
        said = []
        for error in ordered:
            where = "".join(f"[{p!r}]" for p in error.absolute_path)
            said.append(f"{error.message} (at arguments{where})" if where else error.message)
        return "; ".join(said)

    return check


def arguments_problem(
    tool: McpTool, arguments: Mapping[str, JSON], check: Validate | None
) -> str | None:
    """Why ``arguments`` cannot be sent to ``tool`` (as the model will read it), or None."""
    problem = check(arguments) if check is not None else None
    if problem is None:
        return None
    schema = json.dumps(tool.input_schema, ensure_ascii=False)
    return (
        f"The arguments of {tool.name} do not fit its input schema: {problem}. "
        f"Nothing was sent. Its input schema: {schema}"
    )


def describe_tools(tools: Sequence[McpTool], shell: bool = True) -> str:
    """The tools and how to call them, for the system prompt of a text-mode run.

    >>> print(describe_tools([McpTool("s__t", "s", "t", "Does t.")]).splitlines()[0])
    You can also call these tools (from MCP servers):
    """
    lines = ["You can also call these tools (from MCP servers):" if shell else "Your tools:"]
    for tool in tools:
        schema = json.dumps(tool.input_schema or {"type": "object"}, ensure_ascii=False)
        summary = " ".join(tool.description.split()) or "(no description)"
        lines.append(f"- {tool.name}: {summary}\n  input schema: {schema}")
    lines.append(
        "\nTo call one, write a block like this in your reply (one block per call; the "
        "arguments must fit the tool's input schema):\n"
        "<tool_call>\n"
        f'{{"name": "{tools[0].name if tools else "server__tool"}", "arguments": {{}}}}\n'
        "</tool_call>\n"
        "Its result comes back to you like a command's output."
    )
    return "\n".join(lines)


def usage(tools: Sequence[McpTool]) -> str:
    """One line naming the tools, for a format error's feedback."""
    names = ", ".join(t.name for t in tools) or "none"
    return f"The MCP tools: {names}."
