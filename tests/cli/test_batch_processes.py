"""``four batch --processes N``: the agent of ``four run`` under ``four.arun`` on the
async pool (one event loop here, or N worker processes), against the loopback model
server; every task recorded, a rerun skipping them, bad combinations refused."""

from __future__ import annotations

import argparse
import gc
import json
import pickle
from pathlib import Path

import pytest

from four.batch import read_manifest
from four.cli import main
from four.cli._batch import AsyncCommandRun, batch_command
from tests._server import Answer, LoopbackServer, Request, chat
from tests.batch._agents import StepModel, batch_args, serve_many, write_tasks

VARIABLES = ("FOUR_MODEL", "FOUR_API_BASE", "FOUR_ENV", "FOUR_WORKERS", "FOUR_RAY",
             "FOUR_PROCESSES", "FOUR_BATCH_DIR")  # fmt: skip


def _served(tasks: Path, url: str, out: Path, *more: str) -> list[str]:
    """``four batch`` of ``tasks`` against the loopback model at ``url`` (the words'
    fifth), into ``out``."""
    return [str(tasks), "--model", "test-model", "--api-base", url, "-o", str(out), *more]


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


# litellm's async clients of the event loop are closed by the pool; its sync ones
# (none here) would be dropped unclosed: nothing of ours.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("processes", ["1", "2"])
def test_four_batch_on_the_async_pool_runs_every_task_and_a_rerun_skips_them(
    processes: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 5)
    out = tmp_path / "out"
    model = StepModel(steps=3)
    with serve_many(model) as server:
        words = _served(tasks, server.url, out, "-w", "5", "--processes", processes)
        assert batch_command(batch_args(*words)) == 0
        lines = capsys.readouterr()
        assert "5 runs: exit:task_complete 5" in lines.out
        latest = read_manifest(out)
        assert sorted(latest) == [f"t{i}" for i in range(5)]
        assert all(r.submitted and r.final and r.steps == 3 for r in latest.values())
        assert latest["t3"].fields == {"repo": "r3"}
        # Every model call went to the server (3 per task), the commands ran in bash.
        assert model.calls == 15
        saved = json.loads(Path(latest["t1"].trajectory or "").read_text())
        assert "task 1" in json.dumps(saved)
        assert batch_command(batch_args(*words, "--json")) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["ran"] == 0 and summary["unfinished"] == []
        assert model.calls == 15  # nothing ran again
    gc.collect()


def test_the_async_make_run_awaits_the_model_and_the_environment(tmp_path: Path) -> None:
    """What the worker processes unpickle: the model call and ``--env local`` awaited."""
    import asyncio

    from four.batch import Item, RunContext
    from four.cli._batch import awaited_env, awaited_invoke
    from four.invoke._budget import AsyncWrapped

    make_run = pickle.loads(pickle.dumps(_command(tmp_path)))
    assert isinstance(make_run, AsyncCommandRun)
    assert asyncio.iscoroutinefunction(type(make_run).__call__)
    agent = make_run.agent(RunContext(Item("a", "task a"), tmp_path, _Unwatched()))
    G = awaited_invoke(agent.G)
    assert isinstance(G, AsyncWrapped) and type(G.wrapper).__name__ == "BudgetInvoke"
    assert type(awaited_env(agent.V2)).__name__ == "AsyncNoteRepeats"


class _Unwatched:
    def beat(self) -> None:
        pass

    def stopped(self) -> None:
        return None


def _command(tmp_path: Path) -> AsyncCommandRun:
    from four.cli._options import options

    args = batch_args("tasks.jsonl", "--model", "m", "--api-base", "http://127.0.0.1:9/v1",
                 "--cost-limit", "1")  # fmt: skip
    opts = options(
        argparse.Namespace(**{**vars(args), "task": "(each)", "output_dir": str(tmp_path)})
    )
    return AsyncCommandRun(opts, "openai/m", "none", "system")


MODEL = ["--model", "m", "--api-base", "http://127.0.0.1:9/v1"]


@pytest.mark.parametrize(
    ("words", "variables", "message"),
    [
        ([*MODEL, "--processes", "2", "--ray", "auto"], {}, "--processes runs here, --ray on"),
        ([*MODEL, "--processes", "0"], {}, "--processes must be at least 1"),
        (MODEL, {"FOUR_PROCESSES": "2", "FOUR_RAY": "auto"}, "FOUR_RAY and FOUR_PROCESSES"),
        (MODEL, {"FOUR_PROCESSES": "-1"}, "FOUR_PROCESSES='-1' must be at least 1"),
        (["--local", "--processes", "2"], {}, "--local serves its model in each process"),
    ],
)
def test_senseless_pool_combinations_are_one_line_usage_errors(
    words: list[str],
    variables: dict[str, str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    tasks = write_tasks(tmp_path / "tasks.jsonl", 1)
    out = tmp_path / "out"
    assert main(["batch", str(tasks), "-o", str(out), *words]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("four batch: error: ") and message in line
    assert not out.exists()


def test_a_flag_overrides_the_other_pools_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from four.cli._batch import batch_options

    monkeypatch.setenv("FOUR_RAY", "auto")
    assert batch_options(batch_args("t.jsonl", "--processes", "3")).ray is None
    monkeypatch.setenv("FOUR_PROCESSES", "4")
    assert batch_options(batch_args("t.jsonl", "--ray", "local")).processes is None
    monkeypatch.delenv("FOUR_RAY")
    assert batch_options(batch_args("t.jsonl")).processes == 4


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_on_the_async_pool_a_batch_budget_stops_the_runs_and_a_rerun_finishes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", 3)
    out = tmp_path / "out"
    slow = StepModel(steps=40, delay=0.1)  # 4 s a run: the budget stops them first
    with serve_many(slow) as server:
        words = _served(tasks, server.url, out, "--processes", "1", "--json")
        assert batch_command(batch_args(*words, "--batch-timeout", "1")) == 1
        summary = json.loads(capsys.readouterr().out)
        assert sorted(summary["unfinished"]) == ["t0", "t1", "t2"]
        latest = read_manifest(out)
        assert all(not r.final for r in latest.values())
        assert all("the batch's wall-clock limit of 1 s" in r.outcome for r in latest.values())
        assert all(r.trajectory and Path(r.trajectory).is_file() for r in latest.values())
    with serve_many(StepModel(steps=2)) as server:
        words[4] = server.url
        assert batch_command(batch_args(*words)) == 0
        assert json.loads(capsys.readouterr().out)["ran"] == 3
    assert all(r.final for r in read_manifest(out).values())
    gc.collect()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_on_the_async_pool_exits_130_with_the_runs_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import signal
    import threading

    tasks = write_tasks(tmp_path / "tasks.jsonl", 2)
    out = tmp_path / "out"
    with serve_many(StepModel(steps=100, delay=0.05)) as server:
        words = _served(tasks, server.url, out, "--processes", "1", "--json")
        timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            assert batch_command(batch_args(*words)) == 130
        finally:
            timer.cancel()
    summary = json.loads(capsys.readouterr().out)
    assert summary["interrupted"] and sorted(summary["unfinished"]) == ["t0", "t1"]
    latest = read_manifest(out)
    assert sorted(latest) == ["t0", "t1"]
    assert all(r.outcome.startswith("interrupted") and not r.final for r in latest.values())
    gc.collect()


def _sleeper(request: Request) -> Answer:
    return chat("```bash\nsleep 60\n```")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("env", ["local", "persistent"])
def test_timeout_on_the_async_pool_kills_the_awaited_command(
    env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    tasks = write_tasks(tmp_path / "tasks.jsonl", 2)
    out = tmp_path / "out"
    with LoopbackServer(_sleeper) as server:
        words = _served(tasks, server.url, out, "--env", env, "--processes", "1",
                        "--timeout", "1", "--json")  # fmt: skip
        start = time.monotonic()
        assert batch_command(batch_args(*words)) == 0
        assert time.monotonic() - start < 30  # not the 60 s of the command
    latest = read_manifest(out)
    assert sorted(latest) == ["t0", "t1"]
    assert all(r.outcome.startswith("time_limit_reached") and r.final for r in latest.values())
    gc.collect()
