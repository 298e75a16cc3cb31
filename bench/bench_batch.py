"""Batch throughput: 200 runs x 5 steps, a model taking 50 ms a call, 100 runs at once.

    python bench/run.py batch        # or: python bench/bench_batch.py [ROUNDS]
    python bench/bench_batch.py compare OTHER_TREE [ROUNDS]   # thread pool, A/B

``compare`` times the thread-pool row of this tree and of another copy of the project
(say ``mkdir /tmp/base && git archive main src bench | tar -x -C /tmp/base``),
alternating fresh interpreters, two batches each per turn, with each interpreter's CPU
time per batch (its own, and its children's: the bash processes).

Each step is one model call (a G that sleeps 50 ms, standing in for the model's
latency) and one command (`true`, in a fresh bash: ``local_env``); the fifth command
submits. Every run saves its trajectory and the manifest gets a line per run. The ideal
is 5 x 50 ms x 2 batches of 100 = 0.5 s; on this 2-core machine the 1,000 bash processes
alone take 1.2-1.6 s of CPU under that load (1.0-1.2 ms each when run one at a time).

Rows: ``four.batch`` on its thread pool; on Ray (a one-node cluster started first and
not timed; actor start is timed); and mini-swe-agent's SWE-bench batch runner on the same
workload: its ``process_instance`` (agent, local environment, trajectory, preds.json)
in its ``ThreadPoolExecutor``, with its ``DeterministicModel`` sleeping 50 ms per call
(the dataset and Docker parts replaced). mini-swe-agent runs in bench/.venv (made on
first use, as for ``bench_execute``; FOUR_BENCH_MSWEA_PYTHON names another interpreter).
Ray rows need ``pip install -e '.[ray]'``; without Ray they are skipped.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from returns.result import Result, Success

if TYPE_CHECKING:
    from four.batch import Pool

ROOT = Path(__file__).resolve().parents[1]
RUNS, STEPS, LATENCY, CONCURRENCY = 200, 5, 0.05, 100
IDEAL = STEPS * LATENCY * (RUNS / CONCURRENCY)
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@dataclass(frozen=True)
class SleepyModel:
    """G: waits ``latency`` s, then asks for `true`; its ``steps``-th reply submits."""

    latency: float = LATENCY
    steps: int = STEPS

    def __call__(self, messages: Sequence[object], /) -> Result[object, object]:
        from four import Assistant, Usage

        time.sleep(self.latency)
        done = sum(1 for m in messages if isinstance(m, Assistant))
        command = SUBMIT if done + 1 >= self.steps else "true"
        return Success(Assistant(f"```bash\n{command}\n```", usage=Usage(100, 10, 0.0)))


@dataclass(frozen=True)
class BenchRun:
    """make_run of the bench (picklable, for Ray)."""

    def __call__(self, ctx: object) -> Path:
        from four import run
        from four.batch import RunContext
        from four.execute import local_env
        from four.parse import regex_parse
        from four.trajectory import save_trajectory

        assert isinstance(ctx, RunContext)
        return run(
            SleepyModel(),  # type: ignore[arg-type]
            regex_parse(),
            local_env(),
            save_trajectory(ctx.output_dir),
            prompt=ctx.task,
            max_steps=STEPS + 2,
            watch=ctx.watch,
        )


def four_batch(pool: Pool | None) -> tuple[float, float]:
    """Seconds for the batch: in all, and after the pool started (Ray's actors up)."""
    from four.batch import Item, Progress, run_many

    items = [Item(f"b{i:03d}", f"task {i}") for i in range(RUNS)]
    seen: list[Progress] = []
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        results = run_many(
            BenchRun(), items, out, pool=pool, max_concurrency=CONCURRENCY, on_progress=seen.append
        )
        took = time.perf_counter() - start
    bad = [r for r in results if r.outcome != "exit:task_complete" or r.steps != STEPS]
    assert len(results) == RUNS and not bad, bad[:3]
    return took, seen[-1].elapsed  # Progress.elapsed counts from the pool's start


# Run by mini-swe-agent's interpreter: its batch runner's own pieces, offline.
MSWEA_SCRIPT = """
import concurrent.futures, json, os, sys, tempfile, time
os.environ["MSWEA_SILENT_STARTUP"] = "1"
import logging
logging.disable(logging.CRITICAL)
from pathlib import Path
from minisweagent.config import get_config_from_spec
from minisweagent.run.benchmarks.swebench import process_instance
from minisweagent.run.benchmarks.utils.batch_progress import RunBatchProgressManager
from minisweagent.utils.serialize import recursive_merge
runs, steps, latency, workers = map(float, sys.argv[1:5])
runs, steps, workers = int(runs), int(steps), int(workers)
outputs = []
for i in range(steps):
    command = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" if i == steps - 1 else "true"
    outputs.append({"role": "assistant", "content": "", "extra": {"actions": [{"command": f"/sleep {latency}"}]}})
    outputs.append({"role": "assistant", "content": f"```mswea_bash_command\\n{command}\\n```",
                    "extra": {"actions": [{"command": command}], "cost": 0.0}})
config = recursive_merge(
    get_config_from_spec("swebench.yaml"),
    {"model": {"model_class": "deterministic", "outputs": outputs, "model_name": "deterministic"}},
)
# Its SWE-bench environment is a Docker container at /testbed: a local one here instead.
config["environment"] = {"environment_class": "local", "cwd": tempfile.gettempdir(), "timeout": 60}
instances = [{"instance_id": f"b{i:03d}", "problem_statement": f"task {i}"} for i in range(runs)]
with tempfile.TemporaryDirectory() as out:
    output_path = Path(out)
    progress = RunBatchProgressManager(runs, output_path / "exit_statuses.yaml")
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as executor:
        futures = [executor.submit(process_instance, inst, output_path, config, progress)
                   for inst in instances]
        for future in concurrent.futures.as_completed(futures):
            future.result()
    took = time.perf_counter() - start
    preds = json.loads((output_path / "preds.json").read_text())
    statuses = {}
    for inst in instances:
        traj = json.loads((output_path / inst["instance_id"] / (inst["instance_id"] + ".traj.json")).read_text())
        status = traj["info"]["exit_status"]
        statuses[status] = statuses.get(status, 0) + 1
print(json.dumps({"seconds": took, "preds": len(preds), "statuses": statuses}))
"""


def mini_batch(python: str) -> float | str:
    args = [str(RUNS), str(STEPS), str(LATENCY), str(CONCURRENCY)]
    done = subprocess.run(
        [python, "-c", MSWEA_SCRIPT, *args], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        return f"failed: {done.stderr.strip().splitlines()[-1:]}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if out["preds"] != RUNS or out["statuses"] != {"Submitted": RUNS}:
        return f"unexpected: {out}"
    return float(out["seconds"])


def _ray() -> object | None:
    try:
        import ray
    except ImportError:
        return None
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Inherited by the cluster's workers (a runtime_env would cost a fresh worker).
    os.environ["PYTHONPATH"] = f"{ROOT / 'src'}{os.pathsep}{ROOT}"
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=150 * 2**20,
        _node_ip_address="127.0.0.2",  # loopback (Ray rewrites 127.0.0.1)
    )
    return ray


THREADS = "four.batch, thread pool"
RAY1 = "four.batch, Ray (1 node, 1 actor)"
RAY2 = "four.batch, Ray (1 node, 2 actors)"
FRESH = " on a fresh cluster"
WARM_UP = 3.0
"""Seconds given a fresh cluster (untimed) to finish starting: Ray starts one idle
worker process per CPU for the first job, which the actors then take."""


def _fresh_cluster(ray: object) -> None:
    """A new cluster, as ``four batch --ray local`` or a cluster's first job has."""
    ray.shutdown()  # type: ignore[attr-defined]
    _ray()
    time.sleep(WARM_UP)


def main(rounds: int = 3) -> None:
    """Two phases: without Ray running (thread pool, mini-swe-agent), then with a Ray
    cluster up (Ray rows, and the thread pool again, for the ratio under equal load:
    an idle cluster's nine processes take CPU too). Rows take turns in each round. A
    Ray row's "after start" leaves out only opening and closing the session: runs go
    to each actor as soon as it is up, so the actors' start (a process each, importing
    four and unpickling make_run) is inside it (before 3d3597e it was left out). The
    rows "on a fresh cluster" start a new cluster (untimed, WARM_UP seconds given to it)
    before their batch: its idle workers, one per CPU, are there for the actors, as for
    ``four batch --ray local`` or a cluster's first job; the other Ray rows run on the
    phase's one cluster, whose first workers earlier batches took."""
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    from bench.bench_execute import mswea_python
    from four.batch import RayPool

    notes: list[str] = []
    first: dict[str, list[tuple[float, float]]] = {THREADS: []}
    python = mswea_python()
    mini = "mini-swe-agent 2.4.6 batch runner"
    if python is None:
        notes.append("mini-swe-agent row skipped: no interpreter with it.")
    for _ in range(rounds):
        first[THREADS].append(four_batch(None))
        if python is not None:
            took = mini_batch(python)
            if isinstance(took, str):
                notes.append(f"mini-swe-agent: {took}")
                python = None
            else:
                first.setdefault(mini, []).append((took, took))
    load = os.getloadavg()[0]
    second: dict[str, list[tuple[float, float]]] = {}
    ray = _ray()
    if ray is None:
        notes.append("Ray rows skipped: ray is not installed (pip install -e '.[ray]').")
    else:
        beside = f"{THREADS} (Ray cluster idle beside it)"
        second = {beside: [], RAY1: [], RAY2: [], RAY1 + FRESH: [], RAY2 + FRESH: []}
        try:
            for _ in range(rounds):
                second[beside].append(four_batch(None))
                # The cluster's workers are taken by earlier batches: the actors' workers
                # are started for them, as on a cluster that has run jobs before.
                second[RAY1].append(four_batch(RayPool()))
                second[RAY2].append(four_batch(RayPool(actors=2)))
                _fresh_cluster(ray)
                second[RAY1 + FRESH].append(four_batch(RayPool()))
                _fresh_cluster(ray)
                second[RAY2 + FRESH].append(four_batch(RayPool(actors=2)))
        finally:
            ray.shutdown()  # type: ignore[attr-defined]
    print(
        f"{RUNS} runs x {STEPS} steps, {LATENCY * 1000:.0f} ms per model call, "
        f"{CONCURRENCY} at once; ideal {IDEAL:.2f} s; median of {rounds} rounds; "
        f"load average {load:.1f} after the first phase\n"
    )
    print(
        "| runner | median s | min s | x ideal | x thread pool (same phase) "
        "| after start s | after start x thread pool |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for rows in (first, second):
        if not rows:
            continue
        base = statistics.median(t for t, _ in next(iter(rows.values())))
        for name, times in rows.items():
            median = statistics.median(t for t, _ in times)
            after = statistics.median(a for _, a in times)
            print(
                f"| {name} | {median:.2f} | {min(t for t, _ in times):.2f} | "
                f"{median / IDEAL:.1f} | {median / base:.2f} | {after:.2f} | {after / base:.2f} |"
            )
    for note in notes:
        print(f"\n{note}")


# Run in a fresh interpreter by ``compare``: one tree's thread pool, with CPU times.
TURN_SCRIPT = """
import json, resource, sys
sys.path[:0] = [sys.argv[1] + "/src", sys.argv[1]]
from bench import bench_batch as b
b.four_batch(None)  # warm-up: imports, first files
out = []
for _ in range(int(sys.argv[2])):
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    took, _ = b.four_batch(None)
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    children = c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime
    out.append([took, cpu, children])
print(json.dumps(out))
"""


def compare(other: str, rounds: int = 8) -> None:
    """The thread-pool row of this tree and of ``other``, in alternating interpreters."""
    trees = {"this tree": str(ROOT), other: str(Path(other).resolve())}
    samples: dict[str, list[list[float]]] = {name: [] for name in trees}
    load = os.getloadavg()[0]
    for _ in range(rounds):
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": f"{tree}/src"}
            done = subprocess.run(
                [sys.executable, "-c", TURN_SCRIPT, tree, "2"],
                capture_output=True, text=True, env=env, timeout=600, check=True,
            )  # fmt: skip
            samples[name] += json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"thread pool, {RUNS} runs x {STEPS} steps, {CONCURRENCY} at once; {rounds} turns of "
        f"2 batches each; load average {load:.1f} at the start\n"
    )
    print("| tree | median s | min s | max s | x ideal | CPU s (own) | CPU s (children) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, rows in samples.items():
        took = [r[0] for r in rows]
        print(
            f"| {name} | {statistics.median(took):.2f} | {min(took):.2f} | {max(took):.2f} | "
            f"{statistics.median(took) / IDEAL:.1f} | {statistics.median(r[1] for r in rows):.2f} | "
            f"{statistics.median(r[2] for r in rows):.2f} |"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["compare"]:
        compare(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 8)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
