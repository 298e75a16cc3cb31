"""``four run --local`` with a Ctrl-C at one named moment, sent by the run to itself.

    python -m tests.cli._ctrl_c_local PHASE API_BASE FOLDER

runs, in this process and as the ``four`` program does (its interpreter's exit
included), ``four run --local FOLDER/fake.gguf`` in ``FOLDER/work``, its runs saved in
``FOLDER/runs``. The model server is ``_fake_llama.py`` (the real child's protocol, no
model: it names ``API_BASE``'s server). At ``PHASE`` the process sends itself SIGINT:
``os.kill`` runs the handler before it returns, so the Ctrl-C comes exactly there, with
no sleep. ``first-step`` is sent by the test's model server instead, on its first request.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.abc
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

PHASES = (
    "startup", "command-import", "server-start", "server-load", "server-ready", "setup",
    "record-open", "first-step", "swallowed", "in-exec", "command", "seal", "report", "server-stop", "exit",
)  # fmt: skip
"""The moments, in the order a run meets them."""
BEFORE_THE_RECORD = PHASES[: PHASES.index("record-open")]
"""Where there is no run to save yet: 130, ``interrupted``, nothing written."""
AFTER_THE_COMMAND = ("server-stop", "exit")
"""Once ``four run`` has returned: the Ctrl-C is ignored, its status stands."""


def interrupt() -> None:
    """Ctrl-C, now."""
    os.kill(os.getpid(), signal.SIGINT)


def _before(owner: object, name: str) -> None:
    """``owner.name`` gets a Ctrl-C as it is called."""
    original: Callable[..., object] = getattr(owner, name)

    def wrapped(*args: object, **kwargs: object) -> object:
        interrupt()
        return original(*args, **kwargs)

    setattr(owner, name, wrapped)


def _swallowed(owner: object, name: str) -> None:
    """``owner.name`` gets a Ctrl-C as it is called, which it swallows and goes on (as
    pydantic did inside litellm's first call, making it a ``SchemaError``)."""
    original: Callable[..., object] = getattr(owner, name)

    def wrapped(*args: object, **kwargs: object) -> object:
        with contextlib.suppress(KeyboardInterrupt):
            interrupt()
        return original(*args, **kwargs)

    setattr(owner, name, wrapped)


def _in_exec(owner: object, name: str) -> None:
    """``owner.name`` gets a Ctrl-C from inside an ``exec`` of a string, as it is called
    (as when one comes while dataclasses write a class's methods in litellm's imports)."""
    original: Callable[..., object] = getattr(owner, name)

    def wrapped(*args: object, **kwargs: object) -> object:
        exec("interrupt()", {"interrupt": interrupt})
        return original(*args, **kwargs)

    setattr(owner, name, wrapped)


def _after(owner: object, name: str) -> None:
    """``owner.name`` gets a Ctrl-C as it returns."""
    original: Callable[..., object] = getattr(owner, name)

    def wrapped(*args: object, **kwargs: object) -> object:
        try:
            return original(*args, **kwargs)
        finally:
            interrupt()

    setattr(owner, name, wrapped)


class _OnImport(importlib.abc.MetaPathFinder):
    """A Ctrl-C as the module ``name`` is about to be imported."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if fullname == self.name:
            sys.meta_path.remove(self)
            interrupt()


def arm(phase: str) -> None:
    """Place the Ctrl-C of ``phase`` (before the ``four`` command starts)."""
    if phase == "startup":  # the first thing ``main`` does once its handler is in place
        sys.meta_path.insert(0, _OnImport("four.cli._terminal"))
    elif phase == "command-import":
        sys.meta_path.insert(0, _OnImport("four.cli._run"))
    elif phase == "exit":
        atexit.register(interrupt)  # first registered: it runs last, after four's own
    elif phase != "first-step":
        from four.cli import _live, _run
        from four.invoke import _chat, _local
        from four.trajectory import _save

        owner, name, when = {
            "server-start": (_local, "start_server", _before),
            "server-load": (_local, "_ready_line", _before),
            "server-ready": (_run, "start_local", _after),
            "setup": (_run, "prepare", _before),
            "record-open": (_live.Recording, "open", _after),
            "swallowed": (_chat.LitellmInvoke, "__call__", _swallowed),
            "in-exec": (_chat.LitellmInvoke, "__call__", _in_exec),
            "command": (_live.Display, "command_started", _before),
            "seal": (_save.TrajectorySink, "close", _before),
            "report": (_run, "report", _before),
            "server-stop": (_local.LocalServer, "stop", _before),
        }[phase]
        when(owner, name)


def main(argv: list[str]) -> None:
    phase, api_base, folder = argv[0], argv[1], Path(argv[2])
    # As a terminal's foreground job: Ctrl-C not ignored (a background job of a
    # non-interactive shell, pytest's too, starts with SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ["FOUR_TEST_LLAMA_ADDRESS"] = api_base.removesuffix("/v1")
    os.environ["FOUR_TEST_LLAMA_PID"] = str(folder / "server.pid")
    model = folder / "fake.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 4096)
    (folder / "work").mkdir()
    arm(phase)
    from four.invoke import _local

    _local._CHILD = Path(__file__).with_name("_fake_llama.py")
    from four.cli import main as four

    sys.argv = ["four", "run", "list the files", "--local", str(model), "-q"]
    sys.argv += ["-o", str(folder / "runs"), "--cwd", str(folder / "work")]
    raise SystemExit(four())


if __name__ == "__main__":
    main(sys.argv[1:])
