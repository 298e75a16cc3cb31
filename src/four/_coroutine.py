"""Code written once as a coroutine for a plain caller and an async one: with waits that
never suspend (the plain caller's), the coroutine ends in its first step."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TypeVar

T = TypeVar("T")


def to_end(steps: Coroutine[object, object, T], why: str) -> T:
    """``steps`` run to its end in one step; ``RuntimeError(why)`` if it suspended.

    >>> async def two() -> int:
    ...     return 2
    >>> to_end(two(), "two waited")
    2
    """
    try:
        steps.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    steps.close()
    raise RuntimeError(why)
