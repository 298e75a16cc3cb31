"""A plain call awaited from an event loop, run on a few long-lived threads.

``asyncio.to_thread`` costs a context copy, an executor future (with its condition) and
a chained loop future per call; with 10,000 runs sealing their trajectories at once on
one loop that bookkeeping is a tenth of the loop's time. Here a call is a queue entry
and one ``call_soon_threadsafe`` back. Workers start when calls wait and end when the
queue is empty, so they are not daemons (a seal under way finishes before the
interpreter exits) and no idle thread is left behind.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_WORKERS = 4  # enough to overlap fsyncs on a real disk
_Job = tuple[
    asyncio.AbstractEventLoop, "asyncio.Future[object]", contextvars.Context, Callable[[], object]
]
_jobs: collections.deque[_Job] = collections.deque()
_lock = threading.Lock()
_live = 0  # workers started and not ended


async def offload(fn: Callable[[], T]) -> T:
    """``fn()`` on a worker thread, in the caller's context (as ``asyncio.to_thread``:
    the run's key goes with it), awaited. Cancelling the awaiting task does not stop
    ``fn``; its result is then dropped."""
    global _live
    loop = asyncio.get_running_loop()
    future: asyncio.Future[object] = loop.create_future()
    with _lock:
        _jobs.append((loop, future, contextvars.copy_context(), fn))
        start = _live < min(_WORKERS, len(_jobs))
        if start:
            _live += 1
    if start:
        threading.Thread(target=_work, name="four-offload").start()
    return await future  # type: ignore[return-value]  # what fn returned


def _work() -> None:
    global _live
    while True:
        with _lock:  # the same lock as offload's: no job is left without a worker
            if not _jobs:
                _live -= 1
                return
            loop, future, context, fn = _jobs.popleft()
        try:
            outcome: tuple[bool, object] = (True, context.run(fn))
        except BaseException as exc:  # handed to the awaiting task
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # a closed loop: no one awaits it
            loop.call_soon_threadsafe(_settle, future, outcome)


def _settle(future: asyncio.Future[object], outcome: tuple[bool, object]) -> None:
    if future.cancelled():
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)  # type: ignore[arg-type]
