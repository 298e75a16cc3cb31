"""The awaited retry and budget (what ``four batch --processes`` runs): the rules of
``retry_invoke`` and ``budget_invoke``, over an async G, with the same results."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from returns.result import Result

from four import Assistant, Message, ModelError, ModelErrorKind, Reply, Usage, scripted_invoke
from four.invoke import budget_invoke, retry_invoke
from four.invoke._budget import AsyncWrapped


class Awaited:
    """A scripted G, awaited (as ``alitellm_invoke`` is)."""

    def __init__(self, script: list[str | Reply | ModelError]) -> None:
        self.G = scripted_invoke(script)

    async def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        await asyncio.sleep(0)
        return self.G(messages)


def busy(usage: Usage) -> ModelError:
    return ModelError(ModelErrorKind.RATE_LIMIT, "429", 429, 0.001, usage=usage)


def test_the_async_retry_retries_as_the_plain_one_and_adds_the_billed_failures() -> None:
    script: list[str | Reply | ModelError] = [
        busy(Usage(7, 0, 0.25)), busy(Usage(1, 0, 0.25)), Assistant("ok", usage=Usage(10, 5, 0.5))
    ]  # fmt: skip
    plain = retry_invoke(scripted_invoke(script), base_delay=0.001, sleep=lambda _: None)
    awaited = AsyncWrapped(plain, Awaited(script))
    result = asyncio.run(awaited([]))
    assert result == plain([])
    assert result.unwrap().usage == Usage(18, 5, 1.0, 3)


def test_the_async_retry_gives_up_after_max_attempts_with_them_counted() -> None:
    script: list[str | Reply | ModelError] = [busy(Usage(1, 0, 0.0))] * 3
    plain = retry_invoke(scripted_invoke(script), max_attempts=2, base_delay=0.001)
    error = asyncio.run(AsyncWrapped(plain, Awaited(script))([])).failure()
    assert error.kind is ModelErrorKind.RATE_LIMIT and error.attempts == 2


def test_the_async_budget_refuses_once_the_history_has_spent_it() -> None:
    budget = budget_invoke(scripted_invoke(["never"]), cost_limit=1.0)
    G = AsyncWrapped(budget, Awaited(["hi"]))
    spent: list[Message] = [Assistant("x", usage=Usage(10, 10, 1.5))]
    assert asyncio.run(G(spent)).failure().kind is ModelErrorKind.BUDGET
    assert asyncio.run(G([])).unwrap().content == "hi"
