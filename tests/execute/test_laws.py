"""Every environment obeys V2's law (four.testing.check_execute), against the real thing:
never raises, returns an observation or a typed end, closes cleanly, leaves no process
behind, and still works after a command timed out."""

from __future__ import annotations

from four.testing import check_execute
from tests.execute.conftest import MakeEnv


def test_every_environment_obeys_the_execute_law(make_env: MakeEnv) -> None:
    check_execute(lambda: make_env(timeout=1), max_examples=10 if make_env.kind == "docker" else 25)
