"""A real Jupyter kernel for the notebook tests; they skip, with the reason, where the
notebook extra is not installed (in CI, FOUR_REQUIRE_SERVICES=1 makes that a failure)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from four.domains.notebook import KernelEnv

MISSING = [
    name
    for name in ("nbformat", "nbclient", "jupyter_client", "ipykernel", "matplotlib")
    if importlib.util.find_spec(name) is None
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not MISSING:
        return
    reason = f"the notebook extra is not installed ({', '.join(MISSING)} missing)"
    if os.environ.get("FOUR_REQUIRE_SERVICES") == "1":
        raise pytest.UsageError(f"FOUR_REQUIRE_SERVICES=1 but {reason}")
    for item in items:
        if "tests/domains/notebook" in str(item.path):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="module")
def shared() -> Iterator[KernelEnv]:
    """One kernel for the tests of a module whose cells do not depend on a fresh state
    (each uses names of its own): one start and one warm-up instead of one per test."""
    from four.domains.notebook import kernel_env

    with kernel_env(timeout=2, interrupt_grace=3) as env:
        yield env
