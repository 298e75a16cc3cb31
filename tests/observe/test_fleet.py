"""``four fleet``: one page over folders made by real runs, a real batch and a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from four import local_env, regex_parse, run, save_trajectory, scripted_invoke
from four.batch import Item, RunContext, run_many
from four.cli import main
from four.observe._fleet import fleet

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
ROOT = Path(__file__).resolve().parents[2]


def _runs(folder: Path, work: Path) -> None:
    """Two finished runs (one submitted, one out of steps) by the real loop and bash."""
    work.mkdir(exist_ok=True)
    for replies, steps in (([SUBMIT], 3), (["```bash\nls\n```"] * 2, 2)):
        run(scripted_invoke(replies), regex_parse(), local_env(cwd=str(work)),
            save_trajectory(folder), prompt="p", max_steps=steps)  # fmt: skip


def _killed(folder: Path) -> Path:
    """A run whose process is SIGKILLed while its model call hangs: a stream, no seal."""
    script = textwrap.dedent(
        f"""
        import time
        from four import local_env, regex_parse, run, save_trajectory, scripted_invoke
        def hang(history):
            print("hanging", flush=True)
            time.sleep(600)
        run(scripted_invoke(["```bash\\necho one\\n```", hang]), regex_parse(), local_env(),
            save_trajectory({str(folder)!r}), prompt="p")
        """
    )
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")}) as child:  # fmt: skip
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == b"hanging"
        finally:
            os.kill(child.pid, signal.SIGKILL)
    (stream,) = [p for p in folder.glob("*.jsonl") if not p.with_suffix(".json").exists()]
    return stream


def _batch(folder: Path, work: Path) -> None:
    work.mkdir(exist_ok=True)

    def make_run(ctx: RunContext) -> Path:
        replies = [SUBMIT] if ctx.id != "b" else ["```bash\nfalse\n```"]
        return run(scripted_invoke(replies), regex_parse(), local_env(cwd=str(work)),
                   save_trajectory(ctx.output_dir), prompt=ctx.task, max_steps=1)  # fmt: skip

    run_many(make_run, [Item(i, f"task {i}") for i in "abc"], folder, max_concurrency=2)


def test_fleet_counts_each_folder_and_puts_the_stalled_one_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quiet, batch, broken = tmp_path / "quiet", tmp_path / "batch", tmp_path / "broken"
    _runs(quiet, tmp_path / "work")
    _batch(batch, tmp_path / "work")
    _runs(broken, tmp_path / "work")
    stream = _killed(broken)
    now = time.time()
    running = {s.folder.name: s for s in fleet([quiet, batch, broken], now=now, stall_after=600)}
    assert (running["broken"].running, running["broken"].stalled) == (1, 0)  # just written
    statuses = fleet([quiet, batch, broken], now=now + 5, stall_after=1)
    assert [s.folder.name for s in statuses] == ["broken", "batch", "quiet"]
    broken_s, batch_s, quiet_s = statuses
    assert (broken_s.runs, broken_s.stalled, broken_s.finished, broken_s.accepted) == (3, 1, 2, 1)
    assert broken_s.oldest_stalled is not None and broken_s.oldest_stalled.path == stream
    started = json.loads(stream.read_text().splitlines()[0])["info"]["started_at"]
    assert started <= broken_s.oldest_stalled.last_activity < started + 10  # the stream's time
    assert dict(broken_s.failed) == {"max_steps_reached": 1}
    assert (batch_s.runs, batch_s.accepted, dict(batch_s.failed)) == (
        3,
        2,
        {"max_steps_reached": 1},
    )
    assert (quiet_s.runs, quiet_s.stalled, quiet_s.running) == (2, 0, 0)
    assert main(["fleet", str(quiet), str(broken), "--stall", "0", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert page[0]["folder"] == str(broken) and page[0]["oldest_stalled"]["path"] == str(stream)
    assert main(["fleet", str(quiet), str(broken), "--stall", "0"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith(f"{broken}: 3 runs · 0 running · 1 stalled · 2 finished · 1 accepted")
    assert text[1].startswith(f"  oldest stalled: {stream}")


def test_fleet_reads_the_manifest_not_the_trajectories(tmp_path: Path) -> None:
    _batch(tmp_path, tmp_path / "work")
    for path in tmp_path.glob("runs/*/*.json"):
        path.write_text("{ not read }")  # fleet takes what the manifest says of them
    (status,) = fleet([tmp_path])
    assert (status.runs, status.accepted, status.unreadable) == (3, 2, [])


def test_a_path_that_is_no_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
