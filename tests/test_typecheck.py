"""mypy --strict (with returns' plugin) is part of the suite, and catches misuse of the arrows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_project_is_strictly_typed() -> None:
    result = mypy()  # files, strictness and the returns plugin come from pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr


def test_wrong_compositions_are_reported() -> None:
    path = ROOT / "tests" / "typecheck_errors.py"
    marked = {i for i, line in enumerate(path.read_text().splitlines(), 1) if line.endswith("# E")}
    result = mypy(str(path.relative_to(ROOT)))
    reported = {
        int(line.split(":")[1]) for line in result.stdout.splitlines() if ": error:" in line
    }
    assert marked and marked <= reported, result.stdout


def test_import_four_does_not_import_litellm() -> None:
    code = "import sys, four, four.invoke, four.trajectory; print(sorted(m for m in sys.modules if m.split('.')[0] == 'litellm'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    ).stdout
    assert out.strip() == "[]"


def test_every_public_name_resolves() -> None:
    import four

    missing = [name for name in four.__all__ if getattr(four, name, None) is None]
    assert not missing
    assert sorted(four.__all__) == sorted(set(four.__all__))
