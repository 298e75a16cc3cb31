"""The process's senders, one per receiver (and resource): each a ``Sidecar`` (a child
process sends), flushed and closed when the process ends."""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence
from typing import TypeAlias

from four.otel._send import AT_EXIT, Sender, delay, endpoint_of, max_queue, resource_variables
from four.otel._sidecar import Sidecar

Out: TypeAlias = Sender | Sidecar
"""Where a watch puts its spans: a sender in this process, or one in a child."""

_senders: dict[str, Sidecar] = {}
_lock = threading.Lock()


def sender(endpoint: str | None = None) -> Sidecar:
    """The process's sender to ``endpoint`` (see ``endpoint_of``): one per endpoint, its
    spans flushed when the process ends (``AT_EXIT`` seconds at most).

    >>> sender("http://127.0.0.1:4318").where
    'http://127.0.0.1:4318/v1/traces'
    """
    url = endpoint_of(endpoint)
    key = f"{url} {resource_variables()}"  # another service's name: another sender
    with _lock:
        found = _senders.get(key)
        if found is None or found._closed:
            found = _senders[key] = Sidecar(url, max_queue(), delay())
        return found


def flush_all(timeout: float = AT_EXIT) -> Sequence[Sidecar]:
    """Flush every sender of the process (each within ``timeout``); the senders."""
    with _lock:
        senders = list(_senders.values())
    for each in senders:
        each.flush(timeout)
    return senders


def _close_all() -> None:
    """At the process's end: every sender flushed, its child ended."""
    for each in flush_all(AT_EXIT):
        each.close(AT_EXIT)


def _forget() -> None:
    """In a forked child: its parent's senders (their threads did not come along)."""
    _senders.clear()


atexit.register(_close_all)
if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=_forget)
