"""A batch written to an object store URL: its local copy (``Remote.local``) pushed up as it
changes, from a thread of its own (the order: docs/batch.md); the batch's thread never
waits on the store, except at ``close``."""

from __future__ import annotations

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
        self._lock = threading.Lock()
        self._due: dict[str, None] = {}  # folders of ended runs, in order
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="four-publish", daemon=True)
        self._thread.start()

    def ended(self, folder: str) -> None:
        """A run's result is in: its folder (relative) goes up now."""
        with self._lock:
            self._due[folder] = None
        self._wake.set()

    def close(self) -> None:
        """Upload everything that changed, the manifest last; raises when that fails."""
        with self._lock:
            self._closed = True
        self._wake.set()
        self._thread.join()
        try:
            self.remote.push(["runs"])
            self.remote.push()
            self.remote.push([MANIFEST])
        finally:
            self.remote.save()

    def _work(self) -> None:
        flushed = time.monotonic()
        while True:
            self._wake.wait(max(0.0, flushed + self.every - time.monotonic()))
            self._wake.clear()
            with self._lock:
                due, self._due = list(self._due), {}
                closed = self._closed
            if closed:
                return
            try:
                if due:
                    self.remote.push(due)
                if time.monotonic() >= flushed + self.every:  # the streams, the manifest
                    flushed = time.monotonic()
                    self.remote.push(["runs"])
                    self.remote.push([MANIFEST])
                    self.remote.save()
            except Exception:  # the store is down, a credential expired: next time
                with self._lock:
                    self._due = {**dict.fromkeys(due), **self._due}
