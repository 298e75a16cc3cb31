"""An actor's journal, and the sweep of journals whose actors died for good."""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from four.batch._journal import NAME, clean_up, sweep
from four.execute._kill import MARK


def dead_pid() -> int:
    """A pid that was just used and has ended (and been reaped)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


@pytest.fixture
def marked() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A command running in a session of its own, marked as a run's commands are."""
    mark = secrets.token_hex(8)
    proc = subprocess.Popen(["sleep", "60"], env={**os.environ, MARK: mark}, start_new_session=True)
    yield mark, proc
    proc.kill()
    proc.wait()


def journal(folder: Path, pid: int, lines: str, age: float) -> Path:
    path = folder / NAME.format(secrets.token_hex(8))
    path.write_text(f"pid {pid}\n{lines}")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_a_dead_writers_old_journal_is_cleaned_up_and_removed(
    tmp_path: Path, marked: tuple[str, subprocess.Popen[bytes]]
) -> None:
    mark, proc = marked
    own = tmp_path / NAME.format("own")
    own.write_text(f"pid {os.getpid()}\n")
    left = journal(tmp_path, dead_pid(), f"+ {mark}\n+ ended\n- ended\n", age=120)
    other = tmp_path / "four-ray-notes.txt"  # not a journal
    other.write_text("pid 1\n")
    assert sweep(own) == [f"command {mark}"]
    assert proc.wait(timeout=10) == -9
    assert not left.exists() and own.exists() and other.exists()


def test_journals_of_live_writers_and_recent_ones_are_kept(
    tmp_path: Path, marked: tuple[str, subprocess.Popen[bytes]]
) -> None:
    mark, proc = marked
    own = tmp_path / NAME.format("own")
    live = journal(tmp_path, proc.pid, f"+ {mark}\n", age=120)  # its writer still runs
    recent = journal(tmp_path, dead_pid(), f"+ {mark}\n", age=0)  # its actor may restart
    assert sweep(own) == []
    assert live.exists() and recent.exists() and proc.poll() is None
    assert sweep(own, quiet=0) == [f"command {mark}"]  # the dead writer's, once quiet
    assert live.exists() and not recent.exists() and proc.wait(timeout=10) == -9


def test_clean_up_reads_a_torn_journal(tmp_path: Path) -> None:
    path = tmp_path / NAME.format("torn")
    path.write_text("pid ²\n+ a\n- a\n+ b")  # a bad pid line, a last line cut short
    assert clean_up(path) == ["command b"]
    assert clean_up(tmp_path / "missing.journal") == []
