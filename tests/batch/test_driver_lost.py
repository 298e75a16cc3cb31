"""A batch whose driver was killed, run again on the same folder: every item ends with
exactly one result, and what the lost attempts spent is counted once (their streams)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from four.batch import Item, RunContext, run_many
from four.checks import audit
from tests.batch._agents import alive, bash, kill_all, manifest_lines, scripted_run
from tests.batch.conftest import ROOT, WORKER_PATH

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

DRIVER = """
import sys
from four.batch import Item, run_many
from tests.batch._agents import bash, scripted_run
token, out = sys.argv[1:3]
make_run = scripted_run([bash("echo one"), bash(f"sleep 60; echo {token}")], cost=0.25)
run_many(make_run, [Item(f"i{n}") for n in range(3)], out, max_concurrency=3)
"""


def test_a_killed_drivers_attempts_are_counted_once_when_the_batch_runs_again(
    tmp_path: Path,
) -> None:
    token = f"driverlost-{time.monotonic_ns()}"
    out = tmp_path / "out"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    with subprocess.Popen(
        [sys.executable, str(script), token, str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": WORKER_PATH},
        start_new_session=True,
    ) as proc:
        deadline = time.monotonic() + 60
        while len(alive(f"echo {token}")) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver (its commands, in sessions
        proc.wait(timeout=30)  # of their own, are orphaned: what `four watch` finds)
    kill_all(token)
    assert not (out / "manifest.jsonl").exists() or manifest_lines(out) == []
    # Each lost attempt made two model calls (0.25 each) that its stream records.
    again = run_many(scripted_run([bash(SUBMIT)], cost=0.1), [Item(f"i{n}") for n in range(3)], out)
    assert sorted(r.id for r in again) == ["i0", "i1", "i2"]
    for r in again:
        assert r.submitted and abs(r.cost - 0.6) < 1e-9, r
        (lost,) = r.lost_streams
        assert lost.startswith(f"runs/{r.id}/") and audit(out / lost).status == "unfinished"
    # Run once more: nothing runs, nothing is counted again.
    assert run_many(scripted_run([bash(SUBMIT)]), [Item(f"i{n}") for n in range(3)], out) == []
    assert abs(sum(float(str(line["cost"])) for line in manifest_lines(out)) - 1.8) < 1e-9


def _never(ctx: RunContext) -> Path:
    raise AssertionError(f"{ctx.id} ran again")


def test_a_run_that_ended_without_its_manifest_line_is_taken_not_run_again(
    tmp_path: Path,
) -> None:
    make_run = scripted_run([bash(SUBMIT)], cost=0.5)
    first = run_many(make_run, [Item("a"), Item("b")], tmp_path)
    assert all(r.submitted for r in first)
    # The driver was killed after "b" sealed its trajectory, before its manifest line.
    lines = (tmp_path / "manifest.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["id"] != "b"]
    (tmp_path / "manifest.jsonl").write_text("".join(kept))
    (b,) = run_many(_never, [Item("a"), Item("b")], tmp_path)
    (was,) = [r for r in first if r.id == "b"]
    assert (b.id, b.outcome, b.trajectory, b.cost) == ("b", was.outcome, was.trajectory, 0.5)
    assert b.error is not None and "taken" in b.error
    assert len(manifest_lines(tmp_path)) == 2
