"""Ctrl-C at each moment of a ``four run --local``: exit 130 with the run saved (or, before
its record opens, nothing to save), never a traceback or death by SIGINT (-2), and no
model server left behind.

Each moment is met exactly: the run sends itself SIGINT there (``_ctrl_c_local``), or,
for its first step, the model server does as the request comes. The server is a stand-in
with the real child's protocol (``_fake_llama``); the real model's own test is
``tests/invoke/test_local_model.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from four import audit
from four.trajectory import load_trajectory
from tests._server import Answer, LoopbackServer, Request, chat
from tests.cli._ctrl_c_local import AFTER_THE_COMMAND, BEFORE_THE_RECORD, PHASES
from tests.cli._runs import ROOT, cli_env
from tests.invoke.test_local_model import gone

STEPS = 2
"""The scripted model's commands before it submits."""


def _model(phase: str, four: list[subprocess.Popen[str]]) -> object:
    def answer(request: Request) -> Answer:
        messages = request.json().get("messages")
        assert isinstance(messages, list)
        said = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        if phase == "first-step" and said == 0:
            four[0].send_signal(signal.SIGINT)  # before the answer: the run waits for it
        if said >= STEPS:
            return chat("```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```")
        return chat(f"```bash\necho step {said}\n```")

    return answer


@pytest.mark.parametrize("phase", PHASES)
def test_ctrl_c_at_each_moment_of_a_local_run_exits_130_with_the_run_saved(
    tmp_path: Path, phase: str
) -> None:
    started: list[subprocess.Popen[str]] = []
    routes = {"/health": Answer({"status": "ok"})}
    with LoopbackServer(default=_model(phase, started), routes=routes) as server:  # type: ignore[arg-type]
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.cli._ctrl_c_local", phase, server.url, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env({"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}),
            cwd=ROOT,
        )
        started.append(process)
        try:
            out, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
    said = f"Ctrl-C at {phase}: exit {process.returncode}, {out!r} {err[-3000:]!r}"
    assert "Traceback" not in err, said
    pid = tmp_path / "server.pid"
    if pid.exists():
        assert gone(int(pid.read_text())), f"the server outlived the run: {said}"
    saved = list((tmp_path / "runs").glob("*.json"))
    if phase in AFTER_THE_COMMAND:  # noted only: the run had ended, as it says
        assert process.returncode == 0, said
        assert out.startswith("exit:task_complete"), said
        (path,) = saved
        assert audit(path).valid, said
        return
    assert process.returncode == 130, said
    if phase in BEFORE_THE_RECORD:
        assert "interrupted" in err and out == "", said
        assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), said
        return
    (path,) = saved
    assert audit(path).valid, said
    outcome = str(load_trajectory(path).outcome)
    if phase == "report":  # the run had ended and was saved; the report was cut
        assert outcome == "exit:task_complete" and "interrupted" in err, said
    elif phase == "seal":  # the seal is never cut: the run ends as it did, then says so
        assert outcome == "exit:task_complete", said
        assert out.startswith(f"interrupted · saved {path}"), said
    else:
        assert outcome == "interrupted: KeyboardInterrupt", said
        assert out.startswith(f"interrupted · saved {path}"), said
