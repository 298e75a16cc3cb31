"""Real MCP servers for the tests (``server.py``, written with the SDK): over stdio, started
by the environment under test, or over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install 'four-loop[mcp]'")

from four.domains.mcp import StdioServer
from tests.execute.conftest import alive

SERVER = Path(__file__).with_name("server.py")


def stdio(*flags: str, **settings: object) -> StdioServer:
    """The test server, started over stdio with ``flags``."""
    return StdioServer((sys.executable, str(SERVER), *flags), **settings)  # type: ignore[arg-type]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """The test server over streamable HTTP on a free port of 127.0.0.1: its URL."""
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the HTTP test server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def gone(token: str, within: float = 10.0) -> list[int]:
    """The processes holding ``token`` still alive after ``within`` seconds (or fewer)."""
    deadline = time.monotonic() + within
    while alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(token)
