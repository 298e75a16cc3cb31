"""four's pytest plugin registers its strategies: st.from_type draws four's own values."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import find
from hypothesis import strategies as st

from four import Action, Assistant
from four.types import EXIT_SIGNAL


def test_from_type_draws_replies_from_four_s_strategy() -> None:
    # Hypothesis' own strategy for a str field would never write the exit signal.
    reply = find(st.from_type(Assistant), lambda r: EXIT_SIGNAL in r.content)
    assert isinstance(reply, Assistant)
    action = find(st.from_type(Action), lambda a: a.command.startswith("seq 1 "))
    assert isinstance(action, Action)


def test_import_four_testing_is_not_loaded_by_import_four() -> None:
    probe = "import four, sys; print('four.testing' in sys.modules, 'hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
