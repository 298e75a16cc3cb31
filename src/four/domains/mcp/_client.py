"""The connections to a run's MCP servers, through the official SDK (``mcp``).

The SDK is async; a run's V2 is called plainly. So the connections live on an event
loop of their own, in one thread (an anyio blocking portal), and each call waits for
its answer there with a deadline. Each server has a task that holds its connection
open (a ``Client``, entered and left in that one task, as the SDK requires) until the
connections are closed.

A stdio server is started as a command is (``four.execute``'s containment): the first
process of a PID namespace of its own, under the run's limits, marked for this
process's tether (so it dies with this process, SIGKILL included), with the host
environment filtered of secrets except those passed by name. Its standard error is
read into a bounded tail, shown when it fails.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
import mcp_types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from four._types import JSON
from four.domains.mcp._servers import HttpServer, Server, StdioServer
from four.execute._contain import Limits, launch
from four.execute._output import command_env
from four.execute._tools import Tail
from four.invoke._chat import to_json

if TYPE_CHECKING:
    import httpx2

# The SDK logs a server's bad output with tracebacks; with no handler of the user's, they
# would reach the terminal of `four run` (the observation says what went wrong).
logging.getLogger("mcp").addHandler(logging.NullHandler())

GRACE = 5.0
"""Seconds past a call's timeout before a server that has not answered, not even with
its own timeout error, counts as lost."""

# --- what a call gave ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answered:
    """The server's result: its content as text (images and other binary parts noted by
    type and size), its structured content, and whether it is a tool error (``isError``)."""

    parts: tuple[str, ...]
    structured: JSON = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Refused:
    """The server answered the call with a JSON-RPC error (or an answer that is not MCP)."""

    code: int
    message: str


@dataclass(frozen=True, slots=True)
class TimedOut:
    """No answer within the call's timeout; the request was cancelled, the server lives."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Lost:
    """The connection is gone (the server exited or stopped answering)."""

    message: str


Outcome: TypeAlias = Answered | Refused | TimedOut | Lost


class StartError(RuntimeError):
    """A server could not be started, or did not answer its handshake and tool listing."""


# --- one server ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Listed:
    """One tool as its server listed it."""

    name: str
    description: str
    input_schema: Mapping[str, JSON]


@dataclass(slots=True)
class _Link:
    """One server's connection, held by its task on the portal's loop."""

    spec: Server
    started: threading.Event = field(default_factory=threading.Event)
    client: Client | None = None
    tools: tuple[Listed, ...] = ()
    given_name: str | None = None
    protocol: str = ""
    error: BaseException | None = None
    stop: anyio.Event | None = None
    keeper: concurrent.futures.Future[None] | None = None
    stderr: Tail | None = None
    release: Callable[[], None] | None = None

    def said(self) -> str:
        """The server's last words on standard error, for a message ("" if none)."""
        if self.stderr is None:
            return ""
        lines = [line.strip() for line in self.stderr.text(wait=0.5).splitlines()]
        text = " / ".join(line for line in lines if line)[-600:]  # one line, for one error
        return f"; its standard error ends: {text}" if text else ""


def _stdio(spec: StdioServer, inherit: Sequence[str], limits: Limits, link: _Link) -> Transport:
    """The SDK transport that starts ``spec`` contained (see the module's docstring)."""
    named = {n: os.environ[n] for n in (*inherit, *spec.inherit) if n in os.environ}
    env = command_env(env={**named, **spec.env})
    started = launch(list(spec.argv), env, limits)
    link.release = started.release
    link.stderr = Tail()
    params = StdioServerParameters(
        command=started.argv[0], args=started.argv[1:], env=started.env, cwd=spec.cwd
    )
    # the SDK hands errlog to the process as its stderr: a file descriptor serves
    return stdio_client(params, errlog=link.stderr.fd)  # type: ignore[arg-type]


async def _keep(link: _Link, inherit: Sequence[str], limits: Limits) -> None:
    """Connect, list the tools, then hold the connection until told to stop."""
    link.stop = anyio.Event()
    spec = link.spec
    try:
        async with contextlib.AsyncExitStack() as stack:
            transport: Transport
            if isinstance(spec, StdioServer):
                transport = _stdio(spec, inherit, limits, link)
            else:
                transport = streamable_http_client(
                    spec.url, http_client=await stack.enter_async_context(_http(spec))
                )
            from four import __version__

            client = Client(
                transport,
                client_info=mcp_types.Implementation(name="four", version=__version__),
            )
            await stack.enter_async_context(client)
            if link.stderr is not None:
                link.stderr.started()
            link.tools = await _list(client)
            info = client.server_info
            link.given_name = info.name if info is not None else None
            link.protocol = client.protocol_version
            link.client = client
            link.started.set()
            await link.stop.wait()
    except BaseException as exc:
        link.error = exc
        raise
    finally:
        link.client = None
        link.started.set()
        if link.stderr is not None:
            link.stderr.started()
        if link.release is not None:
            link.release()


def _http(spec: HttpServer) -> httpx2.AsyncClient:
    import httpx2

    return httpx2.AsyncClient(headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0))


async def _list(client: Client) -> tuple[Listed, ...]:
    """Every tool the server lists (all pages, at most 100 of them)."""
    found: list[Listed] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
            found.append(Listed(tool.name, tool.description or "", to_json(schema)))  # type: ignore[arg-type]
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(found)


# --- all of a run's servers ------------------------------------------------------------


class Hub:
    """A run's connections: started together, called by index, closed together."""

    def __init__(
        self,
        servers: Sequence[Server],
        *,
        start_timeout: float,
        inherit: Sequence[str],
        limits: Limits,
    ) -> None:
        self._stack = contextlib.ExitStack()
        self._lock = threading.Lock()
        self._closed = False
        self.links = [_Link(spec) for spec in servers]
        try:
            self._portal: BlockingPortal = self._stack.enter_context(
                start_blocking_portal(name="four-mcp")
            )
            for link in self.links:
                link.keeper = self._portal.start_task_soon(_keep, link, inherit, limits)
            deadline = time.monotonic() + start_timeout
            for link in self.links:
                self._started(link, deadline, start_timeout)
        except BaseException:
            self.close()
            raise

    def _started(self, link: _Link, deadline: float, timeout: float) -> None:
        if not link.started.wait(max(0.0, deadline - time.monotonic())):
            raise StartError(
                f"the MCP server {link.spec.label} did not answer its handshake and tool "
                f"listing within {timeout:g} s{link.said()}"
            )
        if link.client is None:
            raise StartError(
                f"the MCP server {link.spec.label} did not start: {_reason(link.error)}"
                f"{link.said()}"
            )

    def call(self, index: int, tool: str, arguments: Mapping[str, JSON], timeout: float) -> Outcome:
        """Call ``tool`` of the server ``index``; never raises for what the server does
        (Ctrl-C and other interrupts go on, the call cancelled)."""
        link = self.links[index]
        if link.client is None or self._closed:
            return Lost(f"the MCP server {link.spec.label} is not running{link.said()}")
        future = self._portal.start_task_soon(_call, link, tool, dict(arguments), timeout)
        try:
            outcome: Outcome = future.result(timeout + GRACE)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return Lost(
                f"the MCP server {link.spec.label} gave no answer, not even its timeout, "
                f"{timeout + GRACE:g} s after the call of {tool}{link.said()}"
            )
        except concurrent.futures.CancelledError:
            return Lost(f"the MCP server {link.spec.label} was closed during the call")
        except BaseException:
            future.cancel()
            raise
        if isinstance(outcome, Lost):
            return Lost(outcome.message + link.said())
        return outcome

    def close(self, wait: float = 10.0) -> None:
        """Stop every server (a stdio one: stdin closed, then killed with every process
        it started) and the loop; bounded by ``wait`` seconds, then abandoned (the
        tether still kills a stdio server when this process ends)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        portal = getattr(self, "_portal", None)
        keepers = [link.keeper for link in self.links if link.keeper is not None]
        if portal is not None:
            for link in self.links:
                if link.stop is not None:
                    with contextlib.suppress(Exception):
                        portal.call(link.stop.set)
            _, pending = concurrent.futures.wait(keepers, timeout=wait)
            for keeper in pending:
                keeper.cancel()
            concurrent.futures.wait(pending, timeout=wait)
        with contextlib.suppress(Exception):
            self._stack.close()


async def _call(link: _Link, tool: str, arguments: dict[str, Any], timeout: float) -> Outcome:
    client = link.client
    if client is None:
        return Lost(f"the MCP server {link.spec.label} is not running")
    try:
        result = await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
    except MCPError as exc:
        if exc.code == mcp_types.REQUEST_TIMEOUT:
            return TimedOut(timeout)
        if exc.code == mcp_types.CONNECTION_CLOSED:
            return Lost(f"the MCP server {link.spec.label} closed the connection")
        return Refused(exc.code, exc.message)
    except ValidationError as exc:
        return Refused(mcp_types.INVALID_PARAMS, f"its answer is not valid MCP: {_first(exc)}")
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        return Lost(f"the MCP server {link.spec.label} closed the connection")
    except TimeoutError:
        return TimedOut(timeout)
    except Exception as exc:  # the SDK's own checks (an output schema...): the server's fault
        return Refused(mcp_types.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
    structured = result.structured_content
    return Answered(
        tuple(_part(part) for part in result.content),
        to_json(structured) if structured is not None else None,
        bool(result.is_error),
    )


def _part(part: object) -> str:
    """One content block as the model reads it: text as it is, binary noted by size."""
    kind = getattr(part, "type", "")
    if isinstance(part, mcp_types.TextContent):
        return part.text
    if isinstance(part, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{kind}: {part.mime_type}, {_size(part.data)} bytes]"
    if isinstance(part, mcp_types.EmbeddedResource):
        resource = part.resource
        mime = resource.mime_type or "no type"
        if isinstance(resource, mcp_types.TextResourceContents):
            return f"[resource {resource.uri} ({mime})]\n{resource.text}"
        blob = getattr(resource, "blob", "")
        return f"[resource {resource.uri}: {mime}, {_size(str(blob))} bytes]"
    if isinstance(part, mcp_types.ResourceLink):
        return f"[resource link: {part.uri} ({part.name})]"
    return f"[{kind or type(part).__name__} content]"


def _size(data: str) -> int:
    """Bytes of base64 ``data`` (without decoding more than needed to know)."""
    try:
        return len(base64.b64decode(data, validate=False))
    except ValueError:
        return len(data) * 3 // 4


def _first(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc).splitlines()[0]
    error = errors[0]
    where = ".".join(str(p) for p in error.get("loc", ()))
    return f"{where}: {error.get('msg', '')}" if where else str(error.get("msg", ""))


def _reason(exc: BaseException | None) -> str:
    """The first real error inside ``exc`` (exception groups unwrapped), in a few words."""
    for leaf in _leaves(exc):
        if isinstance(leaf, MCPError) and leaf.code == mcp_types.CONNECTION_CLOSED:
            return "it exited, or closed its output, before answering"
        if isinstance(leaf, FileNotFoundError):
            return f"no such program ({leaf.filename or leaf})"
        text = str(leaf).strip().splitlines()[0] if str(leaf).strip() else ""
        return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__
    return "it stopped"


def _leaves(exc: BaseException | None) -> Iterator[BaseException]:
    if exc is None:
        return
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


Call: TypeAlias = Callable[[int, str, Mapping[str, JSON], float], Outcome]
