"""What a run spends: the usage of its history, of a reply with the billed calls that led
to it (retries, summaries), and budget_invoke, a G that refuses to call the model once a
run's cost or tokens are spent; and Metered, a G whose calls are charged to a meter kept
outside the history (a search's budget, a batch run's live usage)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import checked
from four._types import (
    NO_USAGE,
    Assistant,
    AsyncInvoke,
    Checked,
    Invoke,
    Message,
    ModelError,
    ModelErrorKind,
    Reply,
    Usage,
)


@checked
def spent(messages: Sequence[Message]) -> Usage:
    """The usage recorded on the assistant turns of a history: what the run has used so far.

    >>> spent([Assistant("a", usage=Usage(10, 2, 0.5)), Assistant("b", usage=Usage(5, 1, None))])
    Usage(prompt_tokens=15, completion_tokens=3, cost=0.5, calls=2, cost_unknown_calls=1)
    """
    return sum((m.usage for m in messages if isinstance(m, Assistant) and m.usage), NO_USAGE)


def add_usage(result: Result[Reply, ModelError], usage: Usage) -> Result[Reply, ModelError]:
    """``result``, reply or error, with ``usage`` added to its own."""
    return result.map(lambda r: replace(r, usage=(r.usage or NO_USAGE) + usage)).alt(
        lambda e: replace(e, usage=(e.usage or NO_USAGE) + usage)
    )


@dataclass(frozen=True, slots=True)
class BudgetInvoke(Checked):
    """G that calls ``G`` only while the history's spend is under the limits (see ``budget_invoke``)."""

    G: Invoke
    cost_limit: float | None = None
    token_limit: int | None = None

    def refusal(self, messages: Sequence[Message]) -> Failure[ModelError] | None:
        """The BUDGET error once the history has spent the budget, else None."""
        used = spent(messages)
        if self.cost_limit is not None and used.known_cost >= self.cost_limit:
            unknown = used.cost_unknown_calls
            reason = f"cost {used.known_cost:.4f} >= limit {self.cost_limit:.4f}" + (
                f" ({unknown} calls of unknown cost not counted)" if unknown else ""
            )
        elif self.token_limit is not None and used.total_tokens >= self.token_limit:
            reason = f"tokens {used.total_tokens} >= limit {self.token_limit}"
        else:
            return None
        return Failure(ModelError(ModelErrorKind.BUDGET, reason))

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        refused = self.refusal(messages)
        return self.G(messages) if refused is None else refused

    async def around(
        self, G: AsyncInvoke, messages: Sequence[Message], /
    ) -> Result[Reply, ModelError]:
        refused = self.refusal(messages)
        return await G(messages) if refused is None else refused


class Wrapper(Protocol):
    """A G over a G whose rules also hold over an async G."""

    async def around(
        self, G: AsyncInvoke, messages: Sequence[Message], /
    ) -> Result[Reply, ModelError]: ...


@dataclass(frozen=True, slots=True)
class AsyncWrapped:
    """``wrapper``'s rules over an async G (``alitellm_invoke``), for ``arun``;
    ``wrapper.G`` is not called."""

    wrapper: Wrapper
    G: AsyncInvoke

    async def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        return await self.wrapper.around(self.G, messages)


class Meter(Protocol):
    """What a metered G answers to: why the next call may not be made (None: it may), and
    what each call used (None: not known)."""

    def refusal(self) -> str | None: ...

    def charge(self, used: Usage | None, /) -> None: ...


@dataclass(frozen=True, slots=True)
class Metered:
    """G whose calls are charged to ``meter``, each refused with a BUDGET error (the run
    ends ``cost_limit_reached``) while the meter gives a reason."""

    G: Invoke
    meter: Meter

    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        if (reason := self.meter.refusal()) is not None:
            return Failure(ModelError(ModelErrorKind.BUDGET, reason))
        result = self.G(messages)
        self.meter.charge(_used(result))
        return result


@dataclass(frozen=True, slots=True)
class AsyncMetered:
    """``Metered`` for an async G (``four.arun``)."""

    G: AsyncInvoke
    meter: Meter

    async def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        if (reason := self.meter.refusal()) is not None:
            return Failure(ModelError(ModelErrorKind.BUDGET, reason))
        result = await self.G(messages)
        self.meter.charge(_used(result))
        return result


def _used(result: Result[Reply, ModelError]) -> Usage | None:
    return result.unwrap().usage if isinstance(result, Success) else result.failure().usage


def budget_invoke(
    G: Invoke, cost_limit: float | None = None, token_limit: int | None = None
) -> BudgetInvoke:
    """G that ends the run (``cost_limit_reached: ...``) once its cost or tokens are spent,
    read from the history: put it outermost (the rules: docs/components.md).

    >>> from four import scripted_invoke, Assistant, Usage
    >>> G = budget_invoke(scripted_invoke(["hi"]), cost_limit=1.0)
    >>> G([Assistant("x", usage=Usage(10, 10, 1.5))]).failure().message
    'cost 1.5000 >= limit 1.0000'
    """
    check.component("budget_invoke", "G", G, "a G (a function: history -> Result)")
    check.amount("budget_invoke", "cost_limit", cost_limit, optional=True)
    check.count("budget_invoke", "token_limit", token_limit, minimum=1, optional=True)
    return BudgetInvoke(G, cost_limit, token_limit)
