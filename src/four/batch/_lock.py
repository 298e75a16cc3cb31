"""One driver per batch destination: a folder's ``flock``, or a URL's lease object
(docs/batch.md, "One driver per destination")."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Protocol, cast

import msgspec

from four.trajectory._driver import Driver, boot_id, process_start, this_driver

LOCK = ".four-batch.lock"
TTL = 60.0
"""Seconds a URL's lease lasts past its last renewal."""
SETTLE = 2.0
"""Seconds between writing a lease and reading it back, on stores without conditional writes."""


class BatchLocked(RuntimeError):
    """Another driver runs the batch at this destination; the message names it."""


class Holder(msgspec.Struct, frozen=True):
    """Who holds a destination: a driver process (``Driver``'s fields), since when
    (``time.time()``), its holding's own id, and until when (a lease's expiry)."""

    host: str
    pid: int
    started: float
    token: str
    start: int | None = None
    boot: str | None = None
    expires: float | None = None  # None for a folder's lock

    @staticmethod
    def read(text: bytes) -> Holder | None:
        """The holder a lock's text names (None: no holder of ours)."""
        try:
            return msgspec.json.decode(text, type=Holder)
        except msgspec.DecodeError:
            return None

    @property
    def driver(self) -> Driver:
        return Driver(self.host, self.pid, self.start, self.boot)

    def describe(self) -> str:
        """The holder in a few words.

        >>> Holder("ci-7", 4242, 0.0, "t").describe()
        'pid 4242 on ci-7 since 1970-01-01 00:00:00 UTC'
        """
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started))
        return f"pid {self.pid} on {self.host} since {since}"

    def live(self) -> bool:
        """Whether it may still hold it: its lease not over, and its process not gone (one
        of this host: a reused pid has another start time; a restarted host another boot)."""
        if self.expires is not None and self.expires <= time.time():
            return False
        if self.host != this_driver().host:
            return True
        if self.boot is not None and self.boot != boot_id():
            return False
        started = process_start(self.pid)
        return started is not None and (self.start is None or started == self.start)


def _claim(token: str, ttl: float | None) -> bytes:
    """A lock's text naming this driver as its holder from now (``ttl``: a lease's)."""
    d, now = this_driver(), time.time()
    expires = None if ttl is None else now + ttl
    return msgspec.json.encode(Holder(d.host, d.pid, now, token, d.start, d.boot, expires))


class FolderLock:
    """The lock of a batch folder (see the module). ``acquire`` raises ``BatchLocked``.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> first = FolderLock(folder); first.acquire()
    >>> try:
    ...     FolderLock(folder).acquire()
    ... except BatchLocked as exc:
    ...     print(str(exc).split(" is being run by ")[1].split()[0])
    pid
    >>> first.release(); FolderLock(folder).acquire()
    """

    def __init__(self, folder: Path, name: str | None = None) -> None:
        self.folder = folder
        self.name = name or str(folder)
        self.path = folder / LOCK
        self._held: tuple[int, weakref.finalize[[int], FolderLock]] | None = None

    def acquire(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        # the lock goes with this object, even when a Ctrl-C skipped its release
        closed = weakref.finalize(self, os.close, fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = Holder.read(os.pread(fd, 4096, 0))
            closed()
            who = other.describe() if other is not None else "another driver (starting)"
            raise BatchLocked(f"{self.name} is being run by {who}") from None
        except BaseException:
            closed()
            raise
        data = _claim(uuid.uuid4().hex, None)
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        self._held = fd, closed

    def release(self) -> None:
        held, self._held = self._held, None
        if held is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(held[0], 0)  # (the file stays: another may have it open to lock)
        held[1]()


class _Store(Protocol):
    """What is used of an fsspec file system for a lease."""

    def pipe_file(self, path: str, value: bytes, **kwargs: object) -> object: ...
    def cat_file(self, path: str) -> bytes: ...
    def info(self, path: str, **kwargs: object) -> dict[str, object]: ...
    def rm_file(self, path: str) -> object: ...


class _Conflict(Exception):
    """A conditional write found another version there."""


class Lease:
    """The lease of a batch at a URL (see the module). ``acquire`` raises ``BatchLocked``,
    or ``OSError`` when the store cannot be written; then a thread renews it until
    ``release``. ``lost`` says why the lease was lost meanwhile (None while held).

    >>> lease = Lease("memory://bucket/batch", settle=0.0)
    >>> lease.acquire()
    >>> try:
    ...     Lease("memory://bucket/batch", settle=0.0).acquire()
    ... except BatchLocked as exc:
    ...     print(str(exc).split(" by ")[0])
    memory://bucket/batch is being run
    >>> lease.release(); Lease("memory://bucket/batch", settle=0.0).acquire()
    """

    def __init__(self, url: str, ttl: float | None = None, settle: float | None = None) -> None:
        import fsspec

        self.url = url.rstrip("/")
        fs, root = fsspec.core.url_to_fs(self.url)
        self.fs = cast(_Store, fs)
        self.path = f"{str(root).rstrip('/')}/{LOCK}"
        self.conditional = self.url.startswith(("s3://", "s3a://"))
        self.ttl = ttl if ttl is not None else TTL
        self.settle = settle if settle is not None else SETTLE
        self.lost: str | None = None
        self.took_over: Holder | None = None
        """The stale holder this lease replaced, if any."""
        self._token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        for _ in range(5):  # (each round: another driver changed it meanwhile)
            holder, version = self._read()
            if holder is not None and holder.token != self._token and holder.live():
                raise BatchLocked(f"{self.url} is being run by {holder.describe()}")
            self.took_over = holder
            try:
                self._write(version)
            except _Conflict:
                continue
            if self._held():
                self._thread = threading.Thread(target=self._renew, name="four-lease", daemon=True)
                self._thread.start()
                return
        raise BatchLocked(f"{self.url}: another driver keeps taking the lock; try again")

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.lost is not None:
            return
        with contextlib.suppress(OSError):
            if self._ours(self._read()[0]):
                self.fs.rm_file(self.path)

    def _ours(self, holder: Holder | None) -> bool:
        return holder is not None and holder.token == self._token

    def _read(self) -> tuple[Holder | None, str | None]:
        """The lease there and its version (its ETag, "" where none is known); (None,
        None) when there is none."""
        for _ in range(5):
            try:
                before = self._tag()
                data = self.fs.cat_file(self.path)
                if before == self._tag():  # (not replaced between the two looks)
                    return Holder.read(data), before or ""
            except FileNotFoundError:
                return None, None
        raise OSError(f"{self.url}: the lock keeps changing while read")

    def _tag(self) -> str | None:
        if not self.conditional:
            return None
        info = self.fs.info(self.path, refresh=True)
        etag = info.get("ETag") or info.get("etag")
        return str(etag) if etag else None

    def _write(self, replacing: str | None) -> None:
        """Write this lease: only where there is none (``replacing`` None), or only over
        the version ``replacing`` (conditional stores); ``_Conflict`` when another is there."""
        data = _claim(self._token, self.ttl)
        if not self.conditional:
            self.fs.pipe_file(self.path, data)
            return
        condition: dict[str, object] = (
            {"mode": "create"} if replacing is None else {"IfMatch": replacing}
        )
        try:
            self.fs.pipe_file(self.path, data, **condition)
        except FileExistsError:  # created meanwhile
            raise _Conflict from None
        except FileNotFoundError:  # deleted meanwhile; or, creating, no such bucket
            if replacing is None:
                raise
            raise _Conflict from None
        except OSError as exc:
            text = f"{exc} {exc.__cause__ or ''} {exc.__context__ or ''}"
            signs = ("PreconditionFailed", "pre-conditions", "ConditionalRequestConflict")
            if any(sign in text for sign in signs):
                raise _Conflict from None
            raise

    def _held(self) -> bool:
        """Whether the lease there is this one: a conditional write says so; elsewhere,
        read back after ``settle`` seconds."""
        if self.conditional:
            return True
        time.sleep(self.settle)
        return self._ours(self._read()[0])

    def _renew(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                holder, version = self._read()
                if holder is None:
                    self.lost = f"{self.url}: the batch's lock was removed"
                    return
                if holder.token != self._token:
                    self.lost = f"{self.url}: the lock was taken by {holder.describe()}"
                    return
                self._write(version)
            except _Conflict:
                self.lost = f"{self.url}: the lock was taken by another driver"
                return
            except OSError:
                continue  # the store is down for now: try again at the next renewal
