"""Killing what a command started: its process group, and processes that carry its mark."""

from __future__ import annotations

import contextlib
import os
import signal

MARK = "FOUR_RUN"
"""The variable that tags every process of a command (it is inherited by all it starts)."""


def new_mark() -> str:
    """A fresh random value for ``MARK``."""
    return os.urandom(8).hex()


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_marked(mark: str) -> None:
    """SIGKILL every process whose environment has ``FOUR_RUN=mark``.

    This reaches what a process group does not: children that called setsid or
    daemonised (not those that also dropped the mark: ``env -i``). Linux only (it reads
    /proc/*/environ); elsewhere it does nothing.
    """
    entry = f"{MARK}={mark}".encode()
    for _ in range(2):  # a second pass for children forked during the first
        for pid in other_pids():
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if entry not in f.read().split(b"\0"):
                        continue
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                continue


def other_pids() -> list[int]:
    """Every process but this one ([] where /proc cannot be read: not Linux)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and int(name) != os.getpid()]
