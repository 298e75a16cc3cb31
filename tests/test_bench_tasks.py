"""The tasks bench's tasks are fair: every check rejects the folder as the task starts
and the wrong answers the built-in model wrote, and accepts a command that does the
task (real bash, python3 and jupyter)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.bench_tasks import NEAR_MISSES, SOLUTIONS, TASKS, Task, make_workspace, solved

BY_ID = {task.id: task for task in TASKS}


@pytest.fixture(autouse=True)
def tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks' tools (python3 with nbformat, jupyter) are this interpreter's, as the
    bench's, for the commands and the checks alike."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def _do(task: Task, command: str, parent: Path) -> Path:
    folder = make_workspace(task, parent)
    done = subprocess.run(
        ["bash", "-c", command], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return folder


def test_every_task_has_a_solution_and_ids_are_unique() -> None:
    assert len(BY_ID) == len(TASKS) >= 30
    assert set(SOLUTIONS) == set(BY_ID)
    assert set(NEAR_MISSES) <= set(BY_ID)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_the_check_rejects_the_start_and_accepts_a_solution(task: Task, tmp_path: Path) -> None:
    assert not solved(task, make_workspace(task, tmp_path))
    assert solved(task, _do(task, SOLUTIONS[task.id], tmp_path))


@pytest.mark.parametrize(
    ("task_id", "command"),
    [(t, c) for t, commands in NEAR_MISSES.items() for c in commands],
)
def test_the_check_rejects_what_the_model_wrote(task_id: str, command: str, tmp_path: Path) -> None:
    assert not solved(BY_ID[task_id], _do(BY_ID[task_id], command, tmp_path))
