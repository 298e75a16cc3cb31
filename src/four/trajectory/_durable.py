"""Files made durable: written whole to a temporary name, fsynced, renamed, the folder
fsynced. ``write_atomic`` does it all in the calling thread; ``write_atomic_async``
writes on the event loop (the page cache takes it at once) and leaves the waits on the
disk (fsync, rename) to one thread of this process, for all the files waiting at once.

Why one thread that takes groups: ``asyncio.to_thread`` per file costs each of ten
thousand runs a thread hand-off and a wake-up of the loop. The thread takes the next
group as soon as one is done, so a group waits on the disk, never on a busy loop.

A file system held in memory (tmpfs, ramfs) never makes an fsync wait: there the waits
are done on the loop too. The hand-off is not free: each system call of the thread
takes the GIL back from a busy loop, and ten thousand runs ending together spent more
on that than on the rest of their seals (bench_scale).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path

WRITE_FLAGS = os.O_WRONLY | os.O_CLOEXEC  # not inherited by the commands a run starts


def write_atomic(folder: Path, name: str, data: bytes) -> None:
    """``folder/name`` appears whole or not at all, and survives a power cut once this
    returns."""
    fd, tmp = _write_temporary(folder, name, data)
    _make_durable(fd, tmp, folder / name)
    _sync_folder(folder)


async def write_atomic_async(folder: Path, name: str, data: bytes) -> None:
    """``write_atomic`` for a coroutine: the waits on the disk happen in a worker thread
    while the event loop goes on. Cancelling the caller does not stop the write: the
    file still appears whole, before the cancellation goes on."""
    fd, tmp = _write_temporary(folder, name, data)
    if _in_memory(fd):
        _make_durable(fd, tmp, folder / name)
        _sync_folder(folder)
        return
    loop = asyncio.get_running_loop()
    job = _Job(fd, tmp, folder / name, loop, loop.create_future())
    _flusher.put(job)
    try:
        await job.done  # (no shield: each hop through the loop's queue is a turn of it)
    except asyncio.CancelledError:  # job.done cancelled, not the write
        job.flushed.wait()  # (at most one group's flush)
        raise


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (a short write, from a signal or a nearly full disk, is
    finished; a disk that stays full raises)."""
    written = os.write(fd, data)
    if written == len(data):  # (nearly always: no view made)
        return
    view = memoryview(data)[written:]
    while view:
        view = view[os.write(fd, view) :]


_IN_MEMORY = frozenset({"tmpfs", "ramfs"})
_file_systems: dict[int, str] = {}  # st_dev -> file system type, from the mount table


def _in_memory(fd: int) -> bool:
    """Whether the open file is on a file system held in memory (its fsync never waits)."""
    try:
        device = os.fstat(fd).st_dev
        if device not in _file_systems:  # a new mount: read the table again
            _file_systems.update(_mounts())
            _file_systems.setdefault(device, "")  # not in it: never looked up again
    except OSError:
        return False  # no fstat, or no mount table: the thread, as for a disk
    return _file_systems.get(device) in _IN_MEMORY


def _mounts() -> dict[int, str]:
    """Each mounted file system's device and type (``/proc/self/mountinfo``: the third
    field is its ``major:minor``, the type follows the `` - `` separator)."""
    found: dict[int, str] = {}
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
        for line in table:
            fields, _, rest = line.partition(" - ")
            numbers = fields.split(" ")[2] if fields.count(" ") >= 2 else ""
            major, _, minor = numbers.partition(":")
            if major.isdigit() and minor.isdigit() and rest:
                found[os.makedev(int(major), int(minor))] = rest.split(" ", 1)[0]
    return found


def _write_temporary(folder: Path, name: str, data: bytes) -> tuple[int, Path]:
    """``data`` in a new file beside ``folder/name``, still open; on failure none is left."""
    tmp = folder / f".{name}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, WRITE_FLAGS | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        write_all(fd, data)
    except BaseException:
        _discard(fd, tmp)
        raise
    return fd, tmp


def _make_durable(fd: int, tmp: Path, target: Path) -> None:
    """fsync the open temporary file, close it, and rename it over ``target``."""
    try:
        os.fsync(fd)
    except BaseException:
        _discard(fd, tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _sync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename in it is on disk too."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _discard(fd: int, tmp: Path) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


@dataclass(eq=False, slots=True)
class _Job:
    fd: int
    tmp: Path
    target: Path
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]
    flushed: threading.Event = field(default_factory=threading.Event)
    error: OSError | None = None


class _Flusher:
    """The thread that makes the files of every event loop of this process durable: it
    takes all the jobs waiting, flushes them, hands each loop its own back (one call
    per loop), and takes the next group at once. Started with the first job."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, job: _Job) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, args=(self._jobs,), name="four-durable", daemon=True
                )
                self._thread.start()
            self._jobs.put(job)

    def close(self) -> None:
        """Flush what waits, and end the thread (at the interpreter's exit). A job put
        later starts a new thread, with a queue of its own."""
        with self._lock:
            thread, jobs = self._thread, self._jobs
            self._thread, self._jobs = None, queue.SimpleQueue()
        if thread is not None:
            jobs.put(None)
            thread.join()

    @staticmethod
    def _serve(queued: queue.SimpleQueue[_Job | None]) -> None:
        ending = False
        while not ending:
            first = queued.get()
            jobs = [] if first is None else [first]
            ending = first is None
            with contextlib.suppress(queue.Empty):
                while not ending:
                    job = queued.get_nowait()
                    ending = job is None
                    if job is not None:
                        jobs.append(job)
            _flush(jobs)
            for job in jobs:
                job.flushed.set()
            by_loop: dict[asyncio.AbstractEventLoop, list[_Job]] = {}
            for job in jobs:
                by_loop.setdefault(job.loop, []).append(job)
            for loop, theirs in by_loop.items():
                with contextlib.suppress(RuntimeError):  # that loop is closed: none waits
                    loop.call_soon_threadsafe(_settle, theirs)


_flusher = _Flusher()


def _new_flusher() -> None:
    global _flusher  # a forked child has none of its parent's threads
    _flusher = _Flusher()


os.register_at_fork(after_in_child=_new_flusher)
atexit.register(lambda: _flusher.close())  # (the flusher of the time: after a fork, a new one)


def _flush(jobs: list[_Job]) -> None:
    """fsync and rename each file, then fsync each folder once; an error is the job's."""
    folders: dict[Path, list[_Job]] = {}
    for job in jobs:
        try:
            _make_durable(job.fd, job.tmp, job.target)
        except OSError as exc:
            job.error = exc
            continue
        folders.setdefault(job.target.parent, []).append(job)
    for folder, renamed in folders.items():
        try:
            _sync_folder(folder)
        except OSError as exc:
            for job in renamed:
                job.error = exc


def _settle(jobs: list[_Job]) -> None:
    for job in jobs:
        if job.done.done():  # its caller was cancelled
            continue
        if job.error is None:
            job.done.set_result(None)
        else:
            job.done.set_exception(job.error)
