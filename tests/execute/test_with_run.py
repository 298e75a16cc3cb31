"""The parsers and environments inside ``run``: call ids, feedback, closing, timeouts."""

from __future__ import annotations

from collections.abc import Sequence

from four import (
    Assistant,
    Finished,
    Message,
    Outcome,
    RepeatedFormatError,
    ToolCall,
    ToolResult,
    User,
    run,
    scripted_invoke,
)
from four.execute import EXIT_SIGNAL, local_env, shell_env
from four.parse import regex_parse, toolcall_parse


def keep(messages: Sequence[Message], outcome: Outcome) -> tuple[list[Message], Outcome]:
    return list(messages), outcome


def test_call_ids_flow_into_tool_results() -> None:
    """The Responses API pairs outputs by call id: every call gets its own, in order."""
    first = Assistant(
        "",
        tool_calls=(
            ToolCall("call_1", "bash", '{"command": "echo one"}'),
            ToolCall("call_2", "python", '{"code": "1"}'),
            ToolCall("call_3", "bash", "echo not json"),
        ),
    )
    last = Assistant(
        "",
        tool_calls=(ToolCall("call_4", "bash", f'{{"command": "echo {EXIT_SIGNAL}; echo out"}}'),),
    )
    history, outcome = run(
        scripted_invoke([first, last]), toolcall_parse(), local_env(), keep, prompt="go"
    )
    assert outcome == Finished("out")
    results = [m for m in history if isinstance(m, ToolResult)]
    assert [r.tool_call_id for r in results] == ["call_1", "call_2", "call_3", "call_4"]
    assert results[0].content.endswith("one\n</output>")
    assert "no tool named 'python'" in results[1].content
    assert "not valid JSON" in results[2].content
    assert results[3].content == "out"


def test_text_mode_timeout_is_shown_and_the_run_goes_on() -> None:
    G = scripted_invoke(["```bash\nsleep 5\n```", f"```bash\necho {EXIT_SIGNAL}\necho fixed\n```"])
    history, outcome = run(G, regex_parse(), local_env(timeout=0.3), keep, prompt="go")
    assert outcome == Finished("fixed")
    observation = history[3]
    assert isinstance(observation, User) and "timed out after 0.3 s" in observation.content


def test_format_error_feedback_then_recovery() -> None:
    G = scripted_invoke(["```bash\nls\n", "I am done.", f"{EXIT_SIGNAL}\nsummary"])
    history, outcome = run(G, regex_parse(), local_env(), keep, prompt="go")
    assert outcome == Finished("summary")
    feedback = [m.content for m in history if isinstance(m, User)][1:]
    assert "never closed" in feedback[0] and "no fenced ```bash block" in feedback[1]


def test_unreadable_replies_end_as_repeated_format_error_not_success() -> None:
    G = scripted_invoke(["", "```python\nprint(1)\n```", "```bash\nls"])
    _, outcome = run(G, regex_parse(), local_env(), keep, prompt="go", max_format_errors=3)
    assert isinstance(outcome, RepeatedFormatError)


def test_run_closes_the_persistent_shell() -> None:
    env = shell_env()
    G = scripted_invoke(["```bash\ncd /tmp\n```", "```bash\npwd\n```", EXIT_SIGNAL])
    history, outcome = run(G, regex_parse(), env, keep, prompt="go")
    assert outcome == Finished("")
    assert history[5] == User(
        "<returncode>0</returncode>\n<output>\n/tmp\n</output>", "observation", 0
    )
    assert env.pid is None
