"""One driver per destination: a second driver on a batch folder (or URL) refuses, in one
line naming the first (pid, host, start time); a dead driver's lock is taken over.
The URL's lease on a store without conditional writes (fsspec's memory store) here; on
a real S3 API server in test_s3_batch."""

from __future__ import annotations

import gc
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, cast

import pytest

from four.batch import Item, iter_runs, run_many
from four.batch._lock import LOCK, BatchLocked, Lease
from four.cli import main
from tests.batch._agents import (
    StepModel,
    alive,
    bash,
    kill_all,
    manifest_lines,
    scripted_run,
    serve_many,
    write_tasks,
)
from tests.batch.conftest import ROOT, WORKER_PATH

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

DRIVER = """
import sys
from four.batch import Item, iter_runs, run_many
from tests.batch._agents import bash, scripted_run
token, out = sys.argv[1:3]
run_many(scripted_run([bash(f"sleep 60; echo {token}")]), [Item("t0")], out)
"""


def _driver(tmp_path: Path, out: Path, token: str) -> subprocess.Popen[bytes]:
    """A batch driver in a process of its own, holding ``out`` (its run sleeps)."""
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    proc = subprocess.Popen(
        [sys.executable, str(script), token, str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": WORKER_PATH},
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not alive(f"echo {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(f"echo {token}"), "the driver's run did not start"
    return proc


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_second_driver_on_a_folder_refuses_naming_the_first_and_takes_over_once_it_died(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FOUR_MODEL", "FOUR_API_BASE", "FOUR_ENV", "FOUR_WORKERS", "FOUR_RAY"):
        monkeypatch.delenv(name, raising=False)
    token = f"lockheld-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "out"
    with _driver(tmp_path, out, token) as first:
        try:
            with pytest.raises(BatchLocked) as refused:
                run_many(scripted_run([bash(SUBMIT)]), [Item("t0")], out)
            (line,) = str(refused.value).splitlines()
            assert line.startswith(f"{out} is being run by pid {first.pid} on {platform.node()}")
            assert time.strftime("since %Y-%m-%d ", time.gmtime()) in line
            # The command says the same in one line, before any run starts.
            tasks = write_tasks(tmp_path / "tasks.jsonl", 1)
            model = StepModel(steps=2)
            with serve_many(model) as server:
                argv = ["batch", str(tasks), "--model", "test-model", "--api-base", server.url,
                        "-o", str(out)]  # fmt: skip
                assert main(argv) == 2
                (err,) = capsys.readouterr().err.splitlines()
                assert err == f"four batch: error: {line}"
                assert model.calls == 0
            assert not (out / "manifest.jsonl").exists() or manifest_lines(out) == []
        finally:
            os.killpg(first.pid, signal.SIGKILL)  # the driver dies holding the lock
            first.wait(timeout=30)
            kill_all(token)
    # Its lock went with it: the next driver runs the batch (the lost attempt recorded).
    (again,) = run_many(scripted_run([bash(SUBMIT)]), [Item("t0")], out)
    assert again.submitted and len(again.lost_streams) == 1
    assert json.loads((out / LOCK).read_text() or "{}") == {}  # released at the end
    gc.collect()


def _memory_url() -> str:
    return f"memory://four-lock-{uuid.uuid4().hex[:8]}/batch"


def _put_lease(url: str, **holder: object) -> None:
    import fsspec

    found, root = fsspec.core.url_to_fs(url)
    fs = cast(Any, found)
    record = {"host": platform.node(), "pid": os.getpid(), "start": None, "boot": None,
              "started": time.time() - 30, "expires": time.time() + 60, "token": "other",
              **holder}  # fmt: skip
    fs.pipe_file(f"{root}/{LOCK}", json.dumps(record).encode())


def test_a_lease_without_conditional_writes_refuses_while_held_and_frees_on_release() -> None:
    url = _memory_url()
    first = Lease(url, settle=0.0)
    assert not first.conditional
    first.acquire()
    try:
        with pytest.raises(BatchLocked, match=f"^{url} is being run by pid {os.getpid()} on "):
            Lease(url, settle=0.0).acquire()
    finally:
        first.release()
    second = Lease(url, settle=0.0)
    second.acquire()
    assert second.took_over is None  # released: nothing to take over
    second.release()


def test_a_stale_lease_is_taken_over_and_a_live_one_of_another_host_is_not() -> None:
    url = _memory_url()
    _put_lease(url, host="elsewhere", pid=7, expires=time.time() + 60)
    with pytest.raises(BatchLocked, match=f"^{url} is being run by pid 7 on elsewhere since "):
        Lease(url, settle=0.0).acquire()
    _put_lease(url, host="elsewhere", pid=7, expires=time.time() - 1)  # expired
    taker = Lease(url, settle=0.0)
    taker.acquire()
    assert taker.took_over is not None and taker.took_over.driver.pid == 7
    taker.release()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    _put_lease(url, pid=int(dead.stdout), expires=time.time() + 60)  # here, and gone
    again = Lease(url, settle=0.0)
    again.acquire()
    assert again.took_over is not None and again.took_over.driver.pid == int(dead.stdout)
    again.release()


def test_a_holder_whose_lease_was_taken_meanwhile_knows_it_lost_it() -> None:
    url = _memory_url()
    lease = Lease(url, ttl=0.3, settle=0.0)
    lease.acquire()
    try:
        assert lease.lost is None
        _put_lease(url, host="elsewhere", pid=9)  # (it was paused past its expiry)
        deadline = time.monotonic() + 10
        while lease.lost is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lease.lost is not None
        assert lease.lost.startswith(f"{url}: the lock was taken by pid 9 on elsewhere since ")
    finally:
        lease.release()
    import fsspec

    found, root = fsspec.core.url_to_fs(url)
    fs = cast(Any, found)
    assert fs.exists(f"{root}/{LOCK}")  # the new holder's lease is left alone


def test_a_batch_whose_lease_is_taken_meanwhile_stops_its_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from four.batch import _lock

    monkeypatch.setattr(_lock, "TTL", 0.3)  # renewed every 0.1 s
    monkeypatch.setattr(_lock, "SETTLE", 0.0)
    monkeypatch.setenv("FOUR_CACHE", str(tmp_path / "cache"))
    url = _memory_url()
    slow = scripted_run([bash("sleep 30"), bash(SUBMIT)])
    started = time.monotonic()
    results = iter_runs(slow, [Item("a")], url)
    taken = threading.Timer(1.0, lambda: _put_lease(url, host="elsewhere", pid=9))
    taken.start()
    try:
        (result,) = list(results)
    finally:
        taken.cancel()
    assert result.outcome.startswith("interrupted: ") and not result.final
    assert "the lock was taken by pid 9 on elsewhere" in result.outcome
    assert time.monotonic() - started < 20  # not the 30 s of its command
