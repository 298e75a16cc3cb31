"""Files made durable: written whole to a temporary name, fsynced, renamed, the folder
fsynced. ``write_atomic`` does it all in the calling thread; ``write_atomic_async``
writes on the event loop (the page cache takes it at once) and leaves the waits on the
disk (fsync, rename) to a worker thread, for all the files waiting at once: while one
group is being made durable, the next gathers.

Why groups: ``asyncio.to_thread`` per file costs each of ten thousand runs a thread
hand-off and a wake-up of the loop; a group costs one of each.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from dataclasses import dataclass
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
    file still appears whole."""
    fd, tmp = _write_temporary(folder, name, data)
    loop = asyncio.get_running_loop()
    job = _Job(fd, tmp, folder / name, loop.create_future())
    group = _groups.get(loop)
    if group is None:
        group = _groups[loop] = _Group([job])
        group.task = loop.create_task(_drain(loop, group))
    else:
        group.jobs.append(job)
    await asyncio.shield(job.done)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (a short write, from a signal or a nearly full disk, is
    finished; a disk that stays full raises)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
    done: asyncio.Future[None]
    error: OSError | None = None


@dataclass(eq=False, slots=True)
class _Group:
    """The files waiting on one event loop, and the task that makes them durable."""

    jobs: list[_Job]
    task: asyncio.Task[None] | None = None


_groups: dict[asyncio.AbstractEventLoop, _Group] = {}
"""The loops with files waiting: an entry lives while its task runs."""


async def _drain(loop: asyncio.AbstractEventLoop, group: _Group) -> None:
    """Make each group of waiting files durable in a worker thread, until none wait. If
    the loop cancels this (it is closing), the group in the thread is finished there,
    and the files still waiting are made durable here, at once."""
    try:
        while group.jobs:
            jobs, group.jobs = group.jobs, []
            flushed = loop.run_in_executor(None, _flush, jobs)
            try:
                await asyncio.shield(flushed)
            except asyncio.CancelledError:
                flushed.add_done_callback(functools.partial(_settled, jobs))
                raise
            _settle(jobs)
    finally:
        del _groups[loop]
        _flush(group.jobs)
        _settle(group.jobs)


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


def _settled(jobs: list[_Job], _: object) -> None:
    _settle(jobs)


def _settle(jobs: list[_Job]) -> None:
    for job in jobs:
        if job.done.done():  # its caller was cancelled
            continue
        if job.error is None:
            job.done.set_result(None)
        else:
            job.done.set_exception(job.error)
