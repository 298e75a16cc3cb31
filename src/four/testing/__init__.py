"""Prove your own components obey the loop's laws, with Hypothesis (``four-loop[testing]``).

    from four.testing import check_execute, check_parse

    def test_my_env():                     # in your pytest suite
        check_execute(lambda: my_env(timeout=1))

The laws (``four.testing.laws``): ``check_parse`` (V1), ``check_execute`` (V2),
``check_invoke`` (G), ``check_emit``, ``check_verify`` (a check of the verified loop),
``check_loop`` (the composition), and the async ``acheck_invoke``, ``acheck_execute``
and ``acheck_loop``. Each returns when the component obeys, or raises ``LawBroken``
with Hypothesis' smallest counterexample. The strategies behind them are in
``four.testing.strategies``; installing four registers them with Hypothesis (its entry
point), so ``st.from_type(four.Reply)`` draws replies in any script. ``import four``
loads none of this, and ``import hypothesis`` loads the strategies only when drawn.
"""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:
    from four.testing.laws import (
        LawBroken,
        acheck_execute,
        acheck_invoke,
        acheck_loop,
        check_emit,
        check_execute,
        check_invoke,
        check_loop,
        check_parse,
        check_verify,
        valid_history,
    )

__all__ = [
    "LawBroken",
    "acheck_execute",
    "acheck_invoke",
    "acheck_loop",
    "check_emit",
    "check_execute",
    "check_invoke",
    "check_loop",
    "check_parse",
    "check_verify",
    "valid_history",
]

__getattr__, __dir__ = lazy("four.testing", dict.fromkeys(__all__, "four.testing.laws"), __all__)
