"""A batch written to s3:// (a real S3 API server on loopback): each run's files and the
manifest land at the URL, whole; the seal verifies there; four audit, stats, fleet and
watch read the URL; run again, the batch resumes from what the URL says. ``four batch
-o s3://...`` does all that from the command line, and holds the URL with a lease: a
second driver refuses, a dead one's lease is taken over, of two takers one wins."""

from __future__ import annotations

import gc
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest

from four.batch import Item, run_many
from four.batch._lock import LOCK, BatchLocked, Lease, _Conflict
from four.checks import audit
from four.cli import main
from four.trajectory._destination import Remote
from tests.batch._agents import StepModel, bash, scripted_run, serve_many, write_tasks
from tests.batch._s3 import new_bucket, s3_server
from tests.batch.conftest import ROOT, WORKER_PATH
from tests.cli._runs import cli

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    with s3_server() as env:
        yield env


@pytest.fixture
def bucket(s3: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    for name, value in s3.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FOUR_CACHE", str(tmp_path / "cache"))  # each test's own copies
    return new_bucket(s3)


def _objects(url: str) -> dict[str, bytes]:
    """Every object under the URL, read back from the server (not any local copy)."""
    import fsspec

    found, root = fsspec.core.url_to_fs(url)
    fs = cast(Any, found)
    return {name[len(root) :].lstrip("/"): fs.cat_file(name) for name in fs.find(root)}


def test_a_batch_lands_at_an_s3_url_and_resumes_from_there(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/evals/today"
    make_run = scripted_run([bash("echo hi"), bash(SUBMIT)], cost=0.1)
    items = [Item(f"t{i}", f"task {i}") for i in range(4)]
    results = run_many(make_run, items, url, max_concurrency=4)
    assert sorted((r.id, r.outcome) for r in results) == [
        (f"t{i}", "exit:task_complete") for i in range(4)
    ]
    stored = _objects(url)
    lines = [json.loads(line) for line in stored["manifest.jsonl"].decode().splitlines()]
    assert sorted(line["id"] for line in lines) == ["t0", "t1", "t2", "t3"]
    for line in lines:  # named from the folder, and there, whole
        assert line["trajectory"].startswith(f"runs/{line['id']}/")
        sealed = stored[line["trajectory"]]
        stream = stored[line["trajectory"].removesuffix(".json") + ".jsonl"]
        assert json.loads(sealed)["outcome"] == "exit:task_complete"
        assert stream.endswith(b"\n")
    # Read back by another machine (a fresh copy): every seal verifies.
    copy = Remote(url, tmp_path / "elsewhere").pull()
    for line in lines:
        assert audit(copy / line["trajectory"]).status == "valid"
    assert abs(sum(line["cost"] for line in lines) - 0.8) < 1e-9
    # Run again on the URL (another local copy): nothing left to do.
    os.environ["FOUR_CACHE"] = str(tmp_path / "cache-2")
    again = run_many(make_run, [*items, Item("t4", "task 4")], url)
    assert [r.id for r in again] == ["t4"]
    assert len(_objects(url)["manifest.jsonl"].decode().splitlines()) == 5


def test_the_readers_take_the_url(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/b"
    make_run = scripted_run([bash(SUBMIT)], cost=0.05)
    run_many(make_run, [Item("a"), Item("b")], url)
    env = {k: os.environ[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                      "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}  # fmt: skip
    env["FOUR_CACHE"] = str(tmp_path / "reader")
    audited = cli("audit", url, env=env)
    assert audited.returncode == 0, audited.stderr
    assert "2 valid" in audited.stdout or "valid" in audited.stdout
    stats = cli("stats", "--json", url, env=env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["runs"] == 2
    fleet = cli("fleet", "--json", url, env=env)
    assert fleet.returncode == 0, fleet.stderr
    (folder,) = json.loads(fleet.stdout)
    assert folder["runs"] == 2 and folder["running"] == 0
    watched = cli("watch", "--once", "--json", url, env=env)
    assert watched.returncode == 0, watched.stderr
    assert len(json.loads(watched.stdout)["runs"]) == 2
    one = cli("audit", f"{url}/{_first_trajectory(url)}", env=env)
    assert one.returncode == 0, one.stderr
    missing = cli("stats", f"{bucket}/nothing-here", env=env)
    assert missing.returncode == 2 and "nothing there" in missing.stderr
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "task": "t"}\n')
    with serve_many(StepModel(steps=2)) as server:
        nowhere = cli("batch", str(tasks), "--model", "m", "--api-base", server.url,
                      "-o", "s3://no-such-bucket-four/x", env=env)  # fmt: skip
    assert nowhere.returncode == 2, nowhere.stderr
    (line,) = nowhere.stderr.splitlines()
    assert line.startswith("four batch: error: s3://no-such-bucket-four/x: cannot write: ")


@pytest.fixture
def no_four_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's own defaults: no FOUR_* setting of the caller's shell."""
    for name in ("FOUR_MODEL", "FOUR_API_BASE", "FOUR_ENV", "FOUR_WORKERS", "FOUR_RAY"):
        monkeypatch.delenv(name, raising=False)


def _first_trajectory(url: str) -> str:
    line = _objects(url)["manifest.jsonl"].decode().splitlines()[0]
    return str(json.loads(line)["trajectory"])


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_four_batch_lands_at_an_s3_url_and_runs_again_from_it_on_another_machine(
    bucket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_four_env: None,
) -> None:
    url = f"{bucket}/cli"
    tasks = write_tasks(tmp_path / "tasks.jsonl", 3)
    model = StepModel(steps=2)
    with serve_many(model) as server:
        words = [str(tasks), "--model", "test-model", "--api-base", server.url, "-o", url]
        assert main(["batch", *words]) == 0
        out = capsys.readouterr().out
        assert "3 runs: exit:task_complete 3" in out and f"{url}/manifest.jsonl" in out
        stored = _objects(url)
        lines = [json.loads(line) for line in stored["manifest.jsonl"].decode().splitlines()]
        assert sorted(line["id"] for line in lines) == ["t0", "t1", "t2"]
        assert all(line["trajectory"] in stored for line in lines)
        assert LOCK not in stored  # the lease went with the driver's end
        # Another machine (its own copy), one more task: only that one runs.
        monkeypatch.setenv("FOUR_CACHE", str(tmp_path / "other-machine"))
        write_tasks(tasks, 4)
        calls = model.calls
        assert main(["batch", *words, "--json"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["ran"] == 1 and summary["unfinished"] == []
        assert summary["manifest"] == f"{url}/manifest.jsonl"
        assert model.calls == calls + 2
    env = {k: os.environ[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                      "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}  # fmt: skip
    env["FOUR_CACHE"] = str(tmp_path / "reader")
    audited = cli("audit", url, env=env)
    assert audited.returncode == 0 and "4 valid" in audited.stdout, audited.stdout
    stats = cli("stats", "--json", url, env=env)
    assert json.loads(stats.stdout)["runs"] == 4, stats.stderr
    (folder,) = json.loads(cli("fleet", "--json", url, env=env).stdout)
    assert folder["runs"] == 4 and folder["running"] == 0
    watched = cli("watch", "--once", "--json", url, env=env)
    assert len(json.loads(watched.stdout)["runs"]) == 4, watched.stderr
    # --rescue acts on this machine's processes: on a URL it refuses, in one line.
    rescue = cli("watch", "--once", "--rescue", url, env=env)
    assert rescue.returncode == 2 and rescue.stdout == ""
    (line,) = rescue.stderr.splitlines()
    assert line.startswith(f"four watch: error: --rescue acts on runs of this machine, and {url}")
    gc.collect()


HOLDER = """
import sys, time
from four.batch._lock import Lease
lease = Lease(sys.argv[1])
lease.acquire()
print("held", flush=True)
time.sleep(120)
"""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_second_driver_on_an_s3_url_refuses_and_a_dead_ones_lease_is_taken_over(
    bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_four_env: None
) -> None:
    url = f"{bucket}/locked"
    tasks = write_tasks(tmp_path / "tasks.jsonl", 2)
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, url], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": WORKER_PATH}, cwd=ROOT,
    ) as first:  # fmt: skip
        assert first.stdout is not None and first.stdout.readline() == "held\n"
        model = StepModel(steps=2)
        with serve_many(model) as server:
            words = [str(tasks), "--model", "test-model", "--api-base", server.url, "-o", url]
            try:
                assert main(["batch", *words]) == 2
                (err,) = capsys.readouterr().err.splitlines()
                assert err.startswith(
                    f"four batch: error: {url} is being run by pid {first.pid} on "
                    f"{platform.node()} since "
                )
                assert model.calls == 0 and "manifest.jsonl" not in _objects(url)
            finally:
                first.kill()  # the holder dies with its lease on the store
                first.wait(timeout=30)
                first.stdout.close()
            assert LOCK in _objects(url)
            assert main(["batch", *words]) == 0  # its holder is gone: taken over
            assert "2 runs: exit:task_complete 2" in capsys.readouterr().out
    assert LOCK not in _objects(url)
    gc.collect()


def test_of_two_drivers_taking_over_a_stale_lease_only_the_first_write_holds_it(
    bucket: str,
) -> None:
    url = f"{bucket}/race"
    stale = {"host": "elsewhere", "pid": 7, "start": None, "boot": None,
             "started": time.time() - 600, "expires": time.time() - 1, "token": "old"}  # fmt: skip
    import fsspec

    found, root = fsspec.core.url_to_fs(url)
    fs = cast(Any, found)
    fs.pipe_file(f"{root}/{LOCK}", json.dumps(stale).encode())
    first, second = Lease(url), Lease(url)
    assert first.conditional and second.conditional
    seen = second._read()  # the second driver finds it stale...
    assert seen is not None and seen[0] is not None and seen[0].token == "old"
    first.acquire()  # ...and the first takes it over meanwhile
    try:
        assert first.took_over is not None and first.took_over.token == "old"
        with pytest.raises(_Conflict):  # the second's write was over the version it read
            second._write(seen[1])
        with pytest.raises(BatchLocked, match=f"is being run by pid {os.getpid()} on "):
            second.acquire()
        assert json.loads(fs.cat_file(f"{root}/{LOCK}"))["token"] == first._token
    finally:
        first.release()
    assert not fs.exists(f"{root}/{LOCK}")


def test_four_batch_on_ray_lands_its_records_at_the_s3_url(
    bucket: str, tmp_path: Path, ray_cluster: ModuleType
) -> None:
    """The actors write on their node; records travel to the driver, and from its copy
    to the URL (the workers never see the store)."""
    address = ray_cluster.get_runtime_context().gcs_address
    url = f"{bucket}/on-ray"
    tasks = write_tasks(tmp_path / "tasks.jsonl", 4)
    env = {k: os.environ[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                      "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}  # fmt: skip
    env |= {"FOUR_CACHE": str(tmp_path / "driver"), "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0"}  # fmt: skip
    with serve_many(StepModel(steps=2)) as server:
        done = cli("batch", str(tasks), "--model", "test-model", "--api-base", server.url,
                   "--ray", address, "-o", url, "--json", env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    assert summary["ran"] == 4 and summary["outcomes"] == {"exit:task_complete": 4}
    stored = _objects(url)
    lines = [json.loads(line) for line in stored["manifest.jsonl"].decode().splitlines()]
    assert sorted(line["id"] for line in lines) == ["t0", "t1", "t2", "t3"]
    assert all(line["node"] for line in lines)  # (run on a Ray node)
    copy = Remote(url, tmp_path / "reader").pull()
    for line in lines:
        assert audit(copy / line["trajectory"]).status == "valid"
    assert LOCK not in stored
