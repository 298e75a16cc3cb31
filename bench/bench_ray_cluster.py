"""Ray over three nodes sharing no disk: 2,000 scripted 10-step runs, one node lost halfway.

    python bench/bench_ray_cluster.py [RUNS]

A head and two workers on 127.0.0.2-4 (``tests/batch/_cluster``: each worker in a mount
namespace where the batch folder is an empty tmpfs), one actor per node, 150 runs at
once. Each step is a scripted model call taking 50 ms (in the actor's process: no
server) and `true` in a fresh bash; the tenth step submits. Halfway (after RUNS/2
results), the raylet of one worker node is killed: its runs are tried again on the
others, after their lease (here 5 s). Prints: wall time against the ideal (RUNS x 10 x
50 ms / 150), the driver's CPU per run (its own process: polling, landing records,
the manifest), what travelled per run (bytes landed in the batch folder), the peak
memory of the GCS and of the raylets, and the host's load.

The nodes' health checks are ``PATIENT`` (``tests/batch/_cluster``): a node is dead
after ~20 s of failed checks, not ~3 s, so a raylet starved of CPU on a loaded host is
not marked dead (on the head, that took the GCS down with it: ``ray start --block``
kills a node's processes when one of them exits). If the batch fails anyway, the
nodes' exit logs are printed before the cluster goes.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from tests.batch._cluster import Cluster

ROOT = Path(__file__).resolve().parents[1]
STEPS, LATENCY, CONCURRENCY = 10, 0.05, 150


@dataclass(frozen=True)
class TenSteps:
    """make_run: the bench's scripted 10-step run (picklable, for Ray)."""

    def __call__(self, ctx: object) -> Path:
        from bench.bench_batch import SleepyModel
        from four import Invoke, run
        from four.batch import RunContext
        from four.execute import local_env
        from four.parse import regex_parse
        from four.trajectory import save_trajectory

        assert isinstance(ctx, RunContext)
        return run(
            ctx.meter(cast(Invoke, SleepyModel(LATENCY, STEPS))),
            regex_parse(),
            local_env(),
            save_trajectory(ctx.output_dir),
            prompt=ctx.task,
            max_steps=STEPS + 2,
            watch=ctx.watch,
        )


def main(runs: int) -> dict[str, object]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from four.batch import Item, RayPool, iter_runs
    from tests.batch._cluster import PATIENT, WORKERS, three_nodes

    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    out = work / "out"
    out.mkdir()
    path = f"{ROOT / 'src'}{os.pathsep}{ROOT}"
    with (
        three_nodes(work / "cluster", [out], PATIENT) as cluster,
        _Watcher(str(cluster.temp)) as watcher,
        _diagnosed(cluster),
    ):
        pool = RayPool(
            address=cluster.address, lease=5.0,
            init={"log_to_driver": False, "runtime_env": {"env_vars": {"PYTHONPATH": path}}},
        )  # fmt: skip
        items = [Item(f"r{i:04d}", f"task {i}") for i in range(runs)]
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        killed = 0
        up = 0.0
        results = iter_runs(TenSteps(), items, out, pool=pool, max_concurrency=CONCURRENCY)
        outcomes: Counter[str] = Counter()
        for done, result in enumerate(results, start=1):
            outcomes[result.outcome.split(":")[0] if not result.final else result.outcome] += 1
            if done == 1:
                up = time.perf_counter() - start
            if done == runs // 2:
                os.kill(cluster.raylet(WORKERS[0]), signal.SIGKILL)
                killed = done
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
    landed = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    lines = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    retried = sum(1 for line in lines if line["attempts"] > 1)
    finals = Counter(line["id"] for line in lines if line["final"])
    exactly_one = len(finals) == runs and set(finals.values()) == {1}
    shutil.rmtree(work, ignore_errors=True)
    ideal = runs * STEPS * LATENCY / CONCURRENCY
    driver = (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)
    return {
        "runs": runs, "wall_s": round(wall, 2), "ideal_s": round(ideal, 2),
        "x_ideal": round(wall / ideal, 2), "first_result_s": round(up, 2),
        "driver_cpu_s": round(driver, 2), "driver_cpu_ms_per_run": round(1000 * driver / runs, 2),
        "bytes_per_run": round(landed / runs), "killed_after": killed, "retried": retried,
        "outcomes": dict(outcomes), "one_final_result_each": exactly_one,
        "gcs_peak_mb": watcher.peak("gcs_server"), "raylet_peak_mb": watcher.peak("raylet"),
        "load_avg_max": watcher.load,
    }  # fmt: skip


class _Watcher:
    """Samples, every 2 s while the bench runs, the resident memory of the cluster's GCS
    and raylets (those whose command line names ``mark``, the cluster's folder: the
    largest of each, in MB) and the host's 1-minute load."""

    def __init__(self, mark: str) -> None:
        self.mark = mark.encode()
        self.peaks: dict[str, float] = {}
        self.load = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> _Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, name: str) -> float:
        return round(self.peaks.get(name, 0.0), 1)

    def _sample(self) -> None:
        while not self._stop.wait(2.0):
            self.load = max(self.load, os.getloadavg()[0])
            for entry in os.listdir("/proc"):
                if not entry.isdecimal():
                    continue
                with contextlib.suppress(OSError):
                    name = Path(f"/proc/{entry}/comm").read_text().strip()
                    if name not in ("gcs_server", "raylet"):
                        continue
                    if self.mark not in Path(f"/proc/{entry}/cmdline").read_bytes():
                        continue
                    status = Path(f"/proc/{entry}/status").read_text()
                    kb = next(int(line.split()[1]) for line in status.splitlines()
                              if line.startswith("VmRSS:"))  # fmt: skip
                    self.peaks[name] = max(self.peaks.get(name, 0.0), kb / 1024)


@contextlib.contextmanager
def _diagnosed(cluster: Cluster) -> Iterator[None]:
    """On a failure, print what the nodes said of their processes' exits (before the
    cluster's folders go)."""
    try:
        yield
    except BaseException:
        exits = sorted(cluster.temp.rglob("ray_process_exit.log"))
        for log in [*exits, *sorted(cluster.root.glob("node-*.log"))]:
            with contextlib.suppress(OSError):
                print(f"== {log.name}\n{log.read_text()[-3000:]}", file=sys.stderr)
        raise


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]  # (the tests' cluster, this tree's four)
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)))
