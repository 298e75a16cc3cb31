"""four's pytest plugin: four's strategies registered for ``st.from_type`` once pytest
is configured (when Hypothesis is installed; without it the plugin does nothing)."""

from __future__ import annotations

import importlib.util

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if importlib.util.find_spec("hypothesis") is not None:
        from four.testing.strategies import register

        register()
