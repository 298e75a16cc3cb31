"""What all the attempts of a search may spend together: model calls, tokens, cost and
wall time, metered as the attempts go (side by side too) by ``four.invoke``'s ``Metered``,
a G that refuses to call the model once any of it is spent."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from four import _arguments as arguments
from four._types import NO_USAGE, Usage


@dataclass(frozen=True, slots=True)
class Budget:
    """The spend of all attempts together (None: no limit): ``steps`` model calls,
    ``tokens`` (prompt plus completion), ``cost`` (USD, calls of known cost), ``seconds``
    of wall time from the first attempt's start.

    >>> Budget(steps=24, seconds=600).steps
    24
    """

    steps: int | None = None
    tokens: int | None = None
    cost: float | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        arguments.count("Budget", "steps", self.steps, minimum=1, optional=True)
        arguments.count("Budget", "tokens", self.tokens, minimum=1, optional=True)
        arguments.amount("Budget", "cost", self.cost, optional=True)
        arguments.seconds("Budget", "seconds", self.seconds, optional=True)


@dataclass(slots=True)
class Spend:
    """What the attempts have spent so far (thread-safe: attempts may run side by side)."""

    budget: Budget
    steps: int = 0
    usage: Usage = NO_USAGE
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def charge(self, usage: Usage | None, /) -> None:
        """One more model call, and what it used (``Meter``: a metered G tells it)."""
        with self._lock:
            self.steps += 1
            self.usage += usage or NO_USAGE

    def refusal(self) -> str | None:
        """``spent()``, asked by a metered G before each call (``Meter``)."""
        return self.spent()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def steps_left(self) -> int | None:
        return None if self.budget.steps is None else max(0, self.budget.steps - self.steps)

    def spent(self) -> str | None:
        """Why the budget is spent (a calls, tokens or cost limit), or None."""
        b, used = self.budget, self.usage
        if b.steps is not None and self.steps >= b.steps:
            return f"the attempts made {self.steps} model calls, the budget's limit"
        if b.tokens is not None and used.total_tokens >= b.tokens:
            return f"the attempts used {used.total_tokens} tokens >= the budget's {b.tokens}"
        if b.cost is not None and used.known_cost >= b.cost:
            return f"the attempts cost {used.known_cost:.4f} >= the budget's {b.cost:.4f} USD"
        return None

    def out_of_time(self) -> str | None:
        """Why the time budget is spent, or None."""
        if self.budget.seconds is not None and self.elapsed() >= self.budget.seconds:
            return (
                f"the attempts took {self.elapsed():.0f} s, the budget's {self.budget.seconds:g} s"
            )
        return None
