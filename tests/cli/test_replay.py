"""`four replay TRAJ`: recorded turns again, in a fresh environment; where observations differ."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from four import Assistant, ToolCall, audit, run, save_trajectory, scripted_invoke
from four.cli import main
from four.cli._replay import normalise
from four.execute import local_env
from four.parse import regex_parse, toolcall_parse
from four.trajectory import load_trajectory
from four.types import RunInfo, Sink
from tests.cli._runs import cli

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"


def recorded(tmp_path: Path, replies: list[str | Assistant], *, toolcalls: bool = False) -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return run(
        scripted_invoke(replies),
        toolcall_parse() if toolcalls else regex_parse(),
        local_env(cwd=str(work)),
        save_trajectory(tmp_path / "runs"),
        prompt="a task",
    )


def test_a_deterministic_run_replays_the_same(tmp_path: Path) -> None:
    path = recorded(tmp_path, ["```bash\necho hello\n```", "```bash\nexit 3\n```", SUBMIT])
    done = cli("replay", str(path), "--cwd", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "same: 3 steps compared, 0 differ"
    assert "step 1 · $ echo hello · exit 0" in done.stderr  # progress, one line per command


def test_a_changed_world_shows_where_it_differs(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "data.txt").write_text("before\n")
    path = recorded(tmp_path, ["```bash\necho same\n```", "```bash\ncat data.txt\n```", SUBMIT])
    (tmp_path / "work" / "data.txt").write_text("after\n")
    done = cli("replay", str(path), "--cwd", str(tmp_path / "work"), "-q")
    assert done.returncode == 1
    assert done.stdout.strip() == "differs: 3 steps compared, 1 differ"
    done = cli("replay", str(path), "--cwd", str(tmp_path / "work"))
    assert "step 2 differs: $ cat data.txt" in done.stdout
    assert "  -before" in done.stdout and "  +after" in done.stdout


def test_json_and_kept_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = recorded(tmp_path, ["```bash\nls missing-file\n```", SUBMIT])
    keep = tmp_path / "replays"
    status = main(["replay", str(path), "--json", "-o", str(keep), "--cwd", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    assert report["same"] is True and report["compared_steps"] == 2
    assert report["recorded_outcome"] == report["replayed_outcome"] == "exit:task_complete"
    saved = json.loads(Path(report["replay"]).read_text())
    assert saved["info"]["components"]["cli"]["replay_of"] == str(path)


def test_tool_call_runs_replay_with_tool_calls(tmp_path: Path) -> None:
    call = ToolCall("c1", "bash", json.dumps({"command": "echo $((6 * 7))"}))
    path = recorded(tmp_path, [Assistant("", (call,)), SUBMIT], toolcalls=True)
    done = cli("replay", str(path), "--cwd", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_mini_swe_agent_trajectory(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "print two numbers"},
        {"role": "assistant", "content": "```mswea_bash_command\necho 1\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n1\n</output>"},
        {"role": "assistant", "content": "```mswea_bash_command\necho 3\n```"},
        {"role": "user", "content": '{"returncode": 0, "output": "2\\n"}'},
        {
            "role": "assistant",
            "content": "```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
        },
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
    ]
    path = tmp_path / "run.traj.json"
    path.write_text(
        json.dumps(
            {
                "trajectory_format": "mini-swe-agent-1.1",
                "info": {"exit_status": "Submitted"},
                "messages": messages,
            }
        )
    )
    done = cli("replay", str(path), "--cwd", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "step 2 differs: $ echo 3" in done.stdout
    assert "  -2" in done.stdout and "  +3" in done.stdout
    assert "step 1 differs" not in done.stdout
    assert "outcome: recorded Submitted, replayed exit:task_complete" in done.stdout


def test_nothing_to_replay(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    done = cli("replay", str(path))
    assert done.returncode == 2 and "no model turns" in done.stderr


def test_normalise_ignores_format() -> None:
    ours = "<returncode>1</returncode>\n<output>\nboom\n</output>"
    theirs = json.dumps({"returncode": 1, "output": "boom\n"})
    assert normalise(ours) == normalise(theirs) == "exit 1\nboom"


def test_a_verified_run_replays_with_its_check(
    verified: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli._runs import CHECK

    work = tmp_path / "again"
    work.mkdir()
    argv = ["replay", str(verified), "--cwd", str(work), "--check", CHECK, "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["replayed_outcome"] == report["recorded_outcome"] == "accepted"
    assert main(["replay", str(verified), "--cwd", str(tmp_path / "again"), "-q"]) == 1
    assert "step counts differ" in capsys.readouterr().out  # no check: the first claim ends it


def test_a_ctrl_c_as_the_replay_s_record_opens_waits_for_the_first_step_and_it_is_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As with ``four run``: a Ctrl-C between the record's opening and the loop's first
    step waits for that step (else the run could not seal its record), then ends the
    replay: 130, the replay saved, sealed and valid."""
    from four.cli._live import Recording

    path = recorded(tmp_path, ["```bash\necho hello\n```", SUBMIT])
    opened = Recording.open

    def open_then_ctrl_c(self: Recording, info: RunInfo, /) -> Sink[Path]:
        sink = opened(self, info)
        os.kill(os.getpid(), signal.SIGINT)  # the moment the record has opened
        return sink

    monkeypatch.setattr(Recording, "open", open_then_ctrl_c)
    keep = tmp_path / "replays"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        status = main(["replay", str(path), "-o", str(keep), "--cwd", str(tmp_path), "-q"])
    finally:
        signal.signal(signal.SIGINT, previous)
    (saved,) = keep.glob("*.json")
    assert status == 130
    assert capsys.readouterr().out.startswith(f"interrupted · saved {saved}")
    assert str(load_trajectory(saved).outcome) == "interrupted: KeyboardInterrupt"
    assert audit(saved).valid
