"""RayPool on a one-node cluster: the 200-run batch with an actor killed mid-batch,
and the supervisor inside an actor."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from types import ModuleType

from four.batch import Item, RayPool, iter_runs, read_manifest, run_many
from four.trajectory import load_trajectory
from tests.batch._agents import (
    StepModel,
    alive,
    bash,
    manifest_lines,
    scripted_run,
    serve_many,
    server_run,
)


def _actor_pids() -> list[int]:
    """Our actors' worker processes (not their children caught between fork and exec)."""
    return [pid for pid in alive("ray::_Actor") if "ray::_Actor" not in _cmdline(_ppid(pid))]


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def test_200_runs_through_ray_with_an_actor_killed_mid_batch(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    model = StepModel(steps=5, delay=0.02)
    marker = f"raybatch-{time.monotonic_ns()}"
    items = [Item(f"r{i:03d}", f"{marker}-{i}") for i in range(200)]
    results = []
    killed: list[int] = []
    with serve_many(model) as server:
        for result in iter_runs(
            server_run(server.url), items, tmp_path, pool=RayPool(actors=2), max_concurrency=50
        ):
            results.append(result)
            if len(results) == 30:
                pids = _actor_pids()
                assert len(pids) == 2, pids
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
    assert killed
    assert len(results) == 200
    assert sorted(r.id for r in results) == [i.id for i in items]
    assert all(r.outcome == "exit:task_complete" and r.steps == 5 for r in results), [
        r for r in results if not r.submitted
    ][:3]
    retried = [r for r in results if r.attempts == 2]
    assert retried, "the killed actor had runs in flight"
    partials = 0
    for r in retried:
        assert r.error is not None and "attempt 1: Actor" in r.error
        assert r.final
        assert r.trajectory is not None and load_trajectory(r.trajectory).outcome == r.outcome
        # A call still queued at the actor had not started: no trajectory of attempt 1.
        streams = sorted((tmp_path / "runs" / r.id).glob("*.jsonl"))
        partial = [s for s in streams if not s.with_suffix(".json").exists()]
        assert len(streams) == 1 + len(partial) and len(partial) <= 1
        partials += len(partial)
        for stream in partial:  # kept, readable, with what it did before the kill
            assert load_trajectory(stream).outcome is None
    assert partials >= 1
    assert len(manifest_lines(tmp_path)) == 200
    assert read_manifest(tmp_path) == {r.id: r for r in results}
    assert alive(marker) == []
    assert len(_actor_pids()) == 0 or all(pid not in killed for pid in _actor_pids())


def test_the_supervisor_stops_a_stalled_run_inside_an_actor(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    token = f"raystall-{time.monotonic_ns()}"
    make_run = scripted_run([bash(f"sleep 60; echo {token}"), bash("echo never")])
    start = time.monotonic()
    (result,) = run_many(make_run, [Item("stuck")], tmp_path, pool=RayPool(), stall_timeout=1)
    assert result.outcome == "stalled: no model call or command finished for 1 s"
    assert time.monotonic() - start < 30
    assert result.node and result.trajectory is not None
    assert load_trajectory(result.trajectory).outcome == result.outcome
    assert alive(token) == []
