"""Ctrl-C held off while a driver moves between two consistent states."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within: a Ctrl-C waits for the block's end, where SIGINT's handler from before the
    block takes it (Python's own raises ``KeyboardInterrupt`` there). Nothing changes
    outside the main thread, or when SIGINT is ignored or not handled by Python.

    >>> with deferred():
    ...     pass
    """
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    if not callable(previous):
        yield
        return
    heard: list[FrameType | None] = []
    signal.signal(signal.SIGINT, lambda signum, frame: heard.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if heard:
        previous(signal.SIGINT, heard[0])
