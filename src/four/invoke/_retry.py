"""retry_invoke: any G, retried on transient errors with backoff, jitter and Retry-After."""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import checked
from four._coroutine import to_end
from four._types import NO_USAGE, AsyncInvoke, Checked, Invoke, Message, ModelError, Reply
from four.invoke._budget import add_usage


@dataclass(frozen=True, slots=True)
class RetryInvoke(Checked):
    """G that calls ``G`` again while its error is transient (see ``retry_invoke``)."""

    G: Invoke
    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_elapsed: float | None = 600.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    rng: Callable[[], float] = field(default=random.random, repr=False)

    def delay(self, failures: int, error: ModelError) -> float:
        """The wait after the ``failures``-th failure: the backoff, jittered down to as little
        as half (callers that failed together spread out), at least Retry-After."""
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (failures - 1))
        return max(backoff * (0.5 + 0.5 * self.rng()), error.retry_after or 0.0)

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        async def call() -> Result[Reply, ModelError]:
            return self.G(messages)

        async def wait(seconds: float) -> None:
            self.sleep(seconds)

        return to_end(_retried(self, call, wait), "a plain G waited")

    async def around(
        self, G: AsyncInvoke, messages: Sequence[Message], /
    ) -> Result[Reply, ModelError]:
        """These rules over an async G, its waits awaited (``asyncio.sleep``: ``sleep``
        would block the event loop)."""
        import asyncio  # here: four.invoke's import does not load asyncio

        return await _retried(self, lambda: G(messages), asyncio.sleep)


async def _retried(
    rules: RetryInvoke,
    call: Callable[[], Awaitable[Result[Reply, ModelError]]],
    wait: Callable[[float], Awaitable[None]],
) -> Result[Reply, ModelError]:
    """One call under ``rules``, written once: ``call`` and ``wait`` are plain or awaited."""
    start, billed, tried, attempt = rules.clock(), NO_USAGE, 0, 0  # billed: failed attempts
    while True:
        attempt += 1
        result = await call()
        if isinstance(result, Success):
            return add_usage(result, billed) if billed.calls else result
        error = result.failure()
        billed, tried = billed + (error.usage or NO_USAGE), tried + error.attempts
        done = not error.kind.transient or attempt >= rules.max_attempts
        pause = 0.0 if done else rules.delay(attempt, error)
        if done or (
            rules.max_elapsed is not None and rules.clock() - start + pause > rules.max_elapsed
        ):
            usage = billed if billed.calls else error.usage
            return Failure(replace(error, attempts=tried, usage=usage))
        await wait(pause)


def retry_invoke(
    G: Invoke,
    max_attempts: int = 6,
    base_delay: float = 1.0,
    max_delay: float = 60.0,
    max_elapsed: float | None = 600.0,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rng: Callable[[], float] = random.random,
) -> RetryInvoke:
    """G that retries ``G`` on transient errors (rate limit, timeout, connection, 5xx,
    overload), with backoff and jitter, honouring ``retry_after`` (docs/components.md).

    >>> from four import ModelError, ModelErrorKind, scripted_invoke
    >>> busy = ModelError(ModelErrorKind.RATE_LIMIT, "429", retry_after=2.0)
    >>> waits = []
    >>> G = retry_invoke(scripted_invoke([busy, "hi"]), sleep=waits.append)
    >>> G([]).unwrap().content, waits
    ('hi', [2.0])
    """
    where = "retry_invoke"
    check.component(where, "G", G, "a G (a function: history -> Result[Reply, ModelError])")
    check.count(where, "max_attempts", max_attempts, minimum=1)
    check.seconds(where, "base_delay", base_delay)
    check.seconds(where, "max_delay", max_delay)
    check.seconds(where, "max_elapsed", max_elapsed, optional=True)
    for name, fn in (("sleep", sleep), ("clock", clock), ("rng", rng)):
        check.component(where, name, fn, "a function")
    return RetryInvoke(G, max_attempts, base_delay, max_delay, max_elapsed, sleep, clock, rng)
