"""`four watch --rescue` acts only on what a verified record vouches for.

A hostile workspace plants streams beside real runs: one edited after it was written
(its seal no longer verifies), one with a valid chain that names an unrelated process
tree as its driver, one whose settings name a working folder outside the watched one.
A real `four watch --rescue` resumes none of them and kills nothing: the unrelated tree
(a real `sh` with a child) survives every pass.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from four import Assistant, Message, System, User
from four._types import JSON, RunInfo
from four.observe._rescue import stop_driver
from four.trajectory import SigningKey
from four.trajectory._driver import Driver, boot_id, process_start
from four.trajectory._save import TrajectorySink
from tests.cli._runs import cli

HOUR = 3600.0


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process tree: a shell and the sleep it waits on."""
    tree = subprocess.Popen(["sh", "-c", "sleep 300 & wait"])
    try:
        yield tree
    finally:
        tree.kill()
        tree.wait()
        for pid in _children(tree.pid):
            os.kill(pid, 9)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _as(process: subprocess.Popen[bytes]) -> Driver:
    return Driver(platform.node(), process.pid, process_start(process.pid), boot_id())


def plant(
    folder: Path,
    driver: Driver,
    monkeypatch: pytest.MonkeyPatch,
    *,
    cli_settings: dict[str, JSON] | None = None,
    key: SigningKey | None = None,
) -> Path:
    """A stream with a valid chain, naming ``driver`` as its driver, its last step an
    hour ago (stalled while the driver lives, dead once it is gone)."""
    monkeypatch.setattr("four.trajectory._save.this_driver", lambda: driver)
    settings = cli_settings or {"attempt": 1, "cwd": str(folder)}
    sink = TrajectorySink(folder, RunInfo({"cli": settings}, 10, 3, time.time() - HOUR), key)
    sink._started = time.time()  # its steps recorded a second into a run begun an hour ago
    messages: list[Message] = [System("s"), User("count the files", "task")]
    for m in [*messages, Assistant("```bash\nls\n```")]:
        sink.append(m)
    monkeypatch.undo()
    past = time.time() - HOUR
    os.utime(sink.jsonl, (past, past))
    return sink.jsonl


def rescue(folder: Path, *extra: str) -> list[Any]:
    done = cli(
        "watch", str(folder), "--rescue", "--once", "--json", "--stall-floor", "1", *extra,
        timeout=60,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    runs: list[Any] = json.loads(done.stdout)["runs"]
    return runs


def _survives(tree: subprocess.Popen[bytes], children: list[int]) -> None:
    assert tree.poll() is None
    assert children and all(process_start(pid) is not None for pid in children)
    state = Path(f"/proc/{tree.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert state != "T", "the tree was left frozen"


def _no_attempt(folder: Path) -> None:
    assert not list(folder.glob(".*.attempt*.log")), "a new attempt was started"


def test_an_edited_stream_is_not_acted_on_and_the_process_it_names_survives(
    tmp_path: Path, victim: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    runs = tmp_path / "runs"
    runs.mkdir()
    stream = plant(runs, _as(victim), monkeypatch)
    # the attacker's edit: a working folder outside the watched one, under a broken seal
    text = stream.read_text().replace(json.dumps(str(runs)), json.dumps(str(outside)), 1)
    stream.write_text(text)
    past = time.time() - HOUR
    os.utime(stream, (past, past))
    until = time.monotonic() + 5
    while not _children(victim.pid) and time.monotonic() < until:
        time.sleep(0.05)
    children = _children(victim.pid)
    for _ in range(2):
        (run,) = rescue(runs, "--any-cwd")
        assert run["state"] == "stalled" and run["action"] == "failed", run
        assert "does not verify" in run["detail"] and "not acted on" in run["detail"]
        _survives(victim, children)
    _no_attempt(runs)
    assert not stream.with_suffix(".json").exists()  # not sealed either


def test_a_valid_stream_naming_an_unrelated_process_never_kills_it(
    tmp_path: Path, victim: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(tmp_path, _as(victim), monkeypatch)
    until = time.monotonic() + 5
    while not _children(victim.pid) and time.monotonic() < until:
        time.sleep(0.05)
    children = _children(victim.pid)
    (run,) = rescue(tmp_path)
    assert run["state"] == "stalled" and run["action"] == "failed", run
    assert "does not write this run's stream: not its driver, not touched" in run["detail"]
    _survives(victim, children)
    _no_attempt(tmp_path)


def test_a_dead_run_is_resumed_only_in_a_working_folder_inside_the_watched_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = subprocess.Popen(["true"])
    driver = _as(gone)
    gone.wait()
    runs = tmp_path / "runs"
    runs.mkdir()
    plant(runs, driver, monkeypatch, cli_settings={"attempt": 1, "cwd": str(tmp_path)})
    (run,) = rescue(runs)
    assert run["state"] == "dead" and run["action"] == "failed", run
    assert f"its working folder {tmp_path} is outside {runs}: not resumed" in run["detail"]
    _no_attempt(runs)


def test_with_a_key_only_runs_signed_by_it_are_acted_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from four.trajectory._sign import write_key_pair

    private, _ = write_key_pair(tmp_path / "watch.key")
    gone = subprocess.Popen(["true"])
    driver = _as(gone)
    gone.wait()
    runs = tmp_path / "runs"
    runs.mkdir()
    plant(runs, driver, monkeypatch, key=SigningKey.generate())  # signed, by another key
    (run,) = rescue(runs, "--sign", str(private))
    assert run["action"] == "failed" and "does not verify" in run["detail"], run
    _no_attempt(runs)


def test_the_driver_is_killed_only_when_it_writes_the_runs_stream(tmp_path: Path) -> None:
    stream = tmp_path / "run.jsonl"
    stream.write_text("")
    reader = subprocess.Popen(["sh", "-c", f"exec sleep 30 < {stream}"])
    writer = subprocess.Popen(["sh", "-c", f"exec sleep 30 >> {stream}"])
    try:
        time.sleep(0.2)  # each has its file open (exec'd)
        said = stop_driver(_as(reader), stream)
        assert (
            said
            == f"pid {reader.pid} does not write this run's stream: not its driver, not touched"
        )
        assert reader.poll() is None
        other_boot = Driver(platform.node(), writer.pid, process_start(writer.pid), "another")
        assert "another boot" in (stop_driver(other_boot, stream) or "")
        assert stop_driver(_as(writer), stream) is None
        assert writer.wait(timeout=10) == -9
    finally:
        for p in (reader, writer):
            p.kill()
            p.wait()
