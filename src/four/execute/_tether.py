"""A clean-up that runs when this process dies, however it dies (SIGKILL included).

A tether is a small bash started once, with a clean environment, that blocks reading a
pipe whose only writer is this process. When this process ends, the kernel closes the
pipe, the read returns, and the tether runs its clean-up: it kills what the commands of
this process left (or removes a container). ``release()`` is the normal end: the tether
is killed before it cleans anything.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Mapping, Sequence

KILL_MARKED = r"""for d in /proc/[0-9]*; do
  p=${d#/proc/}; [ "$p" = "$$" ] && continue
  while IFS= read -r -d '' v; do
    [ "$v" = "$1" ] && { kill -9 "$p"; break; }
  done < "$d/environ"
done 2>/dev/null; true"""
"""Bash: kill every process (but this one) whose environment holds the entry ``$1``."""


class Tether:
    """Runs ``script`` (bash, with ``args`` as ``$1``...) once this process has died."""

    __slots__ = ("_fd", "_owner", "pid")

    def __init__(
        self, script: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> None:
        bash = shutil.which("bash") or "/bin/bash"
        read_fd, self._fd = os.pipe()  # the write end is not inherited by what we start
        try:
            # posix_spawn, not Popen: this process outlives the interpreter on purpose.
            self.pid = os.posix_spawn(
                bash,
                [bash, "-c", f"read -r _; {script}", "four-tether", *args],
                env or {"PATH": os.environ.get("PATH", os.defpath)},  # no secret to show
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read_fd, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_DUP2, 1, 2),
                ],
                setsid=True,  # a Ctrl-C of our terminal must not fire it early
            )
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
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False

    def release(self) -> None:
        """The normal end: stop the tether without running its clean-up."""
        if self._owner != os.getpid():
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._owner = -1
