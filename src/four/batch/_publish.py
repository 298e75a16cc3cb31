"""A batch written to an object store URL: its local copy (``Remote.local``) pushed up as it
changes, from a thread of its own (the order: docs/batch.md); the batch's thread never
waits on the store, except at ``close``."""

from __future__ import annotations

import contextlib
import queue
import threading
import time

from four.batch._result import MANIFEST
from four.trajectory._destination import Remote

FLUSH_EVERY = 5.0
"""Seconds between uploads of what changed (running runs' streams, the manifest)."""


class Publisher:
    """Uploads ``remote``'s local copy as it changes (see the module)."""

    def __init__(self, remote: Remote, every: float = FLUSH_EVERY) -> None:
        self.remote = remote
        self.every = every
        self._ended: queue.SimpleQueue[str | None] = queue.SimpleQueue()  # None: closing
        self._thread = threading.Thread(target=self._work, name="four-publish", daemon=True)
        self._thread.start()

    def ended(self, folder: str) -> None:
        """A run's result is in: its folder (relative) goes up now."""
        self._ended.put(folder)

    def close(self) -> None:
        """Upload everything that changed, the manifest last; raises when that fails."""
        self._ended.put(None)
        self._thread.join()
        try:
            self.remote.push(["runs"])
            self.remote.push()
            self.remote.push([MANIFEST])
        finally:
            self.remote.save()

    def _work(self) -> None:
        flushed = time.monotonic()
        due: dict[str, None] = {}  # folders of ended runs not up yet, in order
        while True:
            with contextlib.suppress(queue.Empty):  # (all taken: upload)
                ended = self._ended.get(timeout=max(0.0, flushed + self.every - time.monotonic()))
                while ended is not None:
                    due[ended] = None
                    ended = self._ended.get_nowait()
                return  # closing: close uploads the rest
            with contextlib.suppress(Exception):  # the store is down, a credential expired...
                if due:
                    self.remote.push(list(due))
                    due.clear()
                if time.monotonic() >= flushed + self.every:  # the streams, the manifest
                    flushed = time.monotonic()
                    self.remote.push(["runs"])
                    self.remote.push([MANIFEST])
                    self.remote.save()
