"""four.types is the extension API: a user's components type-check against it with
mypy --strict and no returns plugin; the values are frozen, slotted records."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import four
import four.types

ROOT = Path(__file__).resolve().parents[1]


def test_the_extension_api_names_every_type_a_component_needs() -> None:
    needed = {
        "Invoke", "Parse", "Execute", "Emit", "AsyncInvoke", "AsyncExecute", "Watch",
        "Verify", "Judge", "Recorder", "Sink", "RunInfo", "RunStats", "Closeable",
        "AsyncCloseable", "JSON", "Action", "Observation", "Reply", "Message", "Outcome",
        "UserKind", "ToolResultKind", "FinishReason", "Component",
    }  # fmt: skip
    assert needed <= set(four.types.__all__)
    assert all(hasattr(four.types, name) for name in four.types.__all__)


def _strict_mypy_without_plugins(path: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n")  # a user's config: no returns plugin
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-incremental",
         "--cache-dir", os.devnull, path],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "MYPYPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'typings'}"},
    )  # fmt: skip


def test_users_components_sync_and_async_pass_mypy_strict(tmp_path: Path) -> None:
    result = _strict_mypy_without_plugins("tests/typing/good_components.py", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_wrong_components_are_reported(tmp_path: Path) -> None:
    path = ROOT / "tests" / "typing" / "bad_components.py"
    marked = {i for i, line in enumerate(path.read_text().splitlines(), 1) if line.endswith("# E")}
    result = _strict_mypy_without_plugins("tests/typing/bad_components.py", tmp_path)
    reported = {
        int(line.split(":")[1]) for line in result.stdout.splitlines() if ": error:" in line
    }
    assert marked and marked <= reported, result.stdout


@pytest.mark.parametrize(
    "value",
    [
        four.User("hi"),
        four.Assistant("hi"),
        four.ToolResult("c1", "out"),
        four.Action("ls"),
        four.Observation("out", 0),
        four.Interrupted("KeyboardInterrupt"),
        four.Crashed("V2", "boom"),
        four.Usage(1, 2),
    ],
    ids=type,
)
def test_values_are_frozen_slotted_dataclasses(value: object) -> None:
    assert dataclasses.is_dataclass(value)
    assert not hasattr(value, "__dict__")
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, None)


def test_import_four_loads_neither_returns_nor_litellm_nor_an_extra() -> None:
    extras = (
        "returns", "litellm", "ray", "nbclient", "xllamacpp", "cryptography", "hypothesis", "mcp",
        "opentelemetry",
    )  # fmt: skip
    probe = (
        f"import four, four.types, sys; print(sorted(m for m in {extras!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    assert out.stdout.strip() == "[]"
    probe = "from four import run; import sys; print('returns' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
