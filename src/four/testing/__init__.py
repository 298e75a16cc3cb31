"""Prove your own components obey the loop's laws, with Hypothesis (``four-loop[testing]``).

    from four.testing import check_execute, check_parse

    def test_my_env():                     # in your pytest suite
        check_execute(lambda: my_env(timeout=1))

The laws (``four.testing.laws``): ``check_parse`` (V1), ``check_execute`` (V2),
``check_invoke`` (G), ``check_grammar`` (a V1's grammar: what it allows parses), ``check_emit``, ``check_verify`` (a check of the verified loop),
``check_loop`` (the composition), and the async ``acheck_invoke``, ``acheck_execute``
and ``acheck_loop``. Each returns when the component obeys, or raises ``LawBroken``
with Hypothesis' smallest counterexample. The strategies behind them are in
``four.testing.strategies``; installing four registers them with Hypothesis (its entry
point), so ``st.from_type(four.Reply)`` draws replies in any script. ``import four``
loads none of this, and ``import hypothesis`` loads the strategies only when drawn.
"""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # the public names, each once
    from four.testing.laws import LawBroken as LawBroken
    from four.testing.laws import acheck_execute as acheck_execute
    from four.testing.laws import acheck_invoke as acheck_invoke
    from four.testing.laws import acheck_loop as acheck_loop
    from four.testing.laws import check_emit as check_emit
    from four.testing.laws import check_execute as check_execute
    from four.testing.laws import check_grammar as check_grammar
    from four.testing.laws import check_invoke as check_invoke
    from four.testing.laws import check_loop as check_loop
    from four.testing.laws import check_parse as check_parse
    from four.testing.laws import check_verify as check_verify
    from four.testing.laws import valid_history as valid_history

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
