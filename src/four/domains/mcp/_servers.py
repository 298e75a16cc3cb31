"""Which MCP servers a run uses: one started here (stdio), or one reached by URL
(streamable HTTP). A server is named by a string as a person writes it on a command
line (``four run --mcp CMD`` or ``--mcp URL``), or by one of these records."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias
from urllib.parse import urlsplit

from four import _arguments as check


@dataclass(frozen=True, slots=True)
class StdioServer:
    """A server this process starts, speaking MCP on its standard input and output.

    ``argv`` is its command line; ``name`` prefixes its tools (None: the name the server
    gives itself); ``env`` holds values set for it as given (secrets too: they are never
    recorded); ``inherit`` names host variables passed to it even if they look secret
    (every other host variable is filtered as a command's is); ``cwd`` is where it runs.

    >>> StdioServer(("python", "-m", "files")).label
    'python -m files'
    """

    argv: tuple[str, ...]
    name: str | None = None
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    inherit: tuple[str, ...] = ()
    cwd: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.argv, str) or not self.argv:
            raise TypeError(
                f"StdioServer: argv={self.argv!r}: give the command line as a tuple of words, "
                "e.g. ('python', 'server.py')"
            )
        check.names("StdioServer", "argv", self.argv)
        check.text("StdioServer", "name", self.name, optional=True)
        check.variables("StdioServer", "env", self.env)
        check.names("StdioServer", "inherit", self.inherit)
        check.path("StdioServer", "cwd", self.cwd, optional=True)

    @property
    def label(self) -> str:
        """The command line, as a person would type it."""
        return shlex.join(self.argv)

    @property
    def fallback_name(self) -> str:
        """A name from the command, for a server that gives none: its script or program."""
        words = [w for w in self.argv[1:] if not w.startswith("-")] if len(self.argv) > 1 else []
        script = next((w for w in words if w.endswith(".py")), None)
        base = os.path.basename(script or self.argv[0])
        return base.removesuffix(".py") or "mcp"


@dataclass(frozen=True, slots=True)
class HttpServer:
    """A server reached over streamable HTTP at ``url`` (it runs elsewhere: this process
    neither starts nor stops it). ``headers`` are sent with every request (an
    ``Authorization`` header, say) and never recorded.

    >>> HttpServer("http://127.0.0.1:8000/mcp").fallback_name
    '127_0_0_1_8000'
    """

    url: str
    name: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        check.text("HttpServer", "url", self.url)
        if urlsplit(self.url).scheme not in ("http", "https") or not urlsplit(self.url).netloc:
            raise ValueError(
                f"HttpServer: url={self.url!r}: give an http:// or https:// URL, e.g. "
                "http://127.0.0.1:8000/mcp"
            )
        check.text("HttpServer", "name", self.name, optional=True)
        check.variables("HttpServer", "headers", self.headers)

    @property
    def label(self) -> str:
        return self.url

    @property
    def fallback_name(self) -> str:
        return (
            (urlsplit(self.url).netloc.rpartition("@")[2] or "mcp")
            .replace(".", "_")
            .replace(":", "_")
        )


Server: TypeAlias = StdioServer | HttpServer


def server_of(spec: object, where: str = "mcp_env") -> Server:
    """The server a string names (a URL: HTTP; else a command line, split as a shell
    would), or the record as given.

    >>> server_of("python server.py --root /tmp").argv
    ('python', 'server.py', '--root', '/tmp')
    >>> type(server_of("https://example.org/mcp")).__name__
    'HttpServer'
    """
    if isinstance(spec, StdioServer | HttpServer):
        return spec
    if not isinstance(spec, str):
        raise TypeError(
            f"{where}: a server is a command line, a URL, StdioServer or HttpServer; "
            f"got {spec!r:.60}"
        )
    if not spec.strip():
        raise ValueError(f"{where}: a server is empty: give its command line or its URL")
    if spec.strip().startswith(("http://", "https://")):
        return HttpServer(spec.strip())
    try:
        argv = shlex.split(spec)
    except ValueError as exc:
        raise ValueError(f"{where}: cannot read the server command {spec!r}: {exc}") from None
    return StdioServer(tuple(argv))
