"""Who drives a run: the host, process and its start time, recorded at the head of the
stream so that a reader can tell a run whose driver is gone from one still going (a
pid alone may have been reused; its start time, in clock ticks since boot, says)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

from four._types import JSON


@dataclass(frozen=True, slots=True)
class Driver:
    """A process, named so that a later reader can check it is still the same one."""

    host: str
    pid: int
    start: int | None  # /proc/PID/stat's starttime; None where there is no /proc
    boot: str | None  # the kernel's boot id: a start time counts from one boot

    def to_json(self) -> dict[str, JSON]:
        return {"host": self.host, "pid": self.pid, "start": self.start, "boot": self.boot}

    @staticmethod
    def from_json(data: JSON) -> Driver | None:
        """The driver a record names, or None when it names none (an older run)."""
        if not isinstance(data, dict):
            return None
        host, pid, start, boot = (data.get(k) for k in ("host", "pid", "start", "boot"))
        if not isinstance(host, str) or type(pid) is not int:
            return None
        return Driver(
            host,
            pid,
            start if type(start) is int else None,
            boot if isinstance(boot, str) else None,
        )


def process_start(pid: int) -> int | None:
    """A live process's start time (clock ticks since boot), or None if there is no
    such process (or no /proc to ask).

    >>> process_start(os.getpid()) is not None
    True
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields after its last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 of the whole line
    except (IndexError, ValueError):
        return None


_BOOT: list[str | None] = []


def boot_id() -> str | None:
    """This boot's id (Linux), read once."""
    if not _BOOT:
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
                _BOOT.append(f.read().strip() or None)
        except OSError:
            _BOOT.append(None)
    return _BOOT[0]


_SELF: dict[int, Driver] = {}


def this_driver() -> Driver:
    """This process as a driver (remembered per pid: a forked child is another driver)."""
    pid = os.getpid()
    known = _SELF.get(pid)
    if known is None:
        known = _SELF[pid] = Driver(platform.node(), pid, process_start(pid), boot_id())
    return known
