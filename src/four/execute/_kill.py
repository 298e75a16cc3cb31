"""Killing what a command started: its process group, the processes that carry its mark,
and, through a tether, what is left when this process dies, however it dies.

A tether is a small bash started once, with a clean environment, that blocks reading a
pipe whose only writer is this process. When this process ends, the kernel closes the
pipe, the read returns, and the tether runs its clean-up (it kills what the commands of
this process left, or removes a container). ``release()`` is the normal end.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence

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
    """SIGKILL every process whose environment has ``FOUR_RUN=mark``: what left the
    process group (setsid, a daemon) but kept the mark. Linux only (/proc/*/environ)."""
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


KILL_MARKED = r"""for d in /proc/[0-9]*; do
  p=${d#/proc/}; [ "$p" = "$$" ] && continue
  while IFS= read -r -d '' v; do
    [ "$v" = "$1" ] && { kill -9 "$p"; break; }
  done < "$d/environ"
done 2>/dev/null; true"""
"""Bash: kill every process (but this one) whose environment holds the entry ``$1``."""


# Started by a short-lived bash that leaves it running and says its pid: the tether is no
# descendant of ours (a check for processes a component left behind does not count it).
_DETACH = (
    'exec 3<&0 </dev/null; "$BASH" -c "$0" four-tether "$@" <&3 3<&- >/dev/null 2>&1 & echo $!'
)


class Tether:
    """Runs ``script`` (bash, with ``args`` as ``$1``...) once this process has died."""

    __slots__ = ("_fd", "_owner", "_pidfd", "pid")

    def __init__(
        self, script: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> None:
        bash = shutil.which("bash") or "/bin/bash"
        read_fd, self._fd = os.pipe()  # the write end is not inherited by what we start
        try:
            said = subprocess.run(
                [bash, "-c", _DETACH, f"read -r _; {script}", *args],
                stdin=read_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env or {"PATH": os.environ.get("PATH", os.defpath)},  # no secret to show
                start_new_session=True,  # a Ctrl-C of our terminal must not fire it early
                check=True,
            )
            self.pid = int(said.stdout)
            self._pidfd = os.pidfd_open(self.pid)  # a kill that cannot hit a reused pid
        except BaseException:
            os.close(self._fd)
            raise
        finally:
            os.close(read_fd)
        self._owner = os.getpid()

    def alive(self) -> bool:
        """Whether the tether still watches this process (not a fork's inherited copy)."""
        if self._owner != os.getpid():
            return False
        poller = select.poll()
        poller.register(self._pidfd, select.POLLIN)
        return not poller.poll(0)  # the pidfd is readable once the tether has exited

    def release(self) -> None:
        """The normal end: stop the tether without running its clean-up."""
        if self._owner != os.getpid():
            return
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        for fd in (self._pidfd, self._fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._owner = -1
