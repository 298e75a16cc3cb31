"""The command line: `four run --mcp` (a server's tools beside bash, with --check), and
`four mcp serve` driven by the SDK's own client, with a scripted model behind it (the
loopback OpenAI-protocol server): an accepted run, sealed and auditable."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from four.cli import main
from tests._server import CHAT, LoopbackServer, call, chat
from tests.domains.mcp.conftest import gone, stdio

ROOT = Path(__file__).resolve().parents[3]
SUBMIT = "Done.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def bodies(server: LoopbackServer) -> list[dict[str, Any]]:
    """The chat requests the model server received, as plain JSON."""
    return cast(list[dict[str, Any]], server.bodies(CHAT))


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_four_run_mcp_gives_the_model_the_tools_and_bash_and_the_check_decides(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    name = "clitools"
    server.push(
        chat(tool_calls=[call(f"{name}__add", a=40, b=2)]),
        chat(tool_calls=[call("bash", command="echo 42 > sum.txt")]),
        chat(SUBMIT),
    )
    command = shlex.join(stdio("--name", name).argv)
    status = main(
        ["run", "Add 40 and 2 into sum.txt", "--model", "test-model", "--api-base", server.url,
         "--toolcalls", "--mcp", command, "-o", str(tmp_path / "runs"), "--cwd", str(work),
         "--check", "grep -qx 42 sum.txt", "--json"]
    )  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert status == 0 and result["outcome"] == "accepted", result
    first = bodies(server)[0]
    names = [t["function"]["name"] for t in first["tools"]]
    assert names[0] == "bash" and f"{name}__add" in names
    assert f"{name}__add" in first["messages"][0]["content"]
    saved = json.loads(Path(result["path"]).read_text())
    assert saved["info"]["components"]["cli"]["mcp"] == [command]
    assert gone(name) == []


def test_four_run_mcp_in_text_mode_describes_the_tools_in_the_system_prompt(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    server.push(chat('<tool_call>{"name": "t__add", "arguments": {"a": 1, "b": 1}}</tool_call>'),
                chat(SUBMIT))  # fmt: skip
    command = shlex.join(stdio("--name", "t").argv)
    status = main(
        ["run", "Add", "--model", "test-model", "--api-base", server.url, "--mcp", command,
         "-o", str(tmp_path / "runs"), "--cwd", str(work), "--json"]
    )  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert status == 0, result
    system = bodies(server)[0]["messages"][0]["content"]
    assert "<tool_call>" in system and "t__add" in system and "input schema" in system
    second = bodies(server)[1]["messages"]
    assert "<result>ok</result>" in second[-1]["content"]


def test_four_run_with_a_server_that_cannot_start_is_a_usage_error(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        ["run", "x", "--model", "test-model", "--api-base", server.url,
         "--mcp", "no-such-program-four-mcp", "-o", str(tmp_path / "runs")]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("four run: error: --mcp: the MCP server no-such-program-four-mcp")
    assert len(err.strip().splitlines()) == 1 and "no such program" in err
    assert server.bodies(CHAT) == []  # the model was never asked


# --- four mcp serve ------------------------------------------------------------------


def _serve_argv(runs: Path, model_url: str, *more: str) -> list[str]:
    return [sys.executable, "-m", "four.cli", "mcp", "serve", "--runs", str(runs), *more,
            "--", "--model", "test-model", "--api-base", model_url]  # fmt: skip


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


@asynccontextmanager
async def _client(target: Any) -> AsyncIterator[Any]:
    from mcp import Client

    async with Client(target, read_timeout_seconds=120) as client:
        yield client


def _served(server: LoopbackServer, tmp_path: Path, target: Any) -> dict[str, Any]:
    """Run one verified task through `four mcp serve`, then read it back every way."""
    work = tmp_path / "work"
    work.mkdir()
    server.push(chat("```bash\necho 42 > answer.txt\n```"), chat(SUBMIT))
    found: dict[str, Any] = {}

    async def session() -> None:
        async with _client(target) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            found["tools"] = tools
            done = await client.call_tool(
                "run_task",
                {"task": "Write 42 to answer.txt", "folder": str(work),
                 "check": "grep -qx 42 answer.txt", "max_steps": 5},
            )  # fmt: skip
            found["run"] = done
            assert not done.is_error, done.content
            run_id = done.structured_content["run"]
            found["audit"] = await client.call_tool("audit_run", {"run": run_id})
            found["show"] = await client.call_tool("show_run", {"run": run_id})
            found["resources"] = (await client.list_resources()).resources
            found["read"] = await client.read_resource(f"four://runs/{run_id}")
            found["bad"] = await client.call_tool("audit_run", {"run": "../../etc/passwd"})

    anyio.run(session)
    return found


def _check_served(found: dict[str, Any], tmp_path: Path) -> None:
    from four import audit

    assert {"run_task", "audit_run", "show_run", "list_runs"} <= found["tools"]
    result = found["run"].structured_content
    assert not found["run"].is_error, found["run"]
    assert result["outcome"] == "accepted" and result["accepted"] and result["success"]
    assert result["audit"]["valid"] and result["audit"]["finished"]
    assert result["audit"]["verified"] and result["audit"]["receipts"] >= 1
    assert (tmp_path / "work" / "answer.txt").read_text() == "42\n"
    assert audit(result["trajectory"]).valid  # the record itself, audited here too
    assert found["audit"].structured_content["valid"]
    steps = found["show"].structured_content["steps"]
    assert steps[0]["actions"] == ["echo 42 > answer.txt"]
    assert [r.uri for r in found["resources"]] == [result["resource"]]
    document = json.loads(found["read"].contents[0].text)
    assert document["outcome"] == "accepted"
    assert found["bad"].is_error and "not a run id" in found["bad"].content[0].text


def test_four_mcp_serve_over_stdio_runs_a_verified_task_and_returns_it_audited(
    server: LoopbackServer, tmp_path: Path
) -> None:
    from mcp import StdioServerParameters

    argv = _serve_argv(tmp_path / "runs", server.url)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_environment(), cwd=ROOT)
    _check_served(_served(server, tmp_path, params), tmp_path)


@pytest.fixture
def served_http(server: LoopbackServer, tmp_path: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        _serve_argv(tmp_path / "runs", server.url, "--http", "127.0.0.1:0"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=_environment(), cwd=ROOT,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        assert line.startswith("four mcp serve: listening on http://127.0.0.1:"), line
        yield line.split("listening on ")[1].strip()
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


def test_four_mcp_serve_over_http_runs_a_verified_task_and_returns_it_audited(
    server: LoopbackServer, tmp_path: Path, served_http: str
) -> None:
    _check_served(_served(server, tmp_path, served_http), tmp_path)


def test_four_mcp_serve_reports_a_failed_run_as_a_tool_error(
    tmp_path: Path, served_http: str
) -> None:
    async def session() -> Any:
        async with _client(served_http) as client:
            return await client.call_tool(
                "run_task", {"task": "x", "folder": str(tmp_path / "missing")}
            )

    done = anyio.run(session)
    assert done.is_error and "no folder" in done.content[0].text
