"""mcp_env and mcp_parse against real MCP servers (tests/domains/mcp/server.py, the SDK's):
the tools listed and called by a model, schemas checked before anything is sent, and
every way a server can fail ending as an observation or an execution_error, never a hang."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import pytest
from returns.result import Failure, Success

from four import (
    Action,
    Observation,
    ToolCall,
    ToolResult,
    User,
    load_trajectory,
    local_env,
    run,
    save_trajectory,
    scripted_invoke,
)
from four.domains.mcp import HttpServer, McpEnv, StartError, ToolAction, mcp_env, mcp_parse
from four.invoke import litellm_toolcall_invoke
from four.parse import regex_parse, toolcall_parse
from four.types import Assistant
from tests._server import CHAT, LoopbackServer, call, chat, openai_history_problems
from tests.domains.mcp.conftest import gone, stdio

ROOT = Path(__file__).resolve().parents[3]


def token() -> str:
    return f"mcpt{secrets.token_hex(5)}"


def observed(env: McpEnv, tool: str, **arguments: object) -> Observation:
    result = env(ToolAction(tool=tool, arguments=arguments))  # type: ignore[arg-type]
    assert isinstance(result, Success), result
    seen: Observation = result.unwrap()
    return seen


def test_a_model_gets_the_tools_as_definitions_and_calls_them_with_bash(
    tmp_path: Path, server: LoopbackServer
) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    name = token()
    server.push(
        chat(tool_calls=[call(f"{name}__read", path=str(tmp_path / "notes.txt"))]),
        chat(tool_calls=[call("bash", command="echo 42 > answer.txt")]),
        chat("Done.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    )
    with mcp_env(stdio("--name", name), shell=local_env(cwd=str(tmp_path))) as env:
        G = litellm_toolcall_invoke(
            "openai/test", api_base=server.url, api_key="none", tools=env.definitions()
        )
        path = run(G, mcp_parse(env, toolcall_parse()), env, save_trajectory(tmp_path / "runs"),
                   prompt="Find the answer.")  # fmt: skip
    saved = load_trajectory(path)
    assert saved.outcome == "exit:task_complete"
    assert (tmp_path / "answer.txt").read_text() == "42\n"
    first = cast(dict[str, Any], server.bodies(CHAT)[0])
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert "bash" in offered and f"{name}__add" in offered
    assert offered[f"{name}__add"]["parameters"]["required"] == ["a", "b"]
    results = [m for m in saved.messages if isinstance(m, ToolResult)]
    assert results[0].name == f"{name}__read" and "the answer is 42" in results[0].content
    assert results[0].returncode == 0
    for body in server.bodies():
        assert openai_history_problems(body["messages"]) == []  # type: ignore[arg-type]


def test_in_text_mode_the_prompt_describes_the_tools_and_tool_call_blocks_call_them(
    tmp_path: Path,
) -> None:
    name = token()
    with mcp_env(stdio("--name", name), shell=local_env(cwd=str(tmp_path))) as env:
        prompt = env.describe()
        assert f"{name}__add" in prompt and '"required": ["a", "b"]' in prompt
        reply = (
            "First the sum, then a command.\n<tool_call>\n"
            f'{{"name": "{name}__add", "arguments": {{"a": 2, "b": 40}}}}\n</tool_call>\n'
            "```bash\necho after\n```"
        )
        G = scripted_invoke([reply, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"])
        path = run(G, mcp_parse(env, regex_parse()), env, save_trajectory(tmp_path),
                   system=prompt, prompt="Add.")  # fmt: skip
    seen = [
        m for m in load_trajectory(path).messages if isinstance(m, User) and m.kind == "observation"
    ]
    assert "<result>ok</result>" in seen[0].content and "42" in seen[0].content
    assert "after" in seen[1].content  # in the order written


@pytest.mark.parametrize("toolcalls", [True, False])
def test_arguments_that_do_not_fit_the_schema_are_fed_back_and_never_sent(
    tmp_path: Path, toolcalls: bool
) -> None:
    name, log = token(), tmp_path / "calls.log"
    with mcp_env(stdio("--name", name, "--log", str(log))) as env:
        bad = {"a": "two"}
        if toolcalls:
            reply = Assistant("", (ToolCall("c1", f"{name}__add", json.dumps(bad)),))
        else:
            body = json.dumps({"name": f"{name}__add", "arguments": bad})
            reply = Assistant(f"<tool_call>{body}</tool_call>")
        G = scripted_invoke([reply, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"])
        base = toolcall_parse() if toolcalls else regex_parse()
        path = run(G, mcp_parse(env, base), env, save_trajectory(tmp_path), prompt="Add.")
    messages = load_trajectory(path).messages
    fed = [m for m in messages if isinstance(m, ToolResult | User) and m.kind != "task"]
    assert "do not fit its input schema" in fed[0].content
    assert "'two' is not of type 'integer'" in fed[0].content
    assert fed[0].kind == ("rejected" if toolcalls else "format_error")
    assert not log.exists()  # nothing reached the server


def test_a_tool_error_a_refused_call_and_binary_content_are_observations(tmp_path: Path) -> None:
    with mcp_env(stdio("--name", "s")) as env:
        failed = observed(env, "s__boom")
        assert failed.returncode == 1 and "<result>error</result>" in failed.content
        picture = observed(env, "s__picture")
        assert "[image: image/png, 1000 bytes]" in picture.content
        big = observed(env, "s__big", size=50_000)
        assert len(big.content) < 12_000 and "characters elided" in big.content
        assert "The result had" in big.content
        missing = env(ToolAction(tool="s__nothing"))
        assert "no MCP tool named" in missing.unwrap().content


def test_a_hanging_tool_times_out_as_an_observation_and_the_server_goes_on() -> None:
    with mcp_env(stdio("--name", "s"), timeout=1.5) as env:
        begin = time.monotonic()
        hung = observed(env, "s__hang", seconds=120)
        assert hung.timed_out and hung.returncode == 124
        assert time.monotonic() - begin < 60
        assert "3" in observed(env, "s__add", a=1, b=2).content


def test_a_server_that_dies_mid_call_ends_the_run_with_an_execution_error(tmp_path: Path) -> None:
    name = token()
    G = scripted_invoke([Assistant("", (ToolCall("c1", f"{name}__die", "{}"),)), "never"])
    env = mcp_env(stdio("--name", name))
    path = run(G, mcp_parse(env, toolcall_parse()), env, save_trajectory(tmp_path), prompt="x")
    saved = load_trajectory(path)
    assert saved.outcome is not None and saved.outcome.startswith("execution_error: MCP tool")
    assert "closed the connection" in saved.outcome
    assert gone(name) == []


def test_a_server_that_prints_garbage_on_stdout_still_serves() -> None:
    with mcp_env(stdio("--name", "g", "--garbage")) as env:
        assert "3" in observed(env, "g__add", a=1, b=2).content


def test_a_server_that_cannot_start_is_one_clear_error() -> None:
    with pytest.raises(StartError, match="did not start"):
        mcp_env(f"{sys.executable} -c 'import sys; sys.exit(3)'", start_timeout=30)
    with pytest.raises(StartError, match=r"did not answer .* within 1 s"):
        mcp_env(f"{sys.executable} -c 'import time; time.sleep(60)'", start_timeout=1)
    with pytest.raises(ValueError, match="give at least one server"):
        mcp_env()
    with pytest.raises(ValueError, match="cannot read the server command"):
        mcp_env("python 'unclosed")


def test_secrets_are_not_visible_to_a_stdio_server_unless_passed_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret, passed = f"sk-{secrets.token_hex(8)}", f"ghp-{secrets.token_hex(8)}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("GITHUB_TOKEN", passed)
    # In the driver's own environment from its start, where root could read it in /proc.
    code = (
        "from four.domains.mcp import mcp_env, ToolAction\n"
        "from tests.domains.mcp.conftest import stdio\n"
        "with mcp_env(stdio('--name', 's'), inherit=['GITHUB_TOKEN']) as env:\n"
        "    print(env(ToolAction(tool='s__environment')).unwrap().content)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"GITHUB_TOKEN={passed}" in done.stdout  # passed by name
    assert secret not in done.stdout  # neither in its environment nor in any it can read
    assert "OPENAI_API_KEY" not in done.stdout


def test_no_server_process_outlives_the_run(tmp_path: Path) -> None:
    name = token()
    G = scripted_invoke(
        [Assistant("", (ToolCall("c1", f"{name}__spawn", json.dumps({"token": f"{name}-child"})),)),
         "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
    )  # fmt: skip
    env = mcp_env(stdio("--name", name))
    assert len(gone(name, within=0)) >= 1
    path = run(G, mcp_parse(env, toolcall_parse()), env, save_trajectory(tmp_path), prompt="x")
    assert isinstance(load_trajectory(path).outcome, str)
    assert gone(name) == []  # the server, and what it started and detached


def _driver(name: str) -> list[str]:
    """A process that runs a model whose first call hangs in the server, as `four run` would."""
    code = (
        "import json\n"
        "from four import run, scripted_invoke, save_trajectory, ToolCall\n"
        "from four.types import Assistant\n"
        "from four.domains.mcp import mcp_env, mcp_parse\n"
        "from four.parse import toolcall_parse\n"
        "from tests.domains.mcp.conftest import stdio\n"
        f"name = {name!r}\n"
        "calls = (ToolCall('c0', name + '__spawn', json.dumps({'token': name + '-child'})),\n"
        "         ToolCall('c1', name + '__hang', '{}'))\n"
        "env = mcp_env(stdio('--name', name))\n"
        "print('started', flush=True)\n"
        "run(scripted_invoke([Assistant('', calls)]), mcp_parse(env, toolcall_parse()), env,\n"
        "    save_trajectory('runs'), prompt='x')\n"
    )
    return [sys.executable, "-c", code]


@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_no_server_process_outlives_its_driver_interrupted_or_killed(
    tmp_path: Path, how: str
) -> None:
    name = token()
    proc = subprocess.Popen(
        _driver(name), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])},
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"started"
        deadline = time.monotonic() + 60
        while not gone(f"{name}-child", within=0) and time.monotonic() < deadline:
            time.sleep(0.05)  # the hang is in flight once the child runs
        assert gone(f"{name}-child", within=0), "the server's child never started"
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
        proc.wait(60)
        assert gone(name, within=15) == []
        if how == "ctrl-c":
            saved = list((tmp_path / "runs").glob("*.json"))
            assert len(saved) == 1
            assert load_trajectory(saved[0]).outcome == "interrupted: KeyboardInterrupt"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_over_streamable_http_the_same_tools_answer(http_server: str) -> None:
    with mcp_env(HttpServer(http_server, name="web"), timeout=30) as env:
        assert env.protocols == ("2026-07-28",)
        assert {t.name for t in env.tools} >= {"web__add", "web__read", "web__hang"}
        assert "42" in observed(env, "web__add", a=40, b=2).content
        assert "<result>error</result>" in observed(env, "web__boom").content


def test_over_http_a_hang_times_out_and_a_dead_server_is_an_execution_error(
    http_server: str,
) -> None:
    with mcp_env(http_server, timeout=1.5) as env:
        tool = env.tools[0].server
        assert observed(env, f"{tool}__hang", seconds=60).timed_out
        result = env(ToolAction(tool=f"{tool}__die"))
        assert isinstance(result, Failure) or result.unwrap().returncode != 0


def test_other_actions_go_to_the_shell_and_the_check_runs_there(tmp_path: Path) -> None:
    from four.checks import command_check, verify

    (tmp_path / "want").write_text("3\n")
    name = token()
    reply = Assistant("", (ToolCall("c1", f"{name}__add", '{"a": 1, "b": 2}'),))
    write = Assistant("", (ToolCall("c2", "bash", json.dumps({"command": "echo 3 > got"})),))
    G = scripted_invoke([reply, write, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"])
    with mcp_env(stdio("--name", name), shell=local_env(cwd=str(tmp_path))) as env:
        path = run(G, mcp_parse(env, toolcall_parse()), env, save_trajectory(tmp_path / "r"),
                   prompt="x", check=verify(command_check("cmp want got")))  # fmt: skip
    assert load_trajectory(path).outcome is not None
    assert load_trajectory(path).outcome.startswith("accepted")  # type: ignore[union-attr]
    without = mcp_env(stdio("--name", name))
    try:
        assert without(Action("ls")).unwrap().returncode == 127
    finally:
        without.close()


def test_tool_names_are_prefixed_per_server_and_unique() -> None:
    with mcp_env(stdio("--name", "same"), stdio("--name", "same")) as env:
        servers = sorted({t.server for t in env.tools})
        assert servers == ["same", "same2"]
        assert all(len(t.name) <= 64 for t in env.tools)
        assert env.tool("same2__add") is not None
