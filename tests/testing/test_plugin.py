"""four's strategies are registered through Hypothesis' own entry point: st.from_type draws
four's values in any script, under pytest or not."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

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


def _python(program: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        capture_output=True, text=True, timeout=300, env={**os.environ, **env},
    )  # fmt: skip


FROM_TYPE = """
    {first}
    from hypothesis import find, strategies as st
    import four.quaternary, four.types
    reply = find(st.from_type(four.Reply), lambda r: four.types.EXIT_SIGNAL in r.content)
    verdict = find(st.from_type(four.quaternary.CheckResult), lambda v: v.verdict == 3)
    print(type(reply).__name__, verdict.dependency is not None)
"""


def test_a_plain_script_draws_four_s_values_with_from_type() -> None:
    """No pytest: ``import hypothesis`` runs four's entry point. Also when the script
    imports four's strategies first (Hypothesis then imports itself from inside them)."""
    for first in ("", "import four.testing.strategies", "import four.testing.laws"):
        done = _python(FROM_TYPE.format(first=first))
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["Assistant", "True"]


def test_the_entry_point_is_what_registers_them() -> None:
    """With Hypothesis' plugins turned off, its own guess at a reply never holds the exit
    signal (or fails on the JSON of a thinking block)."""
    done = _python(
        """
        from hypothesis import find, settings, strategies as st
        from hypothesis.errors import NoSuchExample, ResolutionFailed
        import four.types
        try:
            find(st.from_type(four.Reply), lambda r: four.types.EXIT_SIGNAL in r.content,
                 settings=settings(max_examples=300, database=None))
        except (NoSuchExample, ResolutionFailed) as exc:
            print(type(exc).__name__)
        """,
        HYPOTHESIS_NO_PLUGINS="1",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("NoSuchExample", "ResolutionFailed")


def test_import_four_testing_is_not_loaded_by_import_four() -> None:
    probe = "import four, sys; print('four.testing' in sys.modules, 'hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_import_hypothesis_loads_four_s_strategies_only_when_one_is_drawn() -> None:
    probe = """
        import sys, hypothesis
        print(*(m in sys.modules for m in ("four.testing.strategies", "four.testing.laws")))
    """
    done = _python(probe)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
