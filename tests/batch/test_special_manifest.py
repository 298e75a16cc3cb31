"""A batch's manifest and an actor's journal are read through the shared opener.

In place of ``manifest.jsonl`` (or of a journal) a hostile workspace can leave a FIFO,
which an ordinary open waits on forever, a link to ``/dev/zero``, which reads forever, or
a sparse file of many GiB, which a ``read_text`` would hold in memory. Each is refused
with one line naming the file, at once; a journal that is none is left alone, and a
new journal replaces a FIFO planted where it goes.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from four._files import Unreadable
from four.batch import Item, RunContext, iter_runs, read_manifest, read_results
from four.batch._journal import MAX_BYTES as JOURNAL_MAX
from four.batch._journal import NAME, Journal, clean_up, sweep
from four.batch._result import MANIFEST
from four.batch._result import MAX_BYTES as MANIFEST_MAX
from tests.cli._runs import cli

SECONDS = 10.0
"""What "at once" means here: a reader that waits on a FIFO or reads /dev/zero fails."""

T = TypeVar("T")


def soon(call: Callable[[], T]) -> T:
    """``call()``, failed if it takes more than ``SECONDS`` (a hang ends the test)."""

    def late(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {SECONDS} s")

    before = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, SECONDS)
    try:
        return call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def plant(path: Path, kind: str, limit: int) -> str:
    """``path`` made a FIFO, a link to /dev/zero, or a sparse file one byte over
    ``limit``; the words the refusal must hold."""
    if kind == "fifo":
        os.mkfifo(path)
        return "is a FIFO (named pipe), not a regular file"
    if kind == "zero":
        path.symlink_to("/dev/zero")
        return "/dev/zero"
    with path.open("wb") as f:
        f.truncate(limit + 1)  # a hole: no room on disk
    return "over the limit"


KINDS = ["fifo", "zero", "huge"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_manifest_that_is_no_regular_file_is_refused_in_one_line(
    tmp_path: Path, kind: str
) -> None:
    words = plant(tmp_path / MANIFEST, kind, MANIFEST_MAX)
    for read in (read_results, read_manifest):
        with pytest.raises(Unreadable) as raised:
            soon(functools.partial(read, tmp_path))
        message = str(raised.value)
        assert str(tmp_path / MANIFEST) in message and words in message, message
        assert "\n" not in message


def test_no_manifest_is_an_empty_one(tmp_path: Path) -> None:
    assert read_results(tmp_path) == [] and read_manifest(tmp_path / MANIFEST) == {}


def _never(ctx: RunContext) -> None:
    raise AssertionError("no run starts over a manifest that cannot be read")


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_over_such_a_manifest_stops_before_any_run(tmp_path: Path, kind: str) -> None:
    words = plant(tmp_path / MANIFEST, kind, MANIFEST_MAX)
    with pytest.raises(Unreadable, match=re.escape(words)):
        soon(lambda: list(iter_runs(_never, [Item("a", "say hi")], tmp_path)))


def test_four_batch_names_a_fifo_manifest_and_exits_2(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "task": "say hi"}\n')
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / MANIFEST)
    began = time.monotonic()
    done = cli(
        "batch", str(tasks), "-o", str(out), "--model", "openai/x",
        "--api-base", "http://127.0.0.1:9/v1", timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "manifest.jsonl is a FIFO (named pipe)" in lines[0]
    assert time.monotonic() - began < 30


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / NAME.format("planted")


@pytest.mark.parametrize("kind", KINDS)
def test_a_journal_that_is_no_regular_file_cleans_up_nothing(journal: Path, kind: str) -> None:
    plant(journal, kind, JOURNAL_MAX)
    assert soon(lambda: clean_up(journal)) == []
    old = time.time() - 3600
    os.utime(journal, (old, old), follow_symlinks=False)
    own = journal.with_name(NAME.format("own"))
    assert soon(lambda: sweep(own)) == []
    assert journal.is_symlink() or journal.exists()  # not ours to judge: left alone


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_new_journal_replaces_what_was_planted_in_its_place(journal: Path, kind: str) -> None:
    plant(journal, kind, JOURNAL_MAX)
    keeper = soon(lambda: Journal(journal))
    assert keeper.cleaned == []
    try:
        assert journal.is_file() and not journal.is_symlink()
        assert journal.read_text() == f"pid {os.getpid()}\n"
    finally:
        keeper.close()
    assert not journal.exists() and Path("/dev/zero").exists()
