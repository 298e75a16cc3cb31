"""``AsyncPool(processes=2)``: an async batch spread over worker processes behaves as the
in-process pool does (results, manifest, resume, budgets, time limits, Ctrl-C), with what
processes add: make_run must pickle, a dead worker does not hang the batch, and no
worker outlives its batch, its Ctrl-C, or its batch's process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from four.batch import AsyncPool, Item, RunContext, iter_runs, read_manifest, run_many
from four.trajectory import load_trajectory
from tests.batch._agents import CannotStart, alive, bash, commands_running, manifest_lines
from tests.batch._spawnable import AsyncScriptedRun

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
TWO = AsyncPool(processes=2)


def _pids(out: Path) -> dict[str, int]:
    """The worker pid each run wrote (``AsyncScriptedRun``), by item id."""
    return {p.parent.name: int(p.read_text()) for p in (out / "runs").glob("*/pid")}


def _gone(pid: int) -> bool:
    """The process ended (a zombie left to a reaper that is not us counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def _wait_until(condition: Callable[[], object], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_runs_spread_over_two_workers_are_recorded_then_skipped(tmp_path: Path) -> None:
    make_run = AsyncScriptedRun((bash("true"), SUBMIT), delay=0.2)
    items = [Item(f"t{i}", f"task {i}", {"n": i}) for i in range(40)]
    results = run_many(make_run, items, tmp_path, pool=TWO, max_concurrency=40)
    assert sorted(r.id for r in results) == sorted(i.id for i in items)
    assert {r.outcome for r in results} == {"exit:task_complete"}
    assert all(r.steps == 2 and r.final for r in results)
    assert {r.id: r.fields for r in results} == {i.id: {"n": i.fields["n"]} for i in items}
    pids = _pids(tmp_path)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
    # the least loaded worker takes each run: half each, as all start at once
    assert sorted(list(pids.values()).count(p) for p in set(pids.values())) == [20, 20]
    assert len(manifest_lines(tmp_path)) == 40  # written here, one line per run
    trajectory = load_trajectory(results[0].trajectory)  # type: ignore[arg-type]
    assert trajectory.outcome == "exit:task_complete"
    assert run_many(make_run, items, tmp_path, pool=TWO) == []  # resumed: all done
    assert all(_gone(pid) for pid in set(pids.values()))  # the workers ended with it


def test_at_most_max_concurrency_runs_at_once_over_all_workers(tmp_path: Path) -> None:
    make_run = AsyncScriptedRun((bash("sleep 0.3"), SUBMIT))
    items = [Item(f"c{i}") for i in range(9)]
    seen_running: list[int] = []
    results = run_many(make_run, items, tmp_path, pool=TWO, max_concurrency=3,
                       on_progress=lambda p: seen_running.append(p.running))  # fmt: skip
    assert len(results) == 9 and all(r.submitted for r in results)
    assert max(seen_running) == 3


def test_make_run_that_does_not_pickle_is_refused_at_once(tmp_path: Path) -> None:
    async def make_run(ctx: RunContext) -> None:  # nested: no worker could import it
        return None

    started = time.monotonic()
    with pytest.raises(TypeError, match=r"make_run must pickle .*module's top level"):
        run_many(make_run, [Item("a")], tmp_path, pool=TWO)
    assert time.monotonic() - started < 5


def test_make_run_that_a_worker_cannot_load_is_refused_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(TypeError, match=r"worker process \d cannot load make_run .*no module"):
        run_many(CannotStart("no module here"), [Item("a")], tmp_path, pool=TWO)
    assert time.monotonic() - started < 20
    assert not (tmp_path / "runs").exists()  # nothing ran


def test_processes_is_a_whole_number_of_at_least_one() -> None:
    for wrong in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="processes must be a whole number >= 1"):
            AsyncPool(processes=wrong)  # type: ignore[arg-type]
    assert AsyncPool().processes == 1


def test_the_run_time_limit_kills_a_workers_command(tmp_path: Path) -> None:
    token = uuid.uuid4().hex[:12]
    make_run = AsyncScriptedRun((bash(f"sleep 60; echo {token}"),))
    started = time.monotonic()
    results = run_many(make_run, [Item("s1"), Item("s2")], tmp_path, pool=TWO, time_limit=1.0)
    assert time.monotonic() - started < 20
    assert {r.outcome for r in results} == {"time_limit_reached: the run's wall-clock limit of 1 s"}
    assert alive(token) == []


def test_the_cost_budget_over_all_workers_stops_every_run(tmp_path: Path) -> None:
    make_run = AsyncScriptedRun((bash("sleep 0.2"),), cost=0.1, max_steps=100)
    items = [Item(f"c{i}") for i in range(10)]
    seen_cost: list[float] = []
    results = run_many(make_run, items, tmp_path, pool=TWO, max_concurrency=2, max_cost=1.0,
                       on_progress=lambda p: seen_cost.append(p.cost))  # fmt: skip
    assert len(results) == 2 and len(set(_pids(tmp_path).values())) == 2  # one on each
    assert {r.outcome for r in results} == {"cost_limit_reached: the batch's cost limit of 1 USD"}
    assert not any(r.final for r in results)
    # each worker hears of the other's cost every quarter second: a few calls over, at most
    assert 1.0 <= sum(r.cost for r in results) <= 2.0
    assert any(0 < c < 1.0 for c in seen_cost)  # the workers' live cost, seen while running
    assert run_many(make_run, items, tmp_path, pool=TWO, max_cost=1.0) == []  # spent


def test_the_wall_clock_budget_kills_every_workers_commands(tmp_path: Path) -> None:
    token = uuid.uuid4().hex[:12]
    make_run = AsyncScriptedRun((bash(f"sleep 30; echo {token}"),))
    items = [Item(f"w{i}") for i in range(5)]
    started = time.monotonic()
    results = run_many(make_run, items, tmp_path, pool=TWO, max_concurrency=4, max_wall_time=1)
    assert time.monotonic() - started < 15
    assert len(results) == 4 and len(set(_pids(tmp_path).values())) == 2
    assert {r.outcome for r in results} == {
        "time_limit_reached: the batch's wall-clock limit of 1 s"
    }
    assert alive(token) == []
    for r in results:
        assert load_trajectory(r.trajectory).outcome == r.outcome  # type: ignore[arg-type]


def test_closing_the_iterator_early_ends_and_records_the_workers_runs(tmp_path: Path) -> None:
    token = uuid.uuid4().hex[:12]
    slow = AsyncScriptedRun((bash(f"sleep 30; echo {token}"),))
    make_run = _Either(AsyncScriptedRun((SUBMIT,)), slow, first=("quick",))
    items = [Item("quick"), *(Item(f"s{i}") for i in range(3)), Item("never")]
    runs = iter_runs(make_run, items, tmp_path, pool=TWO, max_concurrency=4)
    assert next(runs).id == "quick"
    assert _wait_until(lambda: len(commands_running(f"echo {token}")) == 3, 30)
    runs.close()
    assert alive(token) == []
    latest = read_manifest(tmp_path)
    assert sorted(latest) == ["quick", "s0", "s1", "s2"]
    for i in range(3):
        r = latest[f"s{i}"]
        assert r.outcome == "interrupted: batch closed" and not r.final
        assert load_trajectory(r.trajectory).outcome == "interrupted: batch closed"  # type: ignore[arg-type]
    assert all(_gone(pid) for pid in _pids(tmp_path).values())


def test_a_worker_killed_hands_back_its_runs_crashed_and_the_other_goes_on(
    tmp_path: Path,
) -> None:
    token = uuid.uuid4().hex[:12]
    # Item "k0" sleeps in its command (its model call cost 0.25); the others each take a
    # few steps of 0.1 s.
    make_run = AsyncScriptedRun((bash(f"sleep 30; echo {token}"), SUBMIT), cost=0.25)
    quick = AsyncScriptedRun((bash("true"), bash("true"), SUBMIT), delay=0.1)
    items = [Item("k0"), *(Item(f"q{i}") for i in range(7))]
    either = _Either(make_run, quick, first=("k0",))
    runs = iter_runs(either, items, tmp_path, pool=TWO, max_concurrency=2)
    results = []
    killed = None
    for result in runs:
        results.append(result)
        if killed is None:  # k0's worker: kill it while k0's command runs
            assert _wait_until(lambda: "k0" in _pids(tmp_path) and alive(token), 30)
            time.sleep(1.0)  # a few of the worker's reports (each 0.25 s), its spend in them
            killed = _pids(tmp_path)["k0"]
            os.kill(killed, signal.SIGKILL)
    by_id = {r.id: r for r in results}
    assert sorted(by_id) == sorted(i.id for i in items)
    crashed = by_id.pop("k0")
    assert crashed.outcome.startswith("crashed: batch: worker process ")
    assert "died (killed by SIGKILL) with the run in flight" in crashed.outcome
    assert not crashed.final
    # What it spent before its worker died still counts (for the budget, in the manifest).
    assert (crashed.cost, crashed.prompt_tokens) == (0.25, 10)
    (line,) = [x for x in manifest_lines(tmp_path) if x["id"] == "k0"]
    assert line["cost"] == 0.25
    assert all(r.submitted for r in by_id.values())  # the other worker went on
    assert alive(token) == []  # the dead worker's command was killed after it
    # Run again: the crashed item is tried again (and this time it is quick).
    again = run_many(quick, items, tmp_path, pool=TWO)
    assert [(r.id, r.submitted) for r in again] == [("k0", True)]


@dataclass(frozen=True)
class _Either:
    """make_run: ``one`` for the items named in ``first``, ``other`` for the rest."""

    one: AsyncScriptedRun
    other: AsyncScriptedRun
    first: tuple[str, ...]

    async def __call__(self, ctx: RunContext) -> Path:
        return await (self.one if ctx.id in self.first else self.other)(ctx)


DRIVER = """
import signal, sys
from four.batch import AsyncPool, Item, run_many
from tests.batch._spawnable import AsyncScriptedRun
from tests.batch._agents import bash
if __name__ == "__main__":  # (the workers import this file too)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a background shell ignores it
    token, out, mode = sys.argv[1:4]
    command = f"sleep 60; echo {token} {{id}}" if mode == "slow" else "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    try:
        run_many(AsyncScriptedRun((bash(command),)), [Item(f"i{n}") for n in range(6)], out,
                 pool=AsyncPool(processes=2), max_concurrency=4)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        raise
    print("done", flush=True)
"""


def _commands_up(token: str, runs: int) -> bool:
    """The first ``runs`` items of the driver's batch are in their slow command."""
    return all(alive(f"echo {token} i{n}") for n in range(runs))


def _driver(tmp_path: Path, token: str, mode: str) -> subprocess.Popen[str]:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    return subprocess.Popen(
        [sys.executable, str(script), token, str(tmp_path / "batch"), mode],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # a process group of its own, as a terminal's job
    )  # fmt: skip


def test_ctrl_c_at_the_terminal_ends_every_workers_runs_and_records_them(
    tmp_path: Path,
) -> None:
    token = uuid.uuid4().hex[:12]
    out = tmp_path / "batch"
    with _driver(tmp_path, token, "slow") as proc:
        try:
            assert _wait_until(lambda: _commands_up(token, 4), 30), proc.poll()
            pids = set(_pids(out).values())
            assert len(pids) == 2
            os.killpg(proc.pid, signal.SIGINT)  # the whole group, as the terminal does
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode != 0
    assert stdout.strip() == "interrupted", stderr
    assert "KeyboardInterrupt" in stderr
    assert alive(token) == []
    assert all(_gone(pid) for pid in pids)
    lines = manifest_lines(out)
    assert len(lines) == 4
    for line in lines:
        assert line["outcome"] == "interrupted: batch interrupted" and line["final"] is False
        assert load_trajectory(str(line["trajectory"])).outcome == line["outcome"]
    # Run again: the interrupted items and those never started run; nothing is lost.
    with _driver(tmp_path, token, "quick") as again:
        stdout, stderr = again.communicate(timeout=60)
    assert stdout.strip() == "done", stderr
    latest = read_manifest(out)
    assert sorted(latest) == [f"i{n}" for n in range(6)]
    assert all(r.submitted and r.final for r in latest.values())


def test_workers_whose_batch_process_is_killed_end_their_runs_and_exit(tmp_path: Path) -> None:
    token = uuid.uuid4().hex[:12]
    out = tmp_path / "batch"
    with _driver(tmp_path, token, "slow") as proc:
        try:
            assert _wait_until(lambda: _commands_up(token, 4), 30), proc.poll()
            pids = set(_pids(out).values())
            proc.kill()  # SIGKILL: no cleanup of its own
            proc.wait(10)
            assert _wait_until(lambda: all(_gone(p) for p in pids), 20)
        finally:
            proc.kill()
    assert alive(token) == []
    streams = list((out / "runs").glob("*/*.json"))
    assert len(streams) == 4  # each run sealed its trajectory on its way out
    for sealed in streams:
        assert load_trajectory(sealed).outcome == "interrupted: the batch's process died"
