"""V2 over MCP: a call of a server's tool is an action, its result the observation.

``McpEnv`` holds a run's servers (started when it is made, stopped at ``close()``) and,
optionally, a shell environment for every other action, so the model has both the
bash tool and the servers' tools, and a ``--check`` command runs in the shell.
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._types import (
    JSON,
    Action,
    Closeable,
    Execute,
    ExecutionError,
    Observation,
    Submitted,
)
from four.domains.mcp._client import (
    Answered,
    Hub,
    Lost,
    Refused,
    StartError,
    TimedOut,
)
from four.domains.mcp._servers import Server, server_of
from four.domains.mcp._tools import (
    McpTool,
    ToolAction,
    Validate,
    arguments_problem,
    describe_tools,
    prefix_of,
    tool_name,
    validator,
)
from four.execute._contain import DEFAULT_LIMITS, Limits
from four.execute._output import TIMEOUT_RETURNCODE, OutputBuffer

NO_SHELL = (
    "<returncode>127</returncode>\n<output>\nThere is no shell here: only the MCP tools "
    "can be called.\n</output>"
)


@dataclass(slots=True, weakref_slot=True)
class McpEnv:
    """V2 that calls MCP servers' tools, and hands every other action to ``shell``.

    See ``mcp_env``. ``tools`` are what the servers listed when they started, named as
    the model calls them; ``protocols`` the protocol version each server speaks.
    """

    servers: tuple[Server, ...]
    shell: Execute | None = None
    timeout: float = 120.0
    start_timeout: float = 60.0
    max_output: int = 10_000
    inherit: tuple[str, ...] = ()
    limits: Limits = DEFAULT_LIMITS
    tools: tuple[McpTool, ...] = field(default=(), init=False)
    protocols: tuple[str, ...] = field(default=(), init=False)
    _hub: Hub | None = field(default=None, init=False, repr=False)
    _where: dict[str, tuple[int, McpTool]] = field(default_factory=dict, init=False, repr=False)
    _checks: dict[str, Validate] = field(default_factory=dict, init=False, repr=False)
    _finalizer: weakref.finalize | None = field(default=None, init=False, repr=False)  # type: ignore[type-arg]

    def start(self) -> None:
        """Start (or connect to) every server and list its tools; raises ``StartError``
        naming the server that could not, with every server stopped again."""
        hub = Hub(
            self.servers,
            start_timeout=self.start_timeout,
            inherit=self.inherit,
            limits=self.limits,
        )
        self._hub = hub
        self._finalizer = weakref.finalize(self, hub.close)
        prefixes: set[str] = set()
        tools: list[McpTool] = []
        for index, link in enumerate(hub.links):
            spec = link.spec
            prefix = prefix_of(spec.name or link.given_name or spec.fallback_name)
            number = 1
            unique = prefix
            while unique in prefixes:
                number += 1
                unique = f"{prefix}{number}"
            prefixes.add(unique)
            for listed in link.tools:
                name = tool_name(unique, listed.name, self._where)
                tool = McpTool(name, unique, listed.name, listed.description, listed.input_schema)
                self._where[name] = (index, tool)
                self._checks[name] = validator(listed.input_schema)
                tools.append(tool)
        self.tools = tuple(tools)
        self.protocols = tuple(link.protocol for link in hub.links)

    def tool(self, name: str) -> McpTool | None:
        """The tool the model calls ``name``, if there is one."""
        found = self._where.get(name)
        return found[1] if found is not None else None

    def problem(self, name: str, arguments: Mapping[str, JSON]) -> str | None:
        """Why a call of ``name`` with ``arguments`` cannot be sent (None: it can)."""
        tool = self.tool(name)
        if tool is None:
            return f"There is no MCP tool named {name!r}; nothing was run."
        return arguments_problem(tool, arguments, self._checks.get(name))

    def definitions(self) -> list[dict[str, JSON]]:
        """The tools as function definitions, for a tool-call G
        (``litellm_toolcall_invoke(model, tools=env.definitions())``)."""
        return [tool.definition() for tool in self.tools]

    def describe(self) -> str:
        """The tools and how to call them in a text reply, for a text-mode system prompt."""
        return describe_tools(self.tools, shell=self.shell is not None)

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        if not isinstance(action, Action):
            raise check.not_an_action("McpEnv", action)
        if isinstance(action, ToolAction):
            return self._call(action)
        if self.shell is None:
            return Success(Observation(NO_SHELL, 127))
        return self.shell(action)

    def _call(self, action: ToolAction) -> Result[Observation, Submitted | ExecutionError]:
        problem = self.problem(action.tool, action.arguments)
        if problem is not None:  # never sent: the model reads why
            return Success(Observation(f"<result>not sent</result>\n<error>{problem}</error>", 2))
        index, tool = self._where[action.tool]
        hub = self._hub
        if hub is None:
            return Failure(
                ExecutionError("the MCP servers are not running (closed, or never started)")
            )
        begin = time.monotonic()
        outcome = hub.call(index, tool.tool, action.arguments, self.timeout)
        if isinstance(outcome, Lost):
            return Failure(ExecutionError(f"MCP tool {tool.name}: {outcome.message}"))
        return Success(observe(outcome, self.max_output, time.monotonic() - begin))

    def close(self) -> None:
        """Stop the servers (every process of a stdio server), then close ``shell``."""
        try:
            if self._finalizer is not None:
                self._finalizer()  # Hub.close, once
        finally:
            if isinstance(self.shell, Closeable):
                self.shell.close()

    def __enter__(self) -> McpEnv:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def observe(
    outcome: Answered | Refused | TimedOut, max_output: int, duration: float = 0.0
) -> Observation:
    """A call's outcome as the model reads it: ``<result>`` (ok, error, timeout), notes,
    the content as ``<output>`` and the structured content, bounded to ``max_output``
    characters (head and tail) as a command's output is. Return code 0 for a result,
    1 for a tool error or a refused call, 124 for a timeout.

    >>> print(observe(Answered(("hello",)), 100).content)
    <result>ok</result>
    <output>
    hello
    </output>
    """
    lines: list[str] = []
    text = ""
    timed_out = False
    if isinstance(outcome, Answered):
        code = 1 if outcome.is_error else 0
        lines.append("<result>error</result>" if outcome.is_error else "<result>ok</result>")
        text = "\n".join(outcome.parts)
        if outcome.structured is not None:
            shown = json.dumps(outcome.structured, ensure_ascii=False, indent=1)
            if shown.strip() != text.strip():
                text += f"\n<structured_content>\n{shown}\n</structured_content>"
    elif isinstance(outcome, Refused):
        code = 1
        lines.append("<result>error</result>")
        lines.append(
            f"<warning>The server refused the call (code {outcome.code}): "
            f"{outcome.message}</warning>"
        )
    else:
        code, timed_out = TIMEOUT_RETURNCODE, True
        lines.append("<result>timeout</result>")
        lines.append(
            f"<warning>The tool gave no result within {outcome.seconds:g} s; the call was "
            "cancelled.</warning>"
        )
    buffer = OutputBuffer(max_output)
    buffer.feed(text.encode("utf-8", "replace"), True)
    shown_text, elided = buffer.render()
    if elided:
        lines.append(
            f"<warning>The result had {buffer.total} characters; {elided} in the middle are "
            "not shown.</warning>"
        )
    if shown_text or isinstance(outcome, Answered):
        body = shown_text if not shown_text or shown_text.endswith("\n") else shown_text + "\n"
        lines.append(f"<output>\n{body}</output>")
    return Observation("\n".join(lines), code, timed_out, duration)


def mcp_env(
    *servers: str | Server,
    shell: Execute | None = None,
    timeout: float = 120.0,
    start_timeout: float = 60.0,
    max_output: int = 10_000,
    inherit: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
) -> McpEnv:
    """V2 over MCP servers: starts them now, lists their tools, and calls them as actions.

    Each server is a command line (a stdio server, started here), a URL (streamable
    HTTP), or a ``StdioServer`` / ``HttpServer``. A stdio server is contained as a
    command is: its own PID namespace (it sees no other process, and nothing it starts
    outlives it), the run's ``limits``, the host environment without secrets (except the
    variables named in ``inherit``), and it dies with this process, SIGKILL included.
    Its tools are named ``<server>__<tool>`` (the server's name is the one it gives
    itself, unless given). A ``ToolAction`` calls one: its arguments are checked against
    the tool's input schema first (a mismatch is an observation, and nothing is sent),
    then the result (text; images and audio noted by type and size; structured content;
    ``isError``) is the observation, bounded to ``max_output`` characters. A call with no
    answer after ``timeout`` seconds is cancelled and observed as a timeout (124); a
    server that answers with a protocol error is observed (1); a server that dies or
    stops answering ends the run ``execution_error``. Every other action goes to
    ``shell`` (a bash environment: the model then has both), or is answered that there
    is none. ``close()`` (``run`` calls it) stops the servers, then ``shell``.

    A server that cannot start, or does not finish its handshake and tool listing within
    ``start_timeout`` seconds, raises ``StartError`` here.

    >>> env = mcp_env("python -m my_server", shell=local_env())  # doctest: +SKIP
    >>> G = litellm_toolcall_invoke(model, tools=env.definitions())  # doctest: +SKIP
    >>> run(G, mcp_parse(env, toolcall_parse()), env, ...)  # doctest: +SKIP
    """
    specs = tuple(server_of(s) for s in servers)
    if not specs:
        raise ValueError("mcp_env: give at least one server (a command line or a URL)")
    if shell is not None:
        check.component("mcp_env", "shell", shell, "an environment (a V2, e.g. local_env())")
    check.seconds("mcp_env", "timeout", timeout)
    check.seconds("mcp_env", "start_timeout", start_timeout)
    check.count("mcp_env", "max_output", max_output, minimum=0)
    check.names("mcp_env", "inherit", inherit)
    if not isinstance(limits, Limits):
        raise TypeError(f"mcp_env: limits={limits!r:.60}: give a four.execute.Limits")
    env = McpEnv(specs, shell, timeout, start_timeout, max_output, tuple(inherit), limits)
    env.start()
    return env


__all__ = ["McpEnv", "StartError", "mcp_env", "observe"]
