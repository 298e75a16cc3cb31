"""A real MCP server for the tests, written with the official SDK.

    python server.py [--name NAME] [--garbage] [--log FILE]             stdio
    python server.py --http PORTFILE [--name NAME]                      streamable HTTP

Over HTTP it listens on a free port of 127.0.0.1 and writes the port to PORTFILE once it
listens. ``--garbage`` prints lines that are not JSON-RPC on standard output before it
serves. ``--log`` appends the name of each tool called, one a line (so a test sees what
reached the server).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

from mcp.server.mcpserver import Image, MCPServer

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="testsrv")
parser.add_argument("--garbage", action="store_true")
parser.add_argument("--log")
parser.add_argument("--http")
args = parser.parse_args()

app = MCPServer(args.name, log_level="WARNING")


def called(name: str) -> None:
    if args.log:
        with open(args.log, "a") as f:
            f.write(name + "\n")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    called("add")
    return a + b


@app.tool()
def read(path: str) -> str:
    """Read a text file."""
    called("read")
    with open(path) as f:
        return f.read()


@app.tool()
def boom() -> str:
    """Always fails."""
    called("boom")
    raise RuntimeError("the boom tool exploded")


@app.tool()
def hang(seconds: float = 300.0) -> str:
    """Sleep, then answer."""
    called("hang")
    time.sleep(seconds)
    return "woke"


@app.tool()
def die() -> str:
    """Exit the server in the middle of the call."""
    called("die")
    os._exit(3)


@app.tool()
def environment() -> str:
    """The server's environment variables, and whether another process's can be read."""
    called("environment")
    lines = [f"{k}={v}" for k, v in sorted(os.environ.items())]
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    lines.append(
                        f"proc {pid}: " + f.read().replace(b"\0", b" ").decode("utf-8", "replace")
                    )
            except OSError:
                continue
    return "\n".join(lines)


@app.tool()
def picture() -> Image:
    """A small PNG."""
    called("picture")
    return Image(data=b"\x89PNG\r\n\x1a\n" + bytes(992), format="png")


@app.tool()
def big(size: int) -> str:
    """``size`` characters of text."""
    called("big")
    return "".join(chr(ord("a") + i % 26) for i in range(size))


@app.tool()
def spawn(token: str) -> str:
    """Start a detached process named ``token`` that would run for five minutes."""
    called("spawn")
    subprocess.Popen(
        ["bash", "-c", f'exec -a "{token}" sleep 300'],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return "spawned"


def main() -> None:
    if args.garbage:
        sys.stdout.write("hello, I am not JSON-RPC\n{broken json\n")
        sys.stdout.flush()
    if args.http is None:
        app.run()
        return
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(), log_level="warning"))
    with open(args.http + ".tmp", "w") as f:
        f.write(str(sock.getsockname()[1]))
    os.replace(args.http + ".tmp", args.http)
    anyio.run(lambda: server.serve(sockets=[sock]))


main()
