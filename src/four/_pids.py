"""Whether a process id is in use: the one question the lock files and journals ask."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (one of another user's counts; a reused id
    counts too: a caller keeps what the process held rather than lose it).

    >>> pid_alive(os.getpid())
    True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
