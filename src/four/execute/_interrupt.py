"""Killing a run's running command from another thread: a supervisor's switch.

A supervisor (``four.batch``) runs each run inside ``interruptible(key)``: every command
an environment starts there is registered under ``key`` while it runs (its process group,
its ``FOUR_RUN`` mark, what its environment does at a timeout). ``interrupt(key)`` from
any thread kills them all, so a blocked V2 returns, and each command the run starts later
(one not yet started is not: it ends as killed, -9).

    >>> import threading
    >>> from four import Action, local_env
    >>> def work() -> None:
    ...     with interruptible("run-1"):
    ...         print(local_env()(Action("sleep 30")).unwrap().returncode)
    >>> t = threading.Thread(target=work); t.start()
    >>> import time; time.sleep(0.5)
    >>> interrupt("run-1") >= 0
    True
    >>> t.join()
    -9
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

from four.execute._kill import kill_group, kill_marked

# A context variable, not a thread-local: each asyncio task of an async batch has its own
# (and asyncio.to_thread carries it into the worker thread), as each thread has.
_key: contextvars.ContextVar[Hashable | None] = contextvars.ContextVar("four_run", default=None)
_lock = threading.Lock()
_running: dict[Hashable, set[Command]] = {}
_stopped: set[Hashable] = set()
_observers: list[Callable[[bool, Command], None]] = []


def observe(callback: Callable[[bool, Command], None]) -> Callable[[], None]:
    """Call ``callback(True, command)`` as each registered command starts and
    ``callback(False, command)`` as it ends (a worker keeps a journal of them, so the
    process that replaces it after a crash can kill what was left). Returns the undo."""
    _observers.append(callback)
    return lambda: _observers.remove(callback) if callback in _observers else None


def _tell(started: bool, command: Command) -> None:
    for callback in list(_observers):
        with contextlib.suppress(Exception):
            callback(started, command)


@dataclass(eq=False, slots=True)  # (by identity: a registry holds it in a set)
class Command:
    """One running command as the registry knows it (see ``running``)."""

    key: Hashable
    pgid: int | None
    mark: str | None
    on_kill: Callable[[], None] | None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _done: bool = False

    def kill(self) -> None:
        """Kill the command (not once it is done: its process group id may be reused)."""
        with self._lock:
            if self._done:
                return
            if self.on_kill is not None:
                with contextlib.suppress(Exception):
                    self.on_kill()
            if self.pgid is not None:
                kill_group(self.pgid)
            if self.mark is not None:
                kill_marked(self.mark)

    def release(self) -> None:
        """The command is over: take it out of the registry. Call before reaping it."""
        with self._lock:
            self._done = True
        with _lock:
            _running.get(self.key, set()).discard(self)
        _tell(False, self)


@contextlib.contextmanager
def interruptible(key: Hashable) -> Iterator[None]:
    """Register the commands this thread (or asyncio task) starts in the block under
    ``key``, unique to one run while the block lasts."""
    token = _key.set(key)
    try:
        yield
    finally:
        _key.reset(token)
        with _lock:
            _running.pop(key, None)
            _stopped.discard(key)


@contextlib.contextmanager
def keyed() -> Iterator[Hashable]:
    """The key the commands started in the block are registered under: the one already
    in force (a batch's run), else a new one for the block."""
    key = _key.get()
    if key is not None:
        yield key
        return
    key = object()
    with interruptible(key):
        yield key


def interrupt(key: Hashable) -> int:
    """Kill every command now running under ``key`` and, until its block ends, every
    command started under it later. Returns how many were running. Thread-safe."""
    with _lock:
        _stopped.add(key)
        commands = list(_running.get(key, ()))
    for command in commands:
        command.kill()
    return len(commands)


def stopped() -> bool:
    """This thread runs under a key that was interrupted: a command it would start now is
    to be killed at once (better not started: a quick one could end before the kill)."""
    key = _key.get()
    return key is not None and key in _stopped


def running(
    pgid: int | None, mark: str | None = None, on_kill: Callable[[], None] | None = None
) -> Command | None:
    """Register a command just started by this thread (None outside ``interruptible``);
    ``release()`` it once over, before reaping it. Under an interrupted key, it is killed."""
    key = _key.get()
    if key is None:
        return None
    command = Command(key, pgid, mark, on_kill)
    with _lock:
        _running.setdefault(key, set()).add(command)
        stopped = key in _stopped
    _tell(True, command)
    if stopped:
        command.kill()
    return command
