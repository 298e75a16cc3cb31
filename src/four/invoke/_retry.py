"""retry_invoke: any G, retried on transient errors with backoff, jitter and Retry-After."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._types import NO_USAGE, Invoke, Message, ModelError, Reply, Usage
from four.invoke._billing import add_usage


@dataclass(frozen=True, slots=True)
class RetryInvoke:
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

    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        start = self.clock()
        billed = NO_USAGE  # what failed attempts cost: still spent
        attempt = tried = 0  # our calls of G; the requests they made (G may retry too)
        while True:
            attempt += 1
            result = self.G(messages)
            if isinstance(result, Success):
                if billed.calls == 0:
                    return result
                reply = result.unwrap()
                return Success(add_usage(reply, billed))
            error = result.failure()
            billed = billed + (error.usage or NO_USAGE)
            tried += error.attempts
            done = not error.kind.transient or attempt >= self.max_attempts
            wait = 0.0 if done else self.delay(attempt, error)
            if self.max_elapsed is not None and self.clock() - start + wait > self.max_elapsed:
                done = True
            if done:
                usage: Usage | None = billed if billed.calls else error.usage
                return Failure(replace(error, attempts=tried, usage=usage))
            self.sleep(wait)


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
    """G that retries ``G`` on transient errors (rate limit, timeout, connection, 5xx, overload).

    Other errors (authentication, permission, not found, bad request, context
    window, budget) come back at once. Waits grow 1, 2, 4, ... s (``base_delay``
    doubled, at most ``max_delay``) with jitter, and are never shorter than the
    error's ``retry_after``. It gives up after ``max_attempts`` calls, or when the
    next wait would pass ``max_elapsed`` seconds since the first call (None: no such
    limit); the error it returns records the ``attempts`` made. Failed attempts that
    were billed (``ModelError.usage``) are added to the final reply's or error's usage.
    ``sleep``, ``clock`` and ``rng`` are injectable, so tests never wait.

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
