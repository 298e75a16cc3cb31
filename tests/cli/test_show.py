"""`four show`: a run in the terminal, readable, long outputs folded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from four import Assistant
from four.cli import main
from tests.cli._runs import cli, make_run, priced


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
    assert "check\n  Your submission was checked and not accepted" in out
    assert "format error" not in out.replace("0 format errors", "")
    assert "verdicts" in out and out.rstrip().endswith("outcome accepted")
