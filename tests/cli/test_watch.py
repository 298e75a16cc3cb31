"""`four watch`: real `four run` processes against the loopback model server, killed or
stuck, then classified and rescued by real `four watch` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from four.cli._run import INTERRUPTED
from four.trajectory._driver import process_start
from tests._server import CHAT, LoopbackServer, chat
from tests.cli._runs import SUBMIT, cli, cli_env

BEAT = {"FOUR_HEARTBEAT": "0.2"}


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def start_run(server: LoopbackServer, tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    runs = tmp_path / "runs"
    work = tmp_path / "work"
    work.mkdir()
    argv = ["run", "count the files", "--model", "test-model", "--api-base", server.url]
    with open(tmp_path / "run.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "four.cli", *argv, "-o", str(runs), "--cwd", str(work), "-q"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=cli_env(BEAT),
        )
    return process, runs


def until(what: str, test: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not callable(test) or not test():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def stream_holds(runs: Path, text: str) -> bool:
    return any(text in p.read_text() for p in runs.glob("*.jsonl"))


def descendants(driver: int) -> list[int]:
    """Every process under ``driver``."""
    parents: dict[int, int] = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        parents[int(name)] = int(stat[stat.rfind(b")") + 2 :].split()[1])

    def under(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == driver:
                return True
        return False

    return [pid for pid in parents if under(pid)]


def sleepers(driver: int) -> list[int]:
    """The `sleep` processes started by ``driver``."""
    out = []
    for pid in descendants(driver):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"sleep"):
                out.append(pid)
        except OSError:
            continue
    return out


def alive(processes: list[tuple[int, int | None]]) -> list[int]:
    """Those of ``processes`` (pid, start time) still running."""
    return [pid for pid, start in processes if process_start(pid) == start]


def watch(runs: Path, *extra: str) -> tuple[int, Any]:
    done = cli("watch", str(runs), "--once", "--json", *extra, env=BEAT)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def states(report: Any) -> dict[str, str]:
    runs = report["runs"]
    assert isinstance(runs, list)
    return {Path(r["run"]).name: r["state"] for r in runs}


def finished_attempt(runs: Path) -> Any:
    """The sealed document of the second attempt, once it is there."""

    def found() -> Any:
        for p in runs.glob("*.json"):
            doc = json.loads(p.read_text())
            if doc["info"]["components"]["cli"].get("attempt") == 2:
                return doc
        return None

    until("the new attempt to finish", lambda: found() is not None)
    document = found()
    assert document is not None
    return document


def test_a_killed_run_is_resumed_once_by_two_watchers_with_no_model_call_repeated(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.push(chat("```bash\necho one\n```"), chat("```bash\nsleep 30\n```"), chat(SUBMIT))
    process, runs = start_run(server, tmp_path)
    orphan: list[int] = []
    try:
        until("the sleep to start", lambda: sleepers(process.pid))
        orphan = sleepers(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        status, report = watch(runs)
        assert status == 1 and list(states(report).values()) == ["dead"]
        # two watchers at once: the run is resumed once
        both = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "four.cli",
                    "watch",
                    str(runs),
                    "--rescue",
                    "--once",
                    "--any-cwd",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(BEAT),
            )
            for _ in range(2)
        ]
        outputs = [p.communicate(timeout=60) for p in both]
        assert all(p.returncode in (0, 1) for p in both), outputs
        document = finished_attempt(runs)
    finally:
        if process.poll() is None:
            process.kill()
        for pid in orphan:
            if process_start(pid) is not None:
                os.kill(pid, signal.SIGKILL)
    assert document["outcome"] == "exit:task_complete"
    log = [json.loads(line) for line in (runs / "watch.jsonl").read_text().splitlines()]
    assert [e["action"] for e in log] == ["resumed"], log
    bodies = server.bodies(CHAT)
    assert len(bodies) == 3  # echo, sleep, then the submission: none asked twice
    histories = [json.dumps(b["messages"]) for b in bodies]
    assert len(set(histories)) == 3
    last: Any = bodies[-1]["messages"]
    assert INTERRUPTED in last[-1]["content"]
    assert "one" in last[-3]["content"]  # the first command's output was kept
    assert document["info"]["resumed_from"] == len(last)
    # the old run is sealed as stopped; every file audits; the next pass is quiet
    status, report = watch(runs)
    assert status == 0 and sorted(states(report).values()) == ["finished", "resumed"]
    assert cli("audit", str(runs)).returncode == 0
    old = next(
        p
        for p in runs.glob("*.json")
        if json.loads(p.read_text())["outcome"] != "exit:task_complete"
    )
    assert json.loads(old.read_text())["outcome"].startswith("stopped: dead: not sealed")


def test_a_run_stuck_in_a_long_sleep_is_stopped_as_stalled_and_its_command_killed(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.push(chat("```bash\nsleep 600\n```"), chat(SUBMIT))
    process, runs = start_run(server, tmp_path)
    sleep: list[tuple[int, int | None]] = []
    try:
        until("the sleep to start", lambda: sleepers(process.pid))
        sleep = [(pid, process_start(pid)) for pid in descendants(process.pid)]
        status, report = watch(runs, "--stall-floor", "60")
        assert status == 0 and list(states(report).values()) == ["running"]
        time.sleep(1.2)
        status, report = watch(runs, "--rescue", "--any-cwd", "--stall-floor", "1")
        assert status == 0, report
        (verdict,) = report["runs"]
        assert verdict["state"] == "stalled" and verdict["action"] == "resumed", verdict
        process.wait(timeout=10)
        assert process.returncode == -signal.SIGKILL
        until("its commands to die", lambda: not alive(sleep), 10)
        document = finished_attempt(runs)
    finally:
        if process.poll() is None:
            process.kill()
        for pid, start in sleep:
            if process_start(pid) == start:
                os.kill(pid, signal.SIGKILL)
    assert document["outcome"] == "exit:task_complete"
    stopped = [json.loads(p.read_text())["outcome"] for p in runs.glob("*.json")]
    assert any(o.startswith("stopped: stalled: no step for") for o in stopped), stopped
    assert cli("audit", str(runs)).returncode == 0


def test_a_killed_batch_item_is_resumed_and_added_to_the_batch_manifest(
    server: LoopbackServer, tmp_path: Path
) -> None:
    from four.batch import read_manifest

    server.push(chat("```bash\nsleep 30\n```"), chat(SUBMIT))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "task": "count the files"}) + "\n")
    out = tmp_path / "out"
    argv = ["batch", str(tasks), "-m", "test-model", "--api-base", server.url, "-o", str(out)]
    with open(tmp_path / "batch.log", "wb") as log:
        batch = subprocess.Popen(
            [sys.executable, "-m", "four.cli", *argv, "-w", "1", "-q"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=cli_env(BEAT),
        )
    orphan: list[int] = []
    try:
        until("the sleep to start", lambda: sleepers(batch.pid))
        orphan = sleepers(batch.pid)
        os.kill(batch.pid, signal.SIGKILL)
        batch.wait(timeout=10)
        assert read_manifest(out) == {}
        status, report = watch(out, "--rescue", "--any-cwd")
        assert status == 0 and [r["action"] for r in report["runs"]] == ["resumed"], report
        finished_attempt(out / "runs" / "t1")
        until("the manifest line", lambda: "t1" in read_manifest(out), 30)
    finally:
        if batch.poll() is None:
            batch.kill()
        for pid in orphan:
            if process_start(pid) is not None:
                os.kill(pid, signal.SIGKILL)
    result = read_manifest(out)["t1"]
    assert result.outcome == "exit:task_complete" and result.attempts == 2 and result.final
    assert len(server.bodies(CHAT)) == 2


# --- in this process ---------------------------------------------------------------


def test_the_table_and_the_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from four.cli import main
    from tests.test_watch_rules import dead_stream

    path = dead_stream(tmp_path)
    assert main(["watch", str(tmp_path), "--once"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["STATE", "TRY", "STEPS", "RUN", "WHY"]
    row = out.splitlines()[1]
    assert row.split()[:4] == ["dead", "1", "1", path.stem]
    assert row.endswith(" is gone") and "not sealed, and pid" in row
    assert out.splitlines()[-1] == "1 dead"


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        (["--stall-factor", "0"], "--stall-factor must be above 0"),
        (["--attempts", "0"], "--attempts must be above 0"),
        (["--interval", "0"], "--interval must be above 0 seconds"),
        (["--sign", "no-such-key"], "--sign: "),
    ],
)
def test_bad_flags_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], error: str
) -> None:
    from four.cli import main

    assert main(["watch", str(tmp_path), "--once", *flags]) == 2
    assert error in capsys.readouterr().err
    assert main(["watch", str(tmp_path / "missing"), "--once"]) == 2
    assert "is not a folder" in capsys.readouterr().err
