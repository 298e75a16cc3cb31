"""Ctrl-C at any moment of ``four run``: exit 130 with the run saved, sealed and valid.

Python's own handling left windows: a Ctrl-C between the record's opening and the loop's
first step left it unsealed, one during the seal cut it, and one once the command had
returned (the interpreter's last garbage collection, seconds long with litellm loaded)
killed the process with the default action: exit -2, with no status of its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from four import audit
from four.cli._signals import INTERRUPTED, Interrupts, install, kept
from four.trajectory import load_trajectory
from tests._server import Answer, LoopbackServer, Request, chat
from tests.cli._runs import ROOT, cli_env

TRIES = int(os.environ.get("FOUR_CTRL_C_TRIES", "12"))
"""SIGINTs the test sends, one a run, at offsets spread over a run and its exit."""
SPAN = 2.0
"""Seconds after the stream appears over which they are spread."""
STEPS = 8
"""The scripted model's commands before it submits (the run lasts about a second)."""


# --- the handler -------------------------------------------------------------------------


@pytest.fixture
def handler() -> Iterator[Interrupts]:
    """``install``'s handler on SIGINT for the test, the previous one put back after."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield install()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_first_ctrl_c_raises_the_second_waits_for_the_saving_the_third_raises(
    handler: Interrupts,
) -> None:
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)  # the run is saving itself: noted only
    with pytest.raises(KeyboardInterrupt):  # someone swallowed the first, or the user insists
        os.kill(os.getpid(), signal.SIGINT)
    assert handler.received == 3


def test_a_ctrl_c_inside_held_waits_for_the_end_of_the_block(handler: Interrupts) -> None:
    done = []
    with pytest.raises(KeyboardInterrupt), handler.held():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("sealed")  # not cut
    assert done == ["sealed"]


def test_a_hold_is_released_by_the_run_s_first_step(handler: Interrupts) -> None:
    handler.hold()
    os.kill(os.getpid(), signal.SIGINT)  # as the record opens
    with pytest.raises(KeyboardInterrupt):
        handler.release()  # the loop's first step: inside the run, which saves itself
    handler.release()  # a release too many changes nothing


def test_a_ctrl_c_a_library_swallowed_is_raised_again_as_the_call_ends(
    handler: Interrupts,
) -> None:
    swallowed = []
    with pytest.raises(KeyboardInterrupt), kept():  # a model call
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt as exc:  # pydantic made one a SchemaError inside litellm
            swallowed.append(exc)
    assert swallowed
    with kept():  # none came: nothing raised
        pass


def test_a_ctrl_c_as_the_command_ends_is_noted_and_the_status_is_130(
    handler: Interrupts,
) -> None:
    handler.ending()  # the command's last handler is behind it: nothing can be raised
    os.kill(os.getpid(), signal.SIGINT)
    assert handler.status(0) == INTERRUPTED


def test_once_the_command_returned_ctrl_c_is_ignored_and_the_status_is_130(
    handler: Interrupts,
) -> None:
    assert handler.status(0) == 0
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # through the interpreter's exit
    handler.handle(signal.SIGINT, None)  # one that was already on its way: noted
    assert handler.status(0) == INTERRUPTED


def test_main_called_in_a_process_that_goes_on_puts_the_handler_back(
    handler: Interrupts,
) -> None:
    from four.cli import main

    signal.signal(signal.SIGINT, signal.default_int_handler)  # (the fixture's, replaced)
    assert main(["--version"]) == 0
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_four_started_with_ctrl_c_ignored_keeps_it_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        install()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


# --- four run, interrupted at many moments -------------------------------------------------


def _model(request: Request) -> Answer:
    """``STEPS`` short commands, then a submission."""
    messages = request.json().get("messages")
    assert isinstance(messages, list)
    said = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    if said >= STEPS:
        return chat("```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```")
    return chat(f"```bash\nsleep 0.05; echo step {said}\n```")


def test_ctrl_c_at_any_moment_exits_130_with_the_run_saved_and_valid(tmp_path: Path) -> None:
    offsets = [round(SPAN * i / max(1, TRIES - 1), 3) for i in range(TRIES)]
    with LoopbackServer(default=_model) as server:
        done = subprocess.run(
            [sys.executable, "-m", "tests.cli._ctrl_c", server.url, str(tmp_path)]
            + [str(o) for o in offsets],
            capture_output=True,
            text=True,
            env=cli_env({"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}),
            cwd=ROOT,
            timeout=120 + 60 * TRIES,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    tries = [json.loads(line) for line in done.stdout.splitlines()]
    assert [t["offset"] for t in tries] == offsets
    outcomes = [check_try(t) for t in tries]
    assert "interrupted: KeyboardInterrupt" in outcomes  # (the early ones did interrupt it)


def check_try(t: dict[str, object]) -> str:
    """One try of ``_ctrl_c``'s (a JSON line): its status and its run as they must be; the
    run's outcome."""
    folder = Path(str(t["folder"]))
    out, err = (folder / "stdout").read_text(), (folder / "stderr").read_text()
    where = f"Ctrl-C {t['offset']} s after the stream appeared: {out!r} {err[-2000:]!r}"
    # 130, the run saved; or, if it came once `four run` had returned, what it returned
    assert t["status"] in (INTERRUPTED, 0), where
    assert "Traceback" not in err, where
    (saved,) = (folder / "runs").glob("*.json")  # sealed (its stream stays beside it)
    outcome = str(load_trajectory(saved).outcome)
    assert audit(saved).valid, where
    if t["status"] == INTERRUPTED and outcome.startswith("interrupted"):
        assert out.startswith(f"interrupted · saved {saved}"), where
    else:  # the run had ended: it said so, then the Ctrl-C came
        assert outcome == "exit:task_complete", where
    return outcome
