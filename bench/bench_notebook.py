"""The notebook domain's costs: kernel start, per-cell overhead, memory of 8 runs.

    python bench/run.py notebook        # or: python bench/bench_notebook.py

- Kernel start: ``kernel_env``'s first cell (``pass``) in a fresh env: the kernel's start
  (its own folder and IPC sockets, the launch, the client, the font-cache check) plus
  that cell; the font cache already built, as after a machine's first run.
- Per cell: a cell of ``x = 1`` through ``kernel_env`` (ast check, nbclient, the
  observation), against the kernel's own time for it (busy to idle on the kernel's
  clock, from its message headers) and against a bare ``jupyter_client`` round trip
  (execute, then wait for the reply and idle) on the same kernel, alternating.
- 8 concurrent runs: 8 threads, each a whole ``run`` (scripted model; a plotting cell and
  a printing cell, then the submission) with ``save_notebook``; the peak of the summed
  resident memory of this process and its kernels, sampled every 20 ms.
"""

from __future__ import annotations

import datetime
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STARTS, CELLS, RUNS = 5, 200, 8


def _median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f}"


def _stamp(value: object) -> float:
    text = str(value)
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def kernel_starts() -> list[float]:
    from four import Action
    from four.domains.notebook import kernel_env

    times = []
    for _ in range(STARTS):
        with kernel_env(timeout=60) as env:
            t = time.perf_counter()
            env(Action("pass")).unwrap()
            times.append(time.perf_counter() - t)
    return times


def per_cell() -> tuple[list[float], list[float], list[float]]:
    from four import Action
    from four.domains.notebook import kernel_env

    env = kernel_env(timeout=60)
    env(Action("x = 0")).unwrap()
    kernel = env._kernel  # the bench reads the kernel's own timestamps: private on purpose
    assert kernel is not None
    kernel.client.record_timing = True
    kc = kernel.client.kc
    assert kc is not None
    ours, own, bare = [], [], []

    async def round_trip() -> None:
        await kc.execute_interactive(  # type: ignore[attr-defined]
            "x = 1", store_history=False, output_hook=lambda m: None
        )

    action = Action("x = 1")
    try:
        for _ in range(CELLS):
            t = time.perf_counter()
            env(action).unwrap()
            ours.append(time.perf_counter() - t)
            timing = env.cells[-1].metadata["execution"]
            own.append(_stamp(timing["iopub.status.idle"]) - _stamp(timing["iopub.status.busy"]))
            t = time.perf_counter()
            kernel.loop.run_until_complete(round_trip())
            bare.append(time.perf_counter() - t)
    finally:
        env.close()
    return ours, own, bare


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * page
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def concurrent_runs() -> tuple[int, float, int]:
    from four import run, scripted_invoke
    from four.domains.notebook import cell_parse, kernel_env, save_notebook

    plot = (
        "```python\nimport matplotlib.pyplot as plt\nplt.plot(range(10))\nplt.show()\n```\n"
        "```python\nprint(sum(range(100)))\n```"
    )
    done = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_rss(os.getpid()))
            stop.wait(0.02)

    with tempfile.TemporaryDirectory() as folder:
        sampler = threading.Thread(target=sample)
        sampler.start()

        def one(n: int) -> None:
            env = kernel_env(timeout=120)
            run(scripted_invoke([plot, done]), cell_parse(), env, save_notebook(folder, env))

        t = time.perf_counter()
        threads = [threading.Thread(target=one, args=(n,)) for n in range(RUNS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - t
        stop.set()
        sampler.join()
        notebooks = len(list(Path(folder).glob("*.ipynb")))
    assert notebooks == RUNS, notebooks
    return peak[0], wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    sys.path[:0] = [str(ROOT / "src")]
    starts = kernel_starts()
    ours, own, bare = per_cell()
    overhead = [a - b for a, b in zip(ours, own, strict=True)]
    peak, wall, driver = concurrent_runs()
    print(f"load average at the end: {os.getloadavg()[0]:.1f}\n")
    print("| measure | median | notes |")
    print("|---|---:|---|")
    print(f"| kernel start + first cell, ms | {_median_ms(starts)} | {STARTS} fresh kernels |")
    print(f"| a cell through kernel_env, ms | {_median_ms(ours)} | `x = 1`, {CELLS} cells |")
    print(f"| the kernel's own time for it, ms | {_median_ms(own)} | busy to idle |")
    print(f"| bare jupyter_client round trip, ms | {_median_ms(bare)} | same kernel |")
    print(f"| **kernel_env overhead a cell, ms** | **{_median_ms(overhead)}** | target <= 20 |")
    print(
        f"| beyond a bare round trip, ms | {_median_ms([a - b for a, b in zip(ours, bare, strict=True)])} | |"
    )
    print(f"| 8 concurrent runs: peak memory, MB | {peak / 1e6:.0f} | driver + 8 kernels |")
    print(f"| 8 concurrent runs: per run, MB | {peak / RUNS / 1e6:.0f} | |")
    print(f"| 8 concurrent runs: driver's own peak, MB | {driver / 1e6:.0f} | ru_maxrss |")
    print(f"| 8 concurrent runs: wall time, s | {wall:.1f} | 2 cores |")


if __name__ == "__main__":
    main()
