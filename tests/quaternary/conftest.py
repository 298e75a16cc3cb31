"""Shared fixtures: Hypothesis profiles and the accounting implementation under test.

Every test in this directory runs once per accounting implementation: ``py`` (the
typed pure module) and ``c`` (the compiled `_accounting_c`, skipped when it is not
built). The fixture swaps the functions the selector module exposes, which is what
the controller and `audit_trace` call.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

from four.quaternary import _accounting, _accounting_py

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

ACCOUNTING_NAMES = (
    "FORMAT_VERSION",
    "admissible_rank",
    "audit_feed",
    "audit_result",
    "evaluate",
    "fingerprint",
    "genesis",
    "handle",
    "rank",
    "receipt_digest",
)


def compiled_module() -> ModuleType | None:
    """The compiled accounting module, or None when it was not built."""
    try:
        return importlib.import_module("four.quaternary._accounting_c")
    except ImportError:
        return None


@pytest.fixture(params=["py", "c"], autouse=True)
def accounting(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """Route the controller and the audit through one accounting implementation."""
    if request.param == "py":
        module: ModuleType | None = _accounting_py
    else:
        module = compiled_module()
        if module is None:
            pytest.skip("the compiled accounting core is not built")
    assert module is not None
    saved = {name: getattr(_accounting, name) for name in ACCOUNTING_NAMES}
    for name in ACCOUNTING_NAMES:
        setattr(_accounting, name, getattr(module, name))
    try:
        yield module
    finally:
        for name, value in saved.items():
            setattr(_accounting, name, value)
