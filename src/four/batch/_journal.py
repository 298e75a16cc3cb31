"""A worker's journal of its running commands (the pid, then a line per ``FOUR_RUN``
mark), for the process that replaces it: they outlive a worker killed with SIGKILL, so it
kills what still runs and removes their containers (docs/batch.md, ``RayPool``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from four._files import ANY_SIZE, Unreadable, read_regular, regular_fd
from four._pids import pid_alive
from four.execute._docker import LABEL, run_docker
from four.execute._interrupt import Command, observe
from four.execute._kill import kill_marked


class Journal:
    """This process's journal at ``path``, once what its previous owner left running is
    killed (``cleaned``: what was, for the log); ``close`` removes it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cleaned = clean_up(path)
        # A new, empty journal; what is in its place and is no regular file (a FIFO, whose
        # open would wait for a reader; a link) is removed first.
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.lstat(path).st_mode):
                path.unlink()
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_NOFOLLOW
        self._fd = regular_fd(path, flags, max_bytes=ANY_SIZE, mode=0o600)
        os.write(self._fd, f"pid {os.getpid()}\n".encode())
        self._undo = observe(self._note)

    def close(self) -> None:
        """Stop recording and remove the journal (nothing of ours is left to clean)."""
        self._undo()
        fd, self._fd = self._fd, -1
        with contextlib.suppress(OSError):
            os.close(fd)
        self.path.unlink(missing_ok=True)

    def _note(self, started: bool, command: Command) -> None:
        if command.mark is None or self._fd < 0:
            return
        # One short write with O_APPEND: whole lines, whichever thread writes.
        os.write(self._fd, f"{'+' if started else '-'} {command.mark}\n".encode())


def clean_up(path: Path) -> list[str]:
    """Kill the commands a journal says were running, and remove its writer's containers."""
    try:
        pid, marks = _read(path)
    except (OSError, Unreadable):  # gone, or no journal (a FIFO, a device, too large)
        return []
    cleaned = []
    for mark in marks:
        kill_marked(mark)
        cleaned.append(f"command {mark}")
    if pid is not None and pid != os.getpid() and (docker := shutil.which("docker")):
        ok, said = run_docker(docker, "ps", "-aq", "--filter", f"label={LABEL}={pid}", timeout=30)
        listed = said.split() if ok else []
        if listed:  # its writer's containers
            run_docker(docker, "rm", "-f", "-v", *listed)
        cleaned += [f"container {c}" for c in listed]
    return cleaned


NAME = "four-ray-{}.journal"
MAX_BYTES = 64 << 20
"""The largest journal read (a line per command started or ended: about a million)."""
QUIET = 60.0
"""Seconds a dead writer's journal is left to its own actor's restart (which reads it
within seconds) before any other actor on the node cleans up after it."""


def actor_journal(actor_id: str) -> Path:
    """Where the actor ``actor_id`` keeps its journal on this node."""
    return Path(tempfile.gettempdir()) / NAME.format(actor_id)


def sweep(own: Path, quiet: float = QUIET) -> list[str]:
    """Clean up after the other journals beside ``own`` whose writers died and were not
    restarted (an actor killed for good, or its batch ended with it): kill what they
    left running, remove their containers, delete them. What was cleaned up."""
    cleaned: list[str] = []
    for path in own.parent.glob(NAME.format("*")):
        if path == own:
            continue
        try:
            if time.time() - path.stat().st_mtime < quiet:
                continue
            pid = _read(path)[0]
            if pid is not None and pid_alive(pid):  # (a reused pid too: the journal is kept)
                continue
        except (OSError, Unreadable):  # gone meanwhile, another user's, or no journal
            continue
        cleaned += clean_up(path)
        path.unlink(missing_ok=True)
    return cleaned


def _read(path: Path) -> tuple[int | None, list[str]]:
    """A journal's writer pid and the marks of the commands it left running; a journal
    that is no regular file (a FIFO, a link to ``/dev/zero``) or is over ``MAX_BYTES``
    is ``Unreadable``, never waited on."""
    pid: int | None = None
    marks: dict[str, None] = {}
    text = read_regular(path, max_bytes=MAX_BYTES, follow=False).decode("utf-8", "replace")
    for line in text.splitlines():
        kind, _, value = line.partition(" ")
        if kind == "pid" and value.strip().isdecimal():
            pid = int(value)
        elif kind == "+":
            marks[value.strip()] = None
        elif kind == "-":
            marks.pop(value.strip(), None)
    return pid, list(marks)
