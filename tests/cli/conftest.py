"""Fixtures for the CLI tests: a folder of trajectories made by the real loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli._runs import sample_run, verified_run


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A finished run: a failing command, a format error, a long output, a tool call."""
    return sample_run(tmp_path / "runs")


@pytest.fixture
def verified(tmp_path: Path) -> Path:
    """An accepted verified run with real receipts (one NO verdict, then YES)."""
    return verified_run(tmp_path / "verified", tmp_path / "work")
