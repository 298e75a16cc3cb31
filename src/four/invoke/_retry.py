"""retry_invoke: any G, retried on transient errors with backoff, jitter and Retry-After."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import checked
from four._types import NO_USAGE, AsyncInvoke, Checked, Invoke, Message, ModelError, Reply, Usage
from four.invoke._billing import add_usage


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
        """The wait after the ``failures``-th failure: jittered backoff, at least Retry-After.

        Backoff doubles from ``base_delay`` up to ``max_delay``; the jitter draws it
        from [half, all] of that, so callers that failed together spread out.
        """
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (failures - 1))
        wait = backoff * (0.5 + 0.5 * self.rng())
        if error.retry_after is not None:
            wait = max(wait, error.retry_after)
        return wait

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        tries = _Tries(self)
        while True:
            done = tries.settle(self.G(messages))
            if not isinstance(done, float):
                return done
            self.sleep(done)


@dataclass(frozen=True, slots=True)
class AsyncRetryInvoke:
    """``retry``'s rules for an async G (``alitellm_invoke``): the same attempts and
    waits, awaited (``asyncio.sleep``: ``retry.sleep`` would block the event loop);
    ``retry.G`` is not called."""

    retry: RetryInvoke
    G: AsyncInvoke

    async def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        import asyncio  # here: four.invoke's import does not load asyncio

        tries = _Tries(self.retry)
        while True:
            done = tries.settle(await self.G(messages))
            if not isinstance(done, float):
                return done
            await asyncio.sleep(done)


@dataclass(slots=True)
class _Tries:
    """One call's attempts so far: what the plain and the async retry share."""

    rules: RetryInvoke
    start: float = 0.0
    billed: Usage = NO_USAGE  # what failed attempts cost: still spent
    attempt: int = 0  # our calls of G
    tried: int = 0  # the requests they made (G may retry too)

    def __post_init__(self) -> None:
        self.start = self.rules.clock()

    def settle(self, result: Result[Reply, ModelError]) -> Result[Reply, ModelError] | float:
        """The call's result, or the seconds to wait before the next attempt."""
        self.attempt += 1
        if isinstance(result, Success):
            if self.billed.calls == 0:
                return result
            return Success(add_usage(result.unwrap(), self.billed))
        error = result.failure()
        self.billed = self.billed + (error.usage or NO_USAGE)
        self.tried += error.attempts
        rules = self.rules
        done = not error.kind.transient or self.attempt >= rules.max_attempts
        wait = 0.0 if done else rules.delay(self.attempt, error)
        if rules.max_elapsed is not None and rules.clock() - self.start + wait > rules.max_elapsed:
            done = True
        if done:
            usage: Usage | None = self.billed if self.billed.calls else error.usage
            return Failure(replace(error, attempts=self.tried, usage=usage))
        return float(wait)  # an int Retry-After would read as a result


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
