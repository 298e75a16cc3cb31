"""Our Gs with the real parsers and a real bash, over loopback HTTP, through ``run``."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from four import Finished, ToolResult, User, run
from four.execute import local_env
from four.invoke import http_response_invoke, litellm_invoke, litellm_toolcall_invoke
from four.parse import regex_parse, toolcall_parse
from tests._server import (
    CHAT,
    JSON,
    RESPONSES,
    LoopbackServer,
    call,
    chat,
    openai_history_problems,
    responses,
    responses_input_problems,
)
from tests.invoke._support import keep

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; cat f.txt"


def test_toolcall_run_with_toolcall_parse_and_bash(server: LoopbackServer, tmp_path: Path) -> None:
    server.push(
        chat("Writing the file.", [call(command="echo hi > f.txt", id="c1")]),
        chat(None, [call(command="cat f.txt", id="c2"), call("python", "{}", id="c3")]),
        chat(None, [call(command=SUBMIT, id="c4")]),
    )
    G = litellm_toolcall_invoke("openai/m", api_base=server.url, api_key="x")
    history, outcome = run(G, toolcall_parse(), local_env(cwd=str(tmp_path)), keep, prompt="t")
    assert outcome == Finished("hi")
    results = {m.tool_call_id: m.content for m in history if isinstance(m, ToolResult)}
    assert "hi" in results["c2"] and "python" in results["c3"]  # the unknown tool is answered
    for body in server.bodies(CHAT):
        assert openai_history_problems(cast(list[JSON], body["messages"])) == []


def test_text_run_with_regex_parse_and_bash(server: LoopbackServer, tmp_path: Path) -> None:
    server.push(
        chat("First:\n```bash\necho hi > f.txt\n```"),
        chat("Oops, no command."),
        chat(f"```bash\n{SUBMIT}\n```"),
    )
    G = litellm_invoke("openai/m", api_base=server.url, api_key="x")
    history, outcome = run(G, regex_parse(), local_env(cwd=str(tmp_path)), keep, prompt="t")
    assert outcome == Finished("hi")
    assert not any(isinstance(m, ToolResult) for m in history)  # text mode: user turns
    assert isinstance(history[5], User)  # the format error, fed back
    for body in server.bodies(CHAT):
        assert openai_history_problems(cast(list[JSON], body["messages"])) == []


def test_responses_run_with_toolcall_parse_and_bash(server: LoopbackServer, tmp_path: Path) -> None:
    server.push(
        responses(None, [("c1", "bash", '{"command": "echo hi > f.txt"}')], reasoning="plan"),
        responses(None, [("c2", "bash", f'{{"command": "{SUBMIT}"}}')]),
    )
    G = http_response_invoke("m", server.url)
    _, outcome = run(G, toolcall_parse(), local_env(cwd=str(tmp_path)), keep, prompt="t")
    assert outcome == Finished("hi")
    for body in server.bodies(RESPONSES):
        assert responses_input_problems(cast(list[JSON], body["input"])) == []
    G.close()
