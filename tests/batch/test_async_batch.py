"""Batches of async runs (``async def make_run`` awaiting ``four.arun``): many at once on
one event loop, with the manifest, resume, budgets and Ctrl-C of the thread pool; and the
thread pool's bound on its threads."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from four import Finished
from four.batch import AsyncPool, Item, RunContext, ThreadPool, iter_runs, run_many
from four.trajectory import load_trajectory
from tests.batch._agents import alive, async_scripted_run, bash, manifest_lines

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")


def test_hundreds_of_async_runs_at_once_each_recorded_then_skipped(tmp_path: Path) -> None:
    """300 runs of 3 model calls (0.3 s each) at once: they overlap on one loop."""
    make_run = async_scripted_run([bash("true"), bash("true"), SUBMIT], delay=0.3)
    items = [Item(f"t{i}", f"task {i}") for i in range(300)]
    started = time.monotonic()
    results = run_many(make_run, items, tmp_path, max_concurrency=300)
    assert time.monotonic() - started < 60  # 300 runs one after another would take 270 s
    assert sorted(r.id for r in results) == sorted(i.id for i in items)
    assert {r.outcome for r in results} == {"exit:task_complete"}
    assert all(r.steps == 3 and r.final for r in results)
    assert len(manifest_lines(tmp_path)) == 300
    assert run_many(make_run, items, tmp_path, max_concurrency=300) == []  # resumed: all done
    trajectory = load_trajectory(results[0].trajectory)  # type: ignore[arg-type]
    assert trajectory.outcome == "exit:task_complete"


def test_an_async_make_run_goes_to_the_async_pool_and_a_plain_one_to_threads(
    tmp_path: Path,
) -> None:
    seen: list[str] = []

    async def async_make_run(ctx: RunContext) -> Finished:
        seen.append(threading.current_thread().name)
        return Finished("ok")

    def make_run(ctx: RunContext) -> Finished:
        seen.append(threading.current_thread().name)
        return Finished("ok")

    run_many(async_make_run, [Item("a")], tmp_path / "a")
    run_many(make_run, [Item("b")], tmp_path / "b")
    run_many(async_make_run, [Item("c")], tmp_path / "c", pool=ThreadPool())  # a loop per run
    assert seen[0] == "four-batch-loop"
    assert seen[1].startswith("four-run") and seen[2].startswith("four-run")


def test_the_run_time_limit_kills_an_async_runs_command(tmp_path: Path) -> None:
    token = uuid.uuid4().hex[:12]
    make_run = async_scripted_run([bash(f"sleep 60; echo {token}")])
    started = time.monotonic()
    (result,) = run_many(make_run, [Item("slow")], tmp_path, pool=AsyncPool(), time_limit=1.0)
    assert time.monotonic() - started < 20
    assert result.outcome.startswith("time_limit_reached")
    assert alive(token) == []


def test_the_thread_pool_runs_at_most_max_threads_at_once(tmp_path: Path) -> None:
    lock = threading.Lock()
    now = peak = 0

    def make_run(ctx: RunContext) -> Finished:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.1)
        with lock:
            now -= 1
        return Finished()

    results = run_many(make_run, [Item(f"i{n}") for n in range(12)], tmp_path,
                       pool=ThreadPool(max_threads=4), max_concurrency=100)  # fmt: skip
    assert len(results) == 12 and peak == 4


DRIVER = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background shell ignores it
from four.batch import Item, run_many
from tests.batch._agents import async_scripted_run, bash
token, out = sys.argv[1:3]
try:
    run_many(async_scripted_run([bash(f"sleep 60; echo {token}")]),
             [Item(f"i{n}") for n in range(6)], out, max_concurrency=3)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""


def test_ctrl_c_ends_running_async_runs_kills_their_commands_and_records_them(
    tmp_path: Path,
) -> None:
    token = uuid.uuid4().hex[:12]
    out = tmp_path / "batch"
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    with subprocess.Popen(
        [sys.executable, str(script), token, str(out)], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while len(alive(f"echo {token}")) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(alive(f"echo {token}")) >= 3, proc.poll()
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert stdout.strip() == "interrupted", stderr
    assert alive(token) == []
    lines = manifest_lines(out)
    assert len(lines) == 3
    for line in lines:
        assert line["outcome"] == "interrupted: batch interrupted" and line["final"] is False


def test_iter_runs_of_async_runs_yields_each_as_it_ends(tmp_path: Path) -> None:
    make_run = async_scripted_run([SUBMIT], delay=0.05)
    ids = [r.id for r in iter_runs(make_run, [Item("x"), Item("y")], tmp_path)]
    assert sorted(ids) == ["x", "y"]


def test_the_collector_is_raised_while_an_async_batch_runs_then_put_back(
    tmp_path: Path,
) -> None:
    seen: list[tuple[int, int, int]] = []

    async def make_run(ctx: RunContext) -> Finished:
        seen.append(gc.get_threshold())
        return Finished("ok")

    before = gc.get_threshold()
    run_many(make_run, [Item("a")], tmp_path / "a")
    assert seen[-1] == (max(before[0], 50_000), *before[1:])
    assert gc.get_threshold() == before
    run_many(make_run, [Item("b")], tmp_path / "b", pool=AsyncPool(gc_threshold=None))
    assert seen[-1] == before == gc.get_threshold()
    run_many(make_run, [Item("c")], tmp_path / "c", pool=AsyncPool(gc_threshold=900_000))
    assert seen[-1][0] == 900_000 and gc.get_threshold() == before


def test_a_wrong_gc_threshold_is_one_clear_error() -> None:
    for wrong in (0, -5, 1.5, "big"):
        with pytest.raises(ValueError, match="AsyncPool: gc_threshold must be a whole number"):
            AsyncPool(gc_threshold=wrong)  # type: ignore[arg-type]


def test_the_plain_parts_of_async_runs_overlap_past_the_default_executors_threads(
    tmp_path: Path,
) -> None:
    """``arun`` runs a plain V2 (the sandbox, docker) in a worker thread: 40 runs whose
    commands block all run them at once, not asyncio's default few threads at a time."""
    from returns.result import Success

    from four import Action, Observation, arun, save_trajectory, scripted_invoke
    from four.parse import regex_parse

    lock = threading.Lock()
    now = peak = 0

    def V2(action: Action, /) -> Success[Observation]:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.3)  # a blocking command
        with lock:
            now -= 1
        return Success(Observation("<returncode>0</returncode>", 0))

    async def make_run(ctx: RunContext) -> Path:
        G = scripted_invoke([bash("true")])
        return await arun(G, regex_parse(), V2, save_trajectory(ctx.output_dir),
                          prompt=ctx.task, max_steps=1, watch=ctx.watch)  # fmt: skip

    results = run_many(make_run, [Item(f"i{n}") for n in range(40)], tmp_path,
                       pool=AsyncPool(), max_concurrency=40)  # fmt: skip
    assert len(results) == 40 and all(r.steps == 1 and r.trajectory for r in results)
    assert peak >= 32, peak  # asyncio's default executor has min(32, CPUs + 4) threads
