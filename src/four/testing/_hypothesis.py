"""Hypothesis' entry point (the ``hypothesis`` group in pyproject.toml): ``import
hypothesis`` calls ``setup``, so ``st.from_type(four.Reply)`` draws from four's strategies
in any script, under pytest or not (``HYPOTHESIS_NO_PLUGINS=1`` turns it off).

Nothing here imports Hypothesis or the strategies: Hypothesis may be importing itself for
``four.testing.strategies`` at this moment, so each strategy is looked up when drawn.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy


def setup() -> None:
    from hypothesis import strategies as st  # whole: Hypothesis calls this last

    from four._types import (
        Action,
        Assistant,
        ExecutionError,
        FormatError,
        ModelError,
        Observation,
        Rejected,
        Submitted,
        Usage,
    )
    from four.quaternary import CheckResult, QICTConfig

    for kind in (Assistant, Action, Observation, ModelError, Usage, CheckResult, QICTConfig,
                 FormatError, Submitted, ExecutionError, Rejected):  # fmt: skip
        st.register_type_strategy(kind, functools.partial(_drawn, kind))


def _drawn(kind: type, _: object) -> SearchStrategy[object]:
    from four.testing.strategies import for_type

    return for_type(kind)
