"""The compiled accounting core: built when required, selected, and shaped like the pure one."""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from four.quaternary import QICTConfig, QICTController, _accounting, _accounting_py, no

from .conftest import ACCOUNTING_NAMES, compiled_module

SRC = Path(__file__).resolve().parents[2] / "src"


def test_extension_built_when_required() -> None:
    """With FOUR_REQUIRE_EXTENSIONS=1 (set by CI) a missing extension is an error."""
    if os.environ.get("FOUR_REQUIRE_EXTENSIONS") != "1":
        pytest.skip("FOUR_REQUIRE_EXTENSIONS is not set")
    assert compiled_module() is not None, "four.quaternary._accounting_c was not built"
    if not os.environ.get("FOUR_NO_EXTENSIONS"):
        assert _accounting.USE_EXTENSIONS


def _selected(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "FOUR_NO_EXTENSIONS"}
    env["PYTHONPATH"] = str(SRC)
    if env_value is not None:
        env["FOUR_NO_EXTENSIONS"] = env_value
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from four.quaternary import _accounting as a; print(a.USE_EXTENSIONS, a.rank.__module__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return done.stdout.strip()


def test_selector_honours_no_extensions(accounting: ModuleType) -> None:
    if accounting is not _accounting_py:
        pytest.skip("runs once")
    assert _selected("1") == "False four.quaternary._accounting_py"
    if compiled_module() is not None:
        assert _selected(None) == "True four.quaternary._accounting_c"


def test_public_functions_mirror_the_pure_module() -> None:
    module = compiled_module()
    if module is None:
        pytest.skip("the compiled accounting core is not built")
    for name in ACCOUNTING_NAMES:
        pure, compiled = getattr(_accounting_py, name), getattr(module, name)
        if callable(pure):
            assert list(inspect.signature(compiled).parameters) == list(
                inspect.signature(pure).parameters
            ), name
        else:
            assert compiled == pure


def test_no_silent_coercion_or_overflow(accounting: ModuleType) -> None:
    """Huge ints, bools and floats keep distinct, exact digests in both implementations."""
    controller = QICTController(QICTConfig(compute_alphabet={"k"}))
    receipt = controller.process(no("r"))
    digests = set()
    for index in (1, True, 1.0, 2**63, 2**64 + 1, -(2**63), -(2**63) - 1):
        # the constructor refuses a float: forged past it, as a hand-made object could be
        forged = dataclasses.replace(receipt)
        object.__setattr__(forged, "evaluation_index", index)
        digest = accounting.receipt_digest(b"", forged)
        assert digest == _accounting_py.receipt_digest(b"", forged)
        digests.add(digest)
    assert len(digests) == 7
