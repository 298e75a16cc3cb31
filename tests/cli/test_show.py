"""`four show`: a run in the terminal, readable, long outputs folded."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from four import Assistant, Message
from four.cli import main
from four.invoke._scripted import Scripted
from tests.cli._runs import SUBMIT, cli, make_run, priced


def test_show_prints_every_step_and_folds_long_output(sample: Path) -> None:
    done = cli("show", str(sample))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "exit:task_complete" in out
    for n in range(1, 7):
        assert f"step {n}" in out
    assert "$ ls -la" in out
    assert "exit 1" in out
    assert "format error: Format error: put your command in a ```bash block." in out
    assert "more lines …" in out and "line 30" not in out
    assert "\x1b[" not in out  # no colour codes when piped
    assert all(line == line.rstrip() for line in out.splitlines())


def test_show_full_and_one_step(sample: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(sample), "--full"]) == 0
    full = capsys.readouterr().out
    assert "line 30" in full and "more lines" not in full
    assert main(["show", str(sample), "--step", "2"]) == 0
    one = capsys.readouterr().out
    assert "step 2" in one and "step 1 " not in one and "step 3" not in one
    assert "error: cannot open <b>x</b> & 'y'" in one


def test_show_missing_step_is_a_usage_error(sample: Path) -> None:
    done = cli("show", str(sample), "--step", "9")
    assert done.returncode == 2
    assert "step 9 does not exist: the run has 6 steps" in done.stderr


def test_show_prints_markup_verbatim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_run(tmp_path, [priced("[bold red]hi[/] ```bash\n[link=x]ls[/link]\n```"), "DONE"])
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[bold red]hi[/]" in out and "[link=x]ls[/link]" in out


def test_show_reads_a_killed_run_from_its_jsonl(sample: Path) -> None:
    stream = sample.with_suffix(".jsonl")
    lines = stream.read_text().splitlines()
    cut = stream.with_name("killed.jsonl")
    cut.write_text("\n".join(lines[:6]) + '\n{"type": "mess')  # died mid-line
    done = cli("show", str(cut))
    assert done.returncode == 0, done.stderr
    assert "unfinished" in done.stdout and "step 2" in done.stdout


def test_show_reads_mini_swe_agent_trajectories(tmp_path: Path) -> None:
    path = tmp_path / "x.traj.json"
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "fix the bug"},
        {
            "role": "assistant",
            "content": "```mswea_bash_command\ncat setup.py\n```",
            "extra": {"cost": 0.01},
        },
        {"role": "user", "content": '{"returncode": 2, "output": "no such file"}'},
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
    ]
    doc = {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {
            "exit_status": "Submitted",
            "model_stats": {"instance_cost": 0.25, "api_calls": 1},
        },
        "messages": messages,
    }
    path.write_text(json.dumps(doc))
    done = cli("show", str(path))
    assert done.returncode == 0, done.stderr
    assert "$ cat setup.py" in done.stdout and "exit 2" in done.stdout
    assert "Submitted" in done.stdout and "$0.2500" in done.stdout


def test_show_truncated_reply_is_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_run(tmp_path, [Assistant("```bash\nls", finish_reason="length"), "DONE"])
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "cut off" in out and "format error: Your reply was cut off" in out


def test_show_a_verified_run(verified: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(verified)]) == 0
    out = capsys.readouterr().out
    assert "step 1 · " in out and "submitted" in out
    assert re.search(r"\ncheck · \d+ ms\n  Your submission was checked and not accepted", out)
    assert "format error" not in out.replace("0 format errors", "")
    assert "verdicts" in out and out.rstrip().endswith("outcome accepted")


# --- what the loop did, as it recorded it (real bash, a scripted model) ---------------


def _slow(text: str, seconds: float) -> Callable[[Sequence[Message]], str]:
    """A model reply that takes ``seconds`` to come."""

    def reply(history: Sequence[Message]) -> str:
        time.sleep(seconds)
        return text

    return reply


def _bash_run(tmp_path: Path, replies: Sequence[Scripted], max_steps: int = 10) -> Path:
    from four import local_env, regex_parse, run, save_trajectory, scripted_invoke

    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return run(
        scripted_invoke(replies),
        regex_parse(),
        local_env(cwd=str(work)),
        save_trajectory(tmp_path / "runs"),
        prompt="sum 1..100",
        max_steps=max_steps,
    )


def _show(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(["show", str(path), *extra]) == 0
    return capsys.readouterr().out


def test_show_lists_only_the_commands_the_loop_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = (
        "The sum is printed by:\n```bash\nseq 1 100 | paste -sd+ | bc\n```\n"
        "which should print\n```\n5050\n```\nand in Python:\n```python\nprint(sum(range(101)))\n```"
    )
    path = _bash_run(tmp_path, [reply, SUBMIT])
    out = _show(path, capsys)
    assert "$ seq 1 100 | paste -sd+ | bc" in out
    assert "$ 5050" not in out and "$ print(" not in out  # blocks the loop never ran
    assert out.count("\n$ ") == 1  # the submitting echo is no observation: not listed
    assert "observation · exit 0" in out and "  5050" in out


def test_a_command_that_mentions_the_exit_signal_is_no_submission(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mention = "```bash\necho 'I will print COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT when done'\n```"
    path = _bash_run(tmp_path, [mention, mention], max_steps=2)
    out = _show(path, capsys)
    assert "max_steps_reached" in out
    assert "submitted" not in out
    assert out.count("$ echo 'I will print COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT") == 2
    finished = _bash_run(tmp_path, [mention, SUBMIT])
    rules = [line for line in _show(finished, capsys).splitlines() if re.match(r"step \d+ ·", line)]
    assert ["submitted" in line for line in rules] == [False, True]


def test_a_step_shows_its_model_call_and_its_commands_as_timed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _bash_run(
        tmp_path,
        [_slow("```bash\nsleep 0.3; echo slept\n```", 0.4), _slow(SUBMIT, 0.2)],
    )
    out = _show(path, capsys)
    rules = [line for line in out.splitlines() if re.match(r"step \d+ ·", line)]
    first = re.search(r"step 1 · (\d+) ms \(model (\d+) ms\)", rules[0])
    assert first, rules[0]
    total, model = int(first[1]), int(first[2])
    assert 400 <= model < 650 and 700 <= total < 1400  # the first call's time is shown
    took = re.search(r"observation · exit 0 · (\d+) ms", out)
    assert took and 300 <= int(took[1]) < 700  # the command's own time
    last = re.search(r"step 2 · (\d+) ms \(model (\d+) ms\) .*submitted", rules[1])
    assert last and 200 <= int(last[2]) < 450, rules[1]  # not 0 ms


def test_show_of_a_tool_call_run_uses_the_recorded_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from four import Assistant, ToolCall, local_env, run, save_trajectory, scripted_invoke
    from four.parse import toolcall_parse

    calls = Assistant(
        "```\n5050\n```",
        (
            ToolCall("a", "bash", json.dumps({"command": "echo one"})),
            ToolCall("b", "bash", "{not json"),
            ToolCall(
                "c",
                "bash",
                json.dumps({"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT; echo 42"}),
            ),
        ),
    )
    path = run(
        scripted_invoke([calls]),
        toolcall_parse(),
        local_env(cwd=str(tmp_path)),
        save_trajectory(tmp_path / "runs"),
        prompt="p",
    )
    out = _show(path, capsys)
    assert "$ echo one" in out and "$ 5050" not in out
    assert "rejected" in out and "submission" in out and "submitted" in out
    assert "exit:task_complete" in out


def test_a_recorded_command_that_is_no_text_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _bash_run(tmp_path, ["```bash\necho hi\n```", SUBMIT])
    doc = path.read_text()
    assert doc.count('"command":"echo hi"') == 1
    broken = tmp_path / "broken.json"
    broken.write_text(doc.replace('"command":"echo hi"', '"command":5'))
    assert main(["show", str(broken)]) == 2
    assert (
        "line 14: messages[3].command: expected `str | null`, got `int`" in capsys.readouterr().err
    )


def test_resumed_steps_show_no_time_they_were_not_timed_in_this_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from four import load_trajectory, local_env, regex_parse, run, save_trajectory, scripted_invoke

    first = _bash_run(tmp_path, ["```bash\necho one\n```"], max_steps=1)
    again = run(
        scripted_invoke([_slow(SUBMIT, 0.2)]),
        regex_parse(),
        local_env(cwd=str(tmp_path)),
        save_trajectory(tmp_path / "again"),
        resume=load_trajectory(first).messages,
    )
    rules = [line for line in _show(again, capsys).splitlines() if re.match(r"step \d+ ·", line)]
    assert "model" not in rules[0] and re.search(r"\(model \d+ ms\)", rules[1]), rules
