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

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # loaded on first use (_env and _client import the SDK)
    from four.domains.mcp._client import StartError as StartError
    from four.domains.mcp._env import McpEnv as McpEnv
    from four.domains.mcp._env import mcp_env as mcp_env
    from four.domains.mcp._parse import McpParse as McpParse
    from four.domains.mcp._parse import mcp_parse as mcp_parse
    from four.domains.mcp._servers import HttpServer as HttpServer
    from four.domains.mcp._servers import Server as Server
    from four.domains.mcp._servers import StdioServer as StdioServer
    from four.domains.mcp._servers import server_of as server_of
    from four.domains.mcp._tools import McpTool as McpTool
    from four.domains.mcp._tools import ToolAction as ToolAction

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
