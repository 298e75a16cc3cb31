"""``four run --mcp CMD|URL`` (servers' tools beside the shell) and ``four mcp serve``
(``four`` as an MCP server); the work is ``four.domains.mcp``'s."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from four.cli._errors import UsageError
from four.types import Closeable, Execute

if TYPE_CHECKING:
    from four.domains.mcp import McpEnv

EXTRA = "the MCP extra is not installed: pip install 'four-loop[mcp]'"


def start(servers: Sequence[str], inherit: Sequence[str], shell: Execute) -> McpEnv:
    """The run's MCP servers started, ``shell`` for every other action; one that cannot
    start is a usage error."""
    try:
        from four.domains.mcp import StartError, mcp_env

        return mcp_env(*servers, shell=shell, inherit=tuple(inherit))
    except ImportError:
        problem = EXTRA
    except (StartError, ValueError, TypeError, OSError) as exc:
        problem = f"--mcp: {exc}"
    if isinstance(shell, Closeable):
        shell.close()
    raise UsageError(problem)


def system(text: str, servers: McpEnv, toolcalls: bool) -> str:
    """The system prompt with the servers' tools: described in text mode; named in
    tool-call mode, where their definitions go with every request."""
    if not servers.tools:
        return text
    if toolcalls:
        names = ", ".join(t.name for t in servers.tools)
        return f"{text}\nYou can also call these tools (from MCP servers): {names}.\n"
    return f"{text}\n{servers.describe()}\n"


# --- four mcp serve ------------------------------------------------------------------


def flags(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")
    serve = sub.add_parser(
        "serve",
        help="serve four's verified runs to other agents",
        description="Serve four as an MCP server (docs/mcp.md). Flags after -- go to every "
        "`four run` (the model: -- --model NAME --api-base URL).",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp (port 0: a free one; the URL is "
        "printed on standard error); default: stdio",
    )
    serve.add_argument(
        "--runs",
        metavar="DIR",
        help="where the runs are saved, outside the agents' folders [FOUR_OUTPUT_DIR, "
        "$XDG_STATE_HOME/four/runs]",
    )
    serve.add_argument("run_flags", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    """``four mcp serve``: serve until Ctrl-C (exit 0), 2 for a usage error."""
    if args.mcp_command != "serve":
        raise UsageError("give a subcommand: four mcp serve")
    try:
        from four.domains.mcp._serve import ServeSettings, serve
    except ImportError:
        raise UsageError(EXTRA) from None
    from four.cli import _settings as env
    from four.cli._options import default_output_dir

    run_flags = [f for f in args.run_flags if f != "--"] if args.run_flags else []
    if any(f in ("--cwd", "-o", "--output-dir", "--json", "-q", "--quiet") for f in run_flags):
        raise UsageError("the flags after -- may not set --cwd, -o, --json or -q: run_task does")
    runs = Path(args.runs or env.get("FOUR_OUTPUT_DIR") or default_output_dir()).expanduser()
    settings = ServeSettings(runs.resolve(), tuple(run_flags))
    sys.stdout = sys.__stdout__  # the protocol's channel: written by the SDK as it is
    try:
        if args.http is None:
            serve(settings)
        else:
            host, sep, port = args.http.rpartition(":")
            if not sep or not port.isdigit() or int(port) > 65535:
                raise UsageError(
                    f"--http {args.http}: give HOST:PORT, e.g. 127.0.0.1:8765 (port 0: any)"
                )

            def listening(url: str) -> None:
                print(f"four mcp serve: listening on {url}", file=sys.__stderr__, flush=True)

            serve(settings, "http", host.strip("[]") or "127.0.0.1", int(port), listening)
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        raise UsageError(f"cannot serve: {exc.strerror or exc}") from None
    return 0
