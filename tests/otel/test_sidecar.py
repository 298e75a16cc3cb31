"""The spans are sent by a child process (``four.otel._sidecar``): a program that ends
right after its run has sent them all; a child that dies loses spans, counted and said
once, and the runs go on as they were."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from returns.result import Result, Success

from four import regex_parse, run, save_trajectory, scripted_invoke
from four.execute import local_env
from four.otel import otel_watch
from four.otel._sidecar import Sidecar
from four.trajectory import load_trajectory
from four.types import Action, ExecutionError, Observation, Submitted
from tests.otel.conftest import Receiver, nowhere

PROGRAM = textwrap.dedent("""
    import sys
    from four import local_env, regex_parse, run, save_trajectory, scripted_invoke
    from four.otel import otel_watch

    watches = []
    for i in range(3):
        watch = otel_watch(sys.argv[1])
        G = scripted_invoke(["```bash\\necho hi\\n```", "done"])
        run(G, regex_parse(finish_on_plain_text=True), local_env(), save_trajectory(sys.argv[2]),
            prompt="go", watch=watch)
        watches.append(watch)
    print(" ".join(str(w.trace_id) for w in watches))
""")  # no flush: the process's end sends what is left


def test_a_program_that_ends_at_once_has_sent_its_runs(receiver: Receiver, tmp_path: Path) -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src, "OTEL_METRICS_EXPORTER": "none"}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, receiver.url, str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # nothing said: nothing lost
    traces = done.stdout.split()
    assert len(traces) == 3
    for trace in traces:
        names = sorted(str(s["name"]) for s in receiver.spans(trace, 4))
        assert names == ["chat scripted", "chat scripted", "execute_tool bash",
                         "invoke_agent four"]  # fmt: skip


def test_a_sender_process_that_dies_loses_spans_never_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    closed = nowhere()

    def traced() -> Path:
        G = scripted_invoke(["```bash\necho hi\n```", "done"])
        return run(G, regex_parse(finish_on_plain_text=True), local_env(),
                   save_trajectory(tmp_path), prompt="go", watch=otel_watch(closed))  # fmt: skip

    first = traced()  # the child is started with the first span
    out = otel_watch(closed).sender
    assert isinstance(out, Sidecar)
    assert out.flush(60)
    process = out._process
    assert process is not None
    process.kill()
    process.wait()
    later = [traced() for _ in range(3)]
    assert out.flush(60)
    assert [load_trajectory(p).outcome for p in [first, *later]] == ["exit:task_complete"] * 4
    said = [r.getMessage() for r in caplog.records if r.name == "four.otel"]
    assert len(said) == 1, said  # the receiver that is down, or the child gone: said once
    assert out.failed + out.dropped >= 12  # the later runs' spans, at least: lost, counted


def test_a_sender_process_that_cannot_start_loses_spans_never_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))

    def execute(action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return Success(Observation("<returncode>0</returncode>", 0))  # no process

    watch = otel_watch(nowhere())
    G = scripted_invoke(["```bash\necho hi\n```", "done"])
    path = run(G, regex_parse(finish_on_plain_text=True), execute, save_trajectory(tmp_path),
               prompt="go", watch=watch)  # fmt: skip
    assert load_trajectory(path).outcome == "exit:task_complete"
    assert watch.sender.flush(5)
    assert watch.sender.dropped == 4 and watch.sender.sent == 0
    said = [r.getMessage() for r in caplog.records if r.name == "four.otel"]
    assert len(said) == 1 and "the sender's process could not start" in said[0], said
