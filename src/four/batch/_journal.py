"""A worker's journal of its running commands, for the process that replaces it.

Commands run in sessions of their own (so a timeout can kill a whole group), which
also means they outlive a worker killed with SIGKILL: nothing reaps them. A Ray actor
keeps a journal, a file with a line per command started and ended (its ``FOUR_RUN``
mark), and the first line names the worker's pid. When Ray restarts the actor, the new
process reads the old journal and kills what was still running (every process holding
a mark), and removes the Docker containers the old process made (``docker_env`` labels
each with its creator's pid).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

from four.execute._interrupt import Command, observe
from four.execute._process import kill_marked


class Journal:
    """The journal at ``path``: ``open()`` cleans up after the last owner, then records."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        self._undo: object = None

    def open(self) -> list[str]:
        """Kill what the previous owner left running; start this process's journal.
        Returns what was cleaned up (for the log)."""
        cleaned = clean_up(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        os.write(self._fd, f"pid {os.getpid()}\n".encode())
        self._undo = observe(self._note)
        return cleaned

    def close(self) -> None:
        """Stop recording and remove the journal (nothing of ours is left to clean)."""
        undo, self._undo = self._undo, None
        if callable(undo):
            undo()
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        self.path.unlink(missing_ok=True)

    def _note(self, started: bool, command: Command) -> None:
        if command.mark is None or self._fd < 0:
            return
        # One short write with O_APPEND: whole lines, whichever thread writes.
        os.write(self._fd, f"{'+' if started else '-'} {command.mark}\n".encode())


def clean_up(path: Path) -> list[str]:
    """Kill the commands a journal says were running, and remove its writer's containers."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    pid: str | None = None
    marks: dict[str, None] = {}
    for line in text.splitlines():
        kind, _, value = line.partition(" ")
        if kind == "pid":
            pid = value.strip()
        elif kind == "+":
            marks[value.strip()] = None
        elif kind == "-":
            marks.pop(value.strip(), None)
    cleaned = []
    for mark in marks:
        kill_marked(mark)
        cleaned.append(f"command {mark}")
    if pid and pid.isdigit() and int(pid) != os.getpid():
        cleaned += [f"container {c}" for c in _remove_containers(pid)]
    return cleaned


def _remove_containers(pid: str) -> list[str]:
    docker = shutil.which("docker")
    if docker is None:
        return []
    from four.execute._docker import LABEL

    try:
        listed = subprocess.run(
            [docker, "ps", "-aq", "--filter", f"label={LABEL}={pid}"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
        if listed:
            subprocess.run(
                [docker, "rm", "-f", "-v", *listed],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=60,
            )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return listed
