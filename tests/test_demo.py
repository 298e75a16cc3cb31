"""The README's first command ends in `python -m four.demo`: it must work offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_runs_offline() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "four.demo"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "outcome: exit:task_complete" in result.stdout
    assert "outcome: accepted" in result.stdout
    assert "audit: valid (2 evaluations" in result.stdout
