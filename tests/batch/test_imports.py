"""``import four`` and ``import four.batch`` never import Ray (nor litellm)."""

from __future__ import annotations

import subprocess
import sys

from tests.batch.conftest import WORKER_PATH


def test_four_batch_imports_neither_ray_nor_litellm() -> None:
    code = (
        "import sys, four, four.batch\n"
        "from four.batch import RayPool, ThreadPool, iter_runs, run_many\n"
        "print(sorted(m for m in ('ray', 'litellm') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": WORKER_PATH, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
