"""four.observe.tags: what went wrong in a run, by rule, from what the loop recorded."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from four import (
    Assistant,
    Message,
    ToolCall,
    ToolResult,
    User,
    regex_parse,
    run,
    save_trajectory,
    scripted_invoke,
)
from four.cli import main
from four.observe import tags
from four.types import EXIT_SIGNAL
from tests._doubles import FakeEnv


def _obs(code: int, text: str = "") -> User:
    return User(
        f"<returncode>{code}</returncode>\n<output>\n{text}\n</output>", "observation", code
    )


def test_a_small_model_running_the_exit_signal_as_a_command_seven_times() -> None:
    reply = Assistant(f"```bash\n{EXIT_SIGNAL}\n```")
    seen = _obs(127, f"bash: line 1: {EXIT_SIGNAL}: command not found")
    turn: list[Message] = [reply, seen]
    found = tags([User("task", "task"), *turn * 7], "max_steps_reached")
    assert found == {
        "repeated_action_loop": 7,
        "exit_127_storm": 7,
        "exit_signal_run_as_command": 7,
        "budget_exhausted": 1,
    }


def test_format_errors_count_only_in_a_row() -> None:
    bad: list[Message] = [Assistant("prose"), User("Format error: ...", "format_error")]
    good: list[Message] = [Assistant("```bash\nls\n```"), _obs(0, "a")]
    assert "format_error_storm" not in tags([*bad, *bad, *good, *bad], "exit:task_complete")
    assert tags([*bad, *bad, *bad], "repeated_format_error: x")["format_error_storm"] == 3


def test_rejected_tool_calls_timeouts_feedback_and_context_overflow() -> None:
    call = ToolCall("c1", "bash", "{}")
    rejected: list[Message] = [Assistant("", (call,)), ToolResult("c1", "bad", "bash", "rejected")]
    history: list[Message] = [
        *rejected * 3,
        Assistant("```bash\nsleep 99\n```"),
        _obs(124, "timed out"),
        Assistant(EXIT_SIGNAL),
        User("Your submission was checked and not accepted: ...", "feedback"),
    ]
    found = tags(history, "model_error: context_window: too long")
    assert found == {
        "format_error_storm": 3,
        "timeouts": 1,
        "context_overflow": 1,
        "submission_rejected": 1,
    }


def test_a_varied_successful_run_has_no_tag() -> None:
    history: list[Message] = [User("task", "task")]
    for i in range(5):
        history += [Assistant(f"```bash\necho {i}\n```"), _obs(0, str(i))]
    assert tags(history, "exit:task_complete") == {}


def test_four_stats_counts_the_runs_of_each_tag(tmp_path: Path) -> None:
    out = tmp_path
    loop = ["```bash\nls\n```"] * 4
    for _ in range(2):  # two runs stuck in the same action
        run(scripted_invoke(loop), regex_parse(), FakeEnv(), save_trajectory(out), "s", "t", 4)
    run(scripted_invoke([EXIT_SIGNAL]), regex_parse(), FakeEnv(), save_trajectory(out), "s", "t")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["stats", str(out), "--json"]) == 0
    summary = json.loads(printed.getvalue())
    assert summary["runs"] == 3
    assert summary["tags"] == {"repeated_action_loop": 2, "budget_exhausted": 2}
