"""Stopping a batch: its budgets, Ctrl-C, closing the iterator. Running runs end with
an outcome of their own, their commands killed, and everything is recorded."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest

import four
from four import audit, run, save_trajectory, scripted_invoke
from four.batch import Item, MakeRun, RunContext, iter_runs, read_manifest, run_many
from four.execute import local_env
from four.parse import regex_parse
from four.trajectory import load_trajectory
from four.types import Message, Outcome, Recorder, RunInfo, Sink, Watch
from tests.batch._agents import alive, bash, commands_running, manifest_lines, scripted_run

ROOT = Path(__file__).resolve().parents[2]
FOUR = str(Path(four.__file__).parent)


def _token() -> str:
    return f"four-stop-{os.getpid()}-{time.monotonic_ns()}"


def test_the_cost_budget_stops_new_runs_and_ends_running_ones(tmp_path: Path) -> None:
    make_run = scripted_run([bash("sleep 0.05")], cost=0.1, max_steps=100)
    items = [Item(f"c{i}") for i in range(10)]
    results = run_many(make_run, items, tmp_path, max_concurrency=2, max_cost=1.0)
    assert len(results) == 2
    assert {r.outcome for r in results} == {"cost_limit_reached: the batch's cost limit of 1 USD"}
    assert not any(r.final for r in results)
    total = sum(r.cost for r in results)
    assert 1.0 <= total <= 1.0 + 2 * 0.1 + 1e-9  # at most one more call per running run
    # The money is spent: a second invocation with the same budget starts nothing...
    assert run_many(make_run, items, tmp_path, max_concurrency=2, max_cost=1.0) == []
    # ... and the stopped runs are not final: with more budget they run again.
    finish = scripted_run([bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")], cost=0.1)
    again = run_many(finish, items, tmp_path, max_concurrency=2, max_cost=10)
    assert len(again) == 10 and all(r.submitted for r in again)


def test_the_wall_clock_budget_kills_running_commands(tmp_path: Path) -> None:
    token = _token()
    make_run = scripted_run([bash(f"sleep 30; echo {token}")])
    start = time.monotonic()
    results = run_many(
        make_run, [Item(f"w{i}") for i in range(5)], tmp_path, max_concurrency=3, max_wall_time=1
    )
    assert time.monotonic() - start < 10
    assert len(results) == 3
    assert {r.outcome for r in results} == {
        "time_limit_reached: the batch's wall-clock limit of 1 s"
    }
    assert alive(token) == []


def test_closing_the_iterator_early_ends_and_records_the_running_runs(tmp_path: Path) -> None:
    token = _token()
    quick = Item("quick", "q")
    slow = [Item(f"s{i}", "s") for i in range(3)]

    def make_run(ctx):  # type: ignore[no-untyped-def]
        replies = (
            [bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
            if ctx.task == "q"
            else [bash(f"sleep 30; echo {token}")]
        )
        return scripted_run(replies)(ctx)

    runs = iter_runs(make_run, [quick, *slow, Item("never")], tmp_path, max_concurrency=4)
    first = next(runs)
    assert first.id == "quick"
    time.sleep(0.3)
    runs.close()
    assert alive(token) == []
    latest = read_manifest(tmp_path)
    assert sorted(latest) == ["quick", "s0", "s1", "s2"]
    for i in range(3):
        r = latest[f"s{i}"]
        assert r.outcome == "interrupted: batch closed" and not r.final
        assert r.trajectory is not None
        assert load_trajectory(r.trajectory).outcome == "interrupted: batch closed"


DRIVER = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background shell ignores it
from four.batch import Item, run_many
from tests.batch._agents import bash, scripted_run
token, out, mode = sys.argv[1:4]
command = f"sleep 60; echo {token}" if mode == "slow" else "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
try:
    run_many(scripted_run([bash(command)]), [Item(f"i{n}") for n in range(6)], out,
             max_concurrency=3)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
print("done", flush=True)
"""


def test_ctrl_c_ends_running_runs_kills_their_commands_and_records_them(tmp_path: Path) -> None:
    token = _token()
    out = tmp_path / "batch"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    with subprocess.Popen(
        [sys.executable, str(script), token, str(out), "slow"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            deadline = time.monotonic() + 30
            while len(commands_running(f"echo {token}")) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(commands_running(f"echo {token}")) == 3, proc.poll()
            start = time.monotonic()
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=30)
            assert time.monotonic() - start < 10
        finally:
            proc.kill()
    assert proc.returncode != 0
    assert stdout.strip() == "interrupted", stderr
    assert "KeyboardInterrupt" in stderr
    assert alive(token) == []
    lines = manifest_lines(out)
    assert len(lines) == 3
    for line in lines:
        assert line["outcome"] == "interrupted: batch interrupted" and line["final"] is False
        saved = load_trajectory(str(line["trajectory"]))
        assert saved.outcome == "interrupted: batch interrupted"
    # Run again: the interrupted items and those never started run; nothing is lost.
    done = subprocess.run(
        [sys.executable, str(script), token, str(out), "quick"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == "done", done.stderr
    latest = read_manifest(out)
    assert sorted(latest) == [f"i{n}" for n in range(6)]
    assert all(r.submitted and r.final for r in latest.values())
    assert len(manifest_lines(out)) == 9


@dataclass(frozen=True, slots=True)
class _CtrlCAsItOpens:
    """A run's recorder: a Ctrl-C comes the moment the run's record has opened, before
    the loop's first step."""

    inner: Recorder[Path]
    watch: Watch

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> Path:
        return self.inner(messages, outcome)

    def open(self, info: RunInfo, /) -> Sink[Path]:
        sink = self.inner.open(info)
        os.kill(os.getpid(), signal.SIGINT)  # the batch's (main) thread hears it
        deadline = time.monotonic() + 60
        while self.watch.stopped() is None:  # its stop is set before this run's first step
            assert time.monotonic() < deadline, "the batch never stopped its run"
            time.sleep(0.01)
        return sink


def _say_hi(ctx: RunContext) -> Path:
    return run(scripted_invoke([bash("echo hi")]), regex_parse(), local_env(),
               save_trajectory(ctx.output_dir), prompt=ctx.task, watch=ctx.watch)  # fmt: skip


async def _say_hi_async(ctx: RunContext) -> Path:
    return await asyncio.to_thread(_say_hi, ctx)


class _CtrlCAtCall:
    """A profile hook of the batch's (main) thread: a Ctrl-C at the ``n``-th call of a
    function of four's, or of one that four's code calls. CPython runs a signal's
    handler as a function begins, so these are the places where a real one lands."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or not (_ours(frame) or (frame.f_back and _ours(frame.f_back))):
            return
        self.calls += 1
        if self.calls == self.n:
            sys.setprofile(None)
            signal.raise_signal(signal.SIGINT)


def _ours(frame: FrameType) -> bool:
    return frame.f_code.co_filename.startswith(FOUR)


# A Ctrl-C at the very call of a file's close (or of the call that would run a coroutine
# made for the session's close) leaves the file, or that coroutine, to the collector
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
@pytest.mark.parametrize("make_run", [_say_hi, _say_hi_async], ids=["threads", "asyncio"])
def test_wherever_a_ctrl_c_lands_every_run_that_started_has_its_manifest_line(
    tmp_path: Path, make_run: MakeRun
) -> None:
    """A Ctrl-C at each place the batch's driver can hear one, in turn: the batch ends
    (or had ended), every run that started has its line in the manifest, and the folder
    can be run again at once to finish the rest."""
    items = [Item("a", "say hi"), Item("b", "say hi")]
    list(iter_runs(make_run, items, tmp_path / "warm"))  # imports done before counting
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    n = 0
    try:
        while True:
            n += 1
            out = tmp_path / str(n)
            at = _CtrlCAtCall(n)
            # a batch that waits forever is ended by a second Ctrl-C (it then fails below)
            second = threading.Timer(30, signal.raise_signal, [signal.SIGINT])
            second.start()
            sys.setprofile(at)
            try:
                list(iter_runs(make_run, items, out, max_concurrency=2))
            except KeyboardInterrupt:
                pass
            finally:
                sys.setprofile(None)
                second.cancel()
            started = {p.parent.name for p in out.glob("runs/*/*.jsonl")}
            lines = manifest_lines(out) if (out / "manifest.jsonl").exists() else []
            assert started == {line["id"] for line in lines}, f"a Ctrl-C at call {n}"
            assert all(Path(str(line["trajectory"])).exists() for line in lines)
            gc.collect()  # (a Ctrl-C at the very call that lets the folder go leaves
            # that to its lock's finalizer, as the batch's driver goes)
            list(iter_runs(make_run, items, out))  # the folder is free to resume
            assert all(r.final for r in read_manifest(out).values())
            if at.calls < n:  # the batch ended before its n-th call
                break
    finally:
        signal.signal(signal.SIGINT, previous)
    assert n > 100


def test_a_ctrl_c_between_a_run_s_opening_and_its_first_step_seals_the_run(
    tmp_path: Path,
) -> None:
    """A batch's runs are on worker threads, where no Ctrl-C lands: the batch ends them
    through their watch, which each run asks at its first step, so a run whose record
    had just opened is sealed ``interrupted: batch interrupted`` (and audits valid)."""

    def make_run(ctx: RunContext) -> Path:
        return run(scripted_invoke([bash("echo hi")]), regex_parse(), local_env(),
                   _CtrlCAsItOpens(save_trajectory(ctx.output_dir), ctx.watch),
                   prompt=ctx.task, watch=ctx.watch)  # fmt: skip

    out = tmp_path / "batch"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    try:
        with pytest.raises(KeyboardInterrupt):
            list(iter_runs(make_run, [Item("a", "say hi")], out))
    finally:
        signal.signal(signal.SIGINT, previous)
    (line,) = manifest_lines(out)
    assert line["outcome"] == "interrupted: batch interrupted" and line["final"] is False
    saved = Path(str(line["trajectory"]))
    assert saved.suffix == ".json" and audit(saved).valid
    assert load_trajectory(saved).outcome == "interrupted: batch interrupted"
