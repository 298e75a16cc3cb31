"""Ctrl-C for the ``four`` command: exit 130, the run saved, whenever it comes.

Python's own raises ``KeyboardInterrupt`` wherever the main thread is, again inside the
handler saving the run, and, once the command returned, one during the interpreter's last
garbage collection (seconds long with litellm loaded) killed the process: exit -2.
``Interrupts`` replaces it while the command runs. A ``four`` started with SIGINT ignored
(a background job of a script) keeps it ignored.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType

INTERRUPTED = 130
"""The exit status of a command ended by Ctrl-C (128 + SIGINT)."""


@dataclass(eq=False, slots=True)  # (eq=False: one is never another with the same counts)
class Interrupts:
    """The ``four`` command's SIGINT handler and what it heard (main thread only).

    >>> interrupts = Interrupts()
    >>> interrupts.status(1)  # the command returned 1, and no Ctrl-C came
    1
    >>> interrupts.handle(signal.SIGINT, None)  # one as the process exits: noted only
    >>> interrupts.status(1)
    130
    """

    received: int = 0  # SIGINTs since install
    previous: Callable[[int, FrameType | None], object] | int | None = signal.default_int_handler
    _depth: int = 0  # held() blocks entered and not left
    _pending: bool = False  # one came while held: raised at the block's end
    _raised: int = 0  # KeyboardInterrupts raised
    _done: bool = False  # the command returned: noted only

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler: raise the first (the third...), never inside ``held()``,
        never once the command has returned."""
        self.received += 1
        if self._done:
            return
        if self._depth:
            self._pending = True
            return
        if self._raised and self.received < 3:
            return
        self._raised += 1
        raise KeyboardInterrupt

    def hold(self) -> None:
        """From now until ``release``, a Ctrl-C waits (holds nest)."""
        self._depth += 1

    def release(self) -> None:
        """End one ``hold``; after the last, a Ctrl-C that waited is raised (once)."""
        self._depth = max(0, self._depth - 1)
        if not self._depth and self._pending and not self._raised and not self._done:
            self._pending = False
            self._raised += 1
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Within: a Ctrl-C waits for the block's end (then it is raised, once)."""
        self.hold()
        try:
            yield
        finally:
            self.release()

    def ending(self) -> None:
        """The command is returning: from now on a Ctrl-C is only noted (the status is 130),
        so none can escape between the command's last handler and ``status``."""
        self._done = True

    def status(self, status: int, *, exiting: bool = True) -> int:
        """The command returned ``status``: 130 if a Ctrl-C came at all. ``exiting`` (the
        ``four`` program): SIGINT is ignored from now on, the interpreter's exit included;
        else (``main`` called in a process that goes on) the handler before ``install``
        is put back."""
        self._done = True
        with contextlib.suppress(ValueError):  # not the main thread: nothing was installed
            if signal.getsignal(signal.SIGINT) == self.handle:
                # (pending calls of the handler run here first: they only note)
                signal.signal(signal.SIGINT, signal.SIG_IGN if exiting else self.previous)
        if self.received:
            # Tell CPython the Ctrl-C was handled. A KeyboardInterrupt that leaves an `exec`
            # or `eval` of a string (dataclasses write methods so, in litellm's imports on the
            # first model call), even one caught after, sets a flag for the whole process,
            # and `python -m` then ends it by SIGINT at exit (-2), whatever status it
            # returned. Each such `exec` clears the flag as it starts: one of nothing does.
            exec("None")
        return INTERRUPTED if self.received else status


def install() -> Interrupts:
    """Handle SIGINT with a new ``Interrupts`` (unless SIGINT is ignored, or this is not
    the main thread: then it is left as it is); the one ``held`` uses from now on."""
    interrupts = Interrupts()
    with contextlib.suppress(ValueError):  # not the main thread
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            interrupts.previous = signal.signal(signal.SIGINT, interrupts.handle)
    return interrupts


def installed() -> Interrupts | None:
    """The ``Interrupts`` handling SIGINT now, if any (what ``held`` uses)."""
    owner = getattr(signal.getsignal(signal.SIGINT), "__self__", None)  # of its bound handle
    return owner if isinstance(owner, Interrupts) else None


def held() -> contextlib.AbstractContextManager[None]:
    """``Interrupts.held`` of the installed handler (nothing held when there is none, or
    outside the main thread, where no Ctrl-C is raised)."""
    current = installed() if threading.current_thread() is threading.main_thread() else None
    return current.held() if current is not None else contextlib.nullcontext()


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Within (a model call, a command): a Ctrl-C that a library swallowed is raised again
    as the block ends. pydantic turned one into a ``SchemaError`` as litellm built its
    models on the first call, and the run ended ``model_error`` instead of ``interrupted``."""
    current = installed()
    before = current.received if current is not None else 0
    yield
    if current is not None and current.received != before and not current._done:
        raise KeyboardInterrupt
