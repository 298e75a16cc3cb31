"""A batch over three Ray nodes that share no disk, under faults: a worker node's raylet
killed mid-batch, another node paused (SIGSTOP) past Ray's and the batch's timeouts,
then the driver killed and the batch run again. Every item ends with exactly one
result, every trajectory audits valid in the driver's folder (which no node can see),
and the tokens the batch counted are exactly those the model answered."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from four.batch import read_manifest
from four.checks import audit
from tests._server import LoopbackServer
from tests.batch._agents import GatedModel
from tests.batch._cluster import HEAD, WORKERS, three_nodes
from tests.batch.conftest import ROOT, WORKER_PATH, need_ray
from tests.cli._runs import cli

ITEMS = 30
LEASE = 3.0


class _Driver:
    """A driver process and the results it printed."""

    def __init__(self, address: str, out: Path, model: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.batch._cluster_driver", address, str(out), model,
             str(ITEMS), str(LEASE)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": WORKER_PATH}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        self.results: list[dict[str, object]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                self.results.append(json.loads(line.removeprefix("RESULT ")))

    def wait_for(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while len(self.results) < n and time.monotonic() < deadline:
            assert self.proc.poll() is None or len(self.results) >= n, self._stderr()
            time.sleep(0.1)
        assert len(self.results) >= n, (len(self.results), n)

    def _stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()[-3000:]

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def close(self) -> None:
        """The ended process's pipes closed (its reader done with them)."""
        self.reader.join(timeout=10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def _quiet(model: GatedModel) -> None:
    """No model call between the model and its client, and every answer's usage
    reported to the driver (statuses every 0.5 s). (A call answered after a worker's
    last report is paid for and counted nowhere: the lease bounds how long a worker cut
    off from its driver goes on; the test keeps the model busy until it has stopped.)"""
    model.drain()
    time.sleep(1.5)


def _doctor(address: str, model: str, tmp_path: Path) -> None:
    """``four doctor batch --ray``: the cluster, each node's scratch, the model from each."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "task": "say hi"}\n')
    said = cli("doctor", "batch", str(tasks), "--ray", address, "--model", "openai/test-model",
               "--api-base", model, "-o", str(tmp_path / "doctor-out"), "--json",
               env={"RAY_AUTH_MODE": "disabled"}, timeout=180)  # fmt: skip
    checks = {c["check"]: c for c in json.loads(said.stdout)["checks"]}
    assert checks["ray"]["status"] == "GO", said.stderr[-2000:]
    assert checks["nodes"]["detail"] == "3 alive: 127.0.0.2, 127.0.0.3, 127.0.0.4"
    for ip in (HEAD, *WORKERS):
        assert checks[f"node {ip}"]["status"] == "GO", checks[f"node {ip}"]
        assert checks[f"model from {ip}"]["status"] == "GO", checks[f"model from {ip}"]


def test_three_nodes_sharing_no_disk_lose_nothing_under_faults(tmp_path: Path) -> None:
    need_ray()
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    out = tmp_path / "out"
    out.mkdir()
    model = GatedModel(steps=6, sleep=0.5)
    with LoopbackServer(model) as server, three_nodes(tmp_path / "cluster", [out]) as cluster:
        _doctor(cluster.address, server.url, tmp_path)
        first = _Driver(cluster.address, out, server.url)
        try:
            first.wait_for(3)
            _quiet(model)  # a worker node's raylet is killed: the node is lost
            os.kill(cluster.raylet(WORKERS[0]), signal.SIGKILL)
            cluster.wait_no_actors(WORKERS[0])  # (none makes a call as it goes)
            model.reopen()
            first.wait_for(10)
            _quiet(model)  # the other worker node is paused past every timeout
            cluster.signal_node(WORKERS[1], signal.SIGSTOP)
            model.reopen()
            first.wait_for(16)  # (its runs, given up, are done elsewhere)
            # Resumed, it makes no new call (its runs' leases are over); one it was
            # making when paused would go out now: the model is busy until it is gone.
            _quiet(model)
            cluster.signal_node(WORKERS[1], signal.SIGCONT)
            cluster.wait_no_actors(WORKERS[1])
            model.reopen()
            first.wait_for(20)
            _quiet(model)  # the driver is lost (and with it, its actors)
            first.kill()
            cluster.wait_no_actors(HEAD)
            model.reopen()
        finally:
            if first.proc.poll() is None:
                first.kill()
            first.close()
        second = _Driver(cluster.address, out, server.url)
        try:
            second.proc.wait(timeout=180)
            second.reader.join(timeout=10)
            assert second.proc.returncode == 0, second._stderr()
        finally:
            if second.proc.poll() is None:
                second.kill()
            second.close()
    assert len(first.results) >= 20
    lines: list[dict[str, Any]] = [
        json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()
    ]
    # Exactly one final result each (after any lines of attempts lost twice, not final:
    # the run again did them once more).
    finals = [line["id"] for line in lines if line["final"]]
    assert sorted(finals) == [f"f{i:02d}" for i in range(ITEMS)], json.dumps(lines)[:4000]
    assert all(line["outcome"] == "exit:task_complete" for line in lines if line["final"])
    for line in lines:  # (an item whose two attempts were lost: done again, once)
        assert line["final"] or "died twice" in line["outcome"]
    results = read_manifest(out)
    for r in results.values():  # every record is here, whole and valid
        assert r.trajectory is not None and audit(r.trajectory).status == "valid"
        for lost in r.lost_streams:
            assert audit(out / lost).status in ("unfinished", "valid")
    retried = [line for line in lines if int(line["attempts"]) > 1]
    assert retried and all(line["error"] for line in retried)  # lost attempts, and why
    assert any(line.get("lost_streams") for line in lines)  # (those lost with the driver)
    # Spend: the model answered each call with 15 tokens; the batch counted each once.
    tokens: dict[str, int] = {}
    for line in lines:
        task = f"faults-{int(str(line['id'])[1:])}"
        tokens[task] = tokens.get(task, 0) + int(line["tokens"])
    assert tokens == {t: 15 * n for t, n in model.by_task.items()}
    assert sum(tokens.values()) == 15 * model.answered
