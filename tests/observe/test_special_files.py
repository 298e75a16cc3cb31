"""Special files among runs: every folder reader skips each with a line, and reads the rest.

A folder holds a real run and, named like records, what a hostile workspace or a broken
disk leaves: FIFOs (the record, the stream beside a sealed record, the batch manifest,
the watch log), links to ``/dev/zero``, symbolic link loops, a socket, a file nested
200,000 brackets deep, a run 1,200 folders down, and a search's group record
(``*.attempts.json``, not a run). `four fleet`, `watch`, `stats`, `audit` and `mcp serve`'s
listing each finish soon, count the real run, and name each special file in a line.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from four._files import Unreadable, open_regular, walk
from tests.cli._runs import cli, sample_run

SECONDS = 20.0
"""What "soon" means: a reader that waits on a FIFO or reads /dev/zero fails it."""

SPECIAL = ("fifo.jsonl", "fifo.json", "zero.jsonl", "zero.json", "loop.jsonl", "sock.jsonl")


@pytest.fixture(scope="module")
def runs() -> Iterator[Path]:
    # not under pytest's temporary folders: their clean-up recurses, and fails this deep
    root = Path(tempfile.mkdtemp(prefix="four-special-"))
    server = socket.socket(socket.AF_UNIX)
    try:
        _plant(root, server)
        yield root
    finally:
        server.close()
        _unnest(root / "deep")
        shutil.rmtree(root)


def _plant(root: Path, server: socket.socket) -> None:
    good = sample_run(root / "good")
    bad = root / "bad"
    bad.mkdir()
    os.mkfifo(bad / "fifo.jsonl")
    os.mkfifo(bad / "fifo.json")
    (bad / "zero.jsonl").symlink_to("/dev/zero")
    (bad / "zero.json").symlink_to("/dev/zero")
    (bad / "loop.jsonl").symlink_to("loop.jsonl")
    server.bind(str(bad / "sock.jsonl"))
    (bad / "deep.json").write_text("[" * 200_000)
    (bad / "deep.jsonl").write_text('{"type": "start", "info": ' + "[" * 200_000 + "\n")
    (bad / "g1.attempts.json").write_text(json.dumps({"format": "four.attempts/1"}))
    # a sealed record whose stream was swapped for a FIFO, and FIFO logs beside it
    shutil.copy(good, bad / "sealed.json")
    os.mkfifo(bad / "sealed.jsonl")
    os.mkfifo(bad / "manifest.jsonl")
    os.mkfifo(bad / "watch.jsonl")
    _nested(root / "deep", 1200, good.with_suffix(".jsonl").read_bytes())


def _unnest(top: Path) -> None:
    """Remove what ``_nested`` made, a level at a time from the top (``shutil.rmtree``
    recurses, and would fail this deep): the level below ``d`` moves up to replace it."""
    while (top / "d").is_dir():
        below = top / "d" / "d"
        if below.is_dir():
            below.rename(top / "next")
        for leftover in (top / "d").iterdir():
            leftover.unlink()
        (top / "d").rmdir()
        if (top / "next").is_dir():
            (top / "next").rename(top / "d")


def _nested(top: Path, levels: int, stream: bytes) -> None:
    """A run's stream ``levels`` folders down (made relative to each folder: the whole
    path is longer than a path may be)."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    out = os.open("run.jsonl", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, stream)
    os.close(out)
    os.close(fd)


def _no_traceback(done: object) -> None:
    assert "Traceback" not in str(done), done


def test_fleet_counts_the_run_and_names_the_special_files(runs: Path) -> None:
    done = cli("fleet", "--json", str(runs), timeout=SECONDS)
    _no_traceback(done)
    assert done.returncode == 0, done.stderr
    (status,) = json.loads(done.stdout)
    assert status["finished"] >= 1
    unreadable = "\n".join(status["unreadable"])
    for name in (*SPECIAL, "deep.json", "manifest.jsonl"):
        assert f"/bad/{name}" in unreadable, name
    assert "attempts.json" not in unreadable


def test_watch_lists_the_run_and_names_the_special_files(runs: Path) -> None:
    done = cli("watch", "--once", str(runs), timeout=SECONDS)
    _no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert "2 finished" in done.stdout  # the good run, and its copy 1,200 folders down
    for name in ("fifo.jsonl", "zero.jsonl", "loop.jsonl", "sock.jsonl", "sealed.jsonl"):
        assert f"four watch: skipped: {runs}/bad/{name} is " in done.stderr, name
    assert "watch.jsonl" in done.stderr  # the watch log, a FIFO: not waited on


def test_stats_counts_the_run_and_names_the_special_files(runs: Path) -> None:
    done = cli("stats", "--json", str(runs), timeout=SECONDS)
    _no_traceback(done)
    summary = json.loads(done.stdout)
    assert summary["runs"] == 3  # the good run, its sealed copy, its stream 1,200 down
    for name in ("fifo.json", "zero.json", "loop.jsonl", "sock.jsonl", "manifest.jsonl"):
        assert f"{runs}/bad/{name}" in summary["skipped"], name
    assert not any(p.endswith(".attempts.json") for p in summary["skipped"])
    assert all(line.startswith("four stats: skipped") for line in done.stderr.splitlines())


def test_audit_judges_each_file_and_goes_on(runs: Path) -> None:
    done = cli("audit", str(runs), timeout=SECONDS)
    _no_traceback(done)
    assert done.returncode == 1  # the special files are not valid runs
    lines = done.stdout.splitlines()
    assert any(line.startswith("valid") and "good/" in line for line in lines), lines
    for name in ("fifo.json", "zero.json", "loop.jsonl", "sock.jsonl"):
        (line,) = [x for x in lines if f"bad/{name} " in x]
        assert line.startswith("invalid") and " is " in line, line
    assert not done.stderr


def test_mcp_serve_lists_only_regular_runs(runs: Path) -> None:
    from four.domains.mcp._serve import ServeSettings, saved_runs

    listed = saved_runs(ServeSettings(runs / "bad"))
    assert {p.name for p in listed} == {"sealed.json", "deep.json"}


def test_the_opener_names_what_a_file_is(runs: Path) -> None:
    bad = runs / "bad"
    expected = {
        "fifo.jsonl": "is a FIFO (named pipe), not a regular file",
        "zero.json": "is a character device (a symbolic link to /dev/zero)",
        "loop.jsonl": "is a symbolic link loop (to loop.jsonl)",
        "sock.jsonl": "is a socket, not a regular file",
    }
    for name, words in expected.items():
        with pytest.raises(Unreadable) as caught:
            open_regular(bad / name)
        assert str(caught.value) == f"{bad / name} {words}" or words in str(caught.value)
    with pytest.raises(Unreadable, match=r"zero.json is a symbolic link \(to /dev/zero\)"):
        open_regular(bad / "zero.json", follow=False)


def test_the_walk_reaches_the_deepest_folder_without_recursion(runs: Path) -> None:
    deepest = [listing for listing in walk(runs / "deep") if listing.files]
    assert [listing.files for listing in deepest] == [("run.jsonl",)]
    kinds = dict(next(x for x in walk(runs / "bad") if x.folder.name == "bad").others)
    assert kinds["fifo.jsonl"].endswith("is a FIFO (named pipe), not a regular file")
    assert kinds["zero.json"].endswith(
        "is a symbolic link (to /dev/zero), not followed in a folder"
    )
