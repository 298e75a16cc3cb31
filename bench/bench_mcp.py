"""What mcp_env costs over the MCP SDK's own client, per call and at start.

    python bench/run.py mcp        # or: python bench/bench_mcp.py [CALLS] [ROUNDS]

One real server (tests/domains/mcp/server.py, the SDK's MCPServer), its ``add`` tool,
over stdio and over streamable HTTP on 127.0.0.1. The baseline is the SDK's ``Client``
awaited on its own event loop: the transport and the server's handling of the call.
mcp_env adds the plain-call bridge (an event loop in a thread), the check of the
arguments against the input schema, and the observation's text. Start: the server
started and its tools listed, by the SDK alone (uncontained) and by mcp_env (in a PID
namespace of its own, under limits, tethered). Rounds alternate the two, so they see
the host alike; medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "domains" / "mcp" / "server.py"


async def _sdk_calls(target: object, calls: int) -> list[float]:
    from mcp import Client

    async with Client(target) as client:  # type: ignore[arg-type]
        for _ in range(10):
            await client.call_tool("add", {"a": 1, "b": 2})
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            await client.call_tool("add", {"a": 1, "b": 2})
            times.append(time.perf_counter() - t)
    return times


def _env_calls(target: str, calls: int) -> list[float]:
    from four.domains.mcp import ToolAction, mcp_env

    with mcp_env(target) as env:
        action = ToolAction(tool=f"{env.tools[0].server}__add", arguments={"a": 1, "b": 2})
        for _ in range(10):
            env(action)
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            env(action)
            times.append(time.perf_counter() - t)
    return times


async def _sdk_start() -> float:
    from mcp import Client, StdioServerParameters

    t = time.perf_counter()
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with Client(params) as client:
        await client.list_tools()
        took = time.perf_counter() - t
    return took


def _env_start() -> float:
    from four.domains.mcp import mcp_env

    t = time.perf_counter()
    env = mcp_env(f"{sys.executable} {SERVER}")
    took = time.perf_counter() - t
    env.close()
    return took


def _http_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = folder / "port"
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)])
    while not port.exists():
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port.read_text()}/mcp"


def main(calls: int = 300, rounds: int = 3) -> None:
    import tempfile

    from mcp import StdioServerParameters

    stdio = f"{sys.executable} {SERVER}"
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)], env=dict(os.environ))
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        proc, url = _http_server(Path(folder))
        try:
            for _ in range(rounds):
                rows.setdefault("stdio sdk", []).extend(anyio.run(_sdk_calls, params, calls))
                rows.setdefault("stdio env", []).extend(_env_calls(stdio, calls))
                rows.setdefault("http sdk", []).extend(anyio.run(_sdk_calls, url, calls))
                rows.setdefault("http env", []).extend(_env_calls(url, calls))
                rows.setdefault("start sdk", []).append(anyio.run(_sdk_start))
                rows.setdefault("start env", []).append(_env_start())
        finally:
            proc.terminate()
            proc.wait()
    ms = {k: statistics.median(v) * 1000 for k, v in rows.items()}
    print(f"{calls} calls x {rounds} rounds of `add`; medians\n")
    print("| transport | SDK client, ms/call | mcp_env, ms/call | overhead, ms | mcp_env / SDK |")
    print("|---|---:|---:|---:|---:|")
    for kind in ("stdio", "http"):
        sdk, env = ms[f"{kind} sdk"], ms[f"{kind} env"]
        print(f"| {kind} | {sdk:.2f} | {env:.2f} | {env - sdk:.2f} | {env / sdk:.2f}x |")
    print("\n| start (stdio, tools listed) | SDK alone, s | mcp_env, s | mcp_env / SDK |")
    print("|---|---:|---:|---:|")
    sdk, env = ms["start sdk"] / 1000, ms["start env"] / 1000
    print(f"| python server (MCPServer) | {sdk:.2f} | {env:.2f} | {env / sdk:.2f}x |")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
