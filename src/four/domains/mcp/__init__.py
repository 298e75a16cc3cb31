"""MCP: servers' tools as V2, and ``four`` itself as an MCP server (``four mcp serve``).

    mcp_env(*servers, shell=local_env())   V2: the servers' tools, and the shell for the rest
    mcp_parse(env, base)                   V1: calls of the tools, and ``base`` for the rest
    StdioServer, HttpServer                a server started here, or reached by URL
    ToolAction, McpTool                    a call of a tool; a tool as the model sees it

Needs the ``mcp`` extra (``pip install 'four-loop[mcp]'``): the official SDK, imported
when a server is started, never by ``import four``. The protocol is the SDK's: it offers
2026-07-28 (a stateless server is asked with ``server/discover``) and falls back to the
``initialize`` handshake of 2025-11-25 and earlier with older servers.

>>> from four.domains.mcp import mcp_env, mcp_parse  # doctest: +SKIP
>>> from four import run, regex_parse, litellm_invoke, local_env, save_trajectory  # doctest: +SKIP
>>> with mcp_env("python files_server.py", shell=local_env()) as env:  # doctest: +SKIP
...     run(litellm_invoke("openai/gpt-4o"), mcp_parse(env, regex_parse()), env,
...         save_trajectory("runs"), system=SYSTEM + "\\n\\n" + env.describe(), prompt=task)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from four._lazy import lazy
from four.domains.mcp._parse import McpParse, mcp_parse
from four.domains.mcp._servers import HttpServer, Server, StdioServer, server_of
from four.domains.mcp._tools import McpTool, ToolAction

if TYPE_CHECKING:  # they import the SDK: loaded on first use
    from four.domains.mcp._client import StartError
    from four.domains.mcp._env import McpEnv, mcp_env

__all__ = [
    "HttpServer",
    "McpEnv",
    "McpParse",
    "McpTool",
    "Server",
    "StartError",
    "StdioServer",
    "ToolAction",
    "mcp_env",
    "mcp_parse",
    "server_of",
]

__getattr__, __dir__ = lazy(
    "four.domains.mcp",
    {
        "McpEnv": "four.domains.mcp._env",
        "mcp_env": "four.domains.mcp._env",
        "StartError": "four.domains.mcp._client",
    },
    __all__,
)
