"""A real two-node Ray cluster on one host: runs land on both nodes; one node is
removed mid-batch and its runs finish on the other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.batch.conftest import ROOT, WORKER_PATH, need_ray


def test_two_nodes_share_the_batch_and_one_takes_over_when_the_other_dies(
    tmp_path: Path,
) -> None:
    need_ray()
    done = subprocess.run(
        [sys.executable, "-m", "tests.batch._two_nodes", str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": WORKER_PATH},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("OUT ")]
    assert said, done.stdout[-3000:]
    out = json.loads(said[-1].removeprefix("OUT "))
    assert out["nodes"] == ["127.0.0.2", "127.0.0.3"]
    assert out.get("before") == ["127.0.0.2", "127.0.0.3"]  # both nodes took runs
    results = out["results"]
    assert sorted(r["id"] for r in results) == [f"n{i:02d}" for i in range(40)]
    assert all(r["outcome"] == "exit:task_complete" for r in results), results
    retried = [r for r in results if r["attempts"] == 2]
    assert retried, "the removed node had runs in flight"
    assert {r["node"] for r in retried} == {"127.0.0.2"}
    assert all("attempt 1: Actor" in r["error"] for r in retried)
    lines = (tmp_path / "manifest.jsonl").read_text().splitlines()
    assert len(lines) == 40
