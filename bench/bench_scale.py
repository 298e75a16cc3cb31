"""Batches at scale: N runs at once, 10 steps each, a model taking 1 s a call.

    python bench/run.py scale            # or: python bench/bench_scale.py [N ...]

Each run is 10 model calls (a scripted G that waits 1 s: ``asyncio.sleep`` for the
async batch, ``time.sleep`` for the thread pool) and 9 commands to a trivial V2 (an
observation returned at once), its trajectory saved (``save_trajectory``, into a
folder on tmpfs) and a manifest line written per run. CPU is counted from the
batch's start to its end (not the interpreter's start and imports). All N runs start
at once, so the ideal wall time is 10 s whatever N. Each row runs in a fresh
interpreter; CPU is that process's user + system time (with its worker processes'),
and "CPU / step" divides it by the N x 10 steps.

Rows: ``iter_runs`` with an ``async def make_run`` awaiting ``four.arun`` (the
``AsyncPool``: one event loop, runs as tasks) at 100 and 10,000 runs, and at 10,000
with the collector left at CPython's threshold (``gc_threshold=None``); the same at
10,000 runs spread over two worker processes (``AsyncPool(processes=2)``: their CPU is
counted too, as the children's); and the same workload with a plain ``make_run`` on
the ``ThreadPool`` (threads bounded at 1,024) at 1,000 and 5,000 runs. The child is a
script file (the workers import it: a ``spawn`` start).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS, LATENCY = 10, 1.0
IDEAL = STEPS * LATENCY
ROWS = (
    ("async", 100),
    ("async", 10_000),
    ("async-gc", 10_000),
    ("processes", 10_000),
    ("threads", 1_000),
    ("threads", 5_000),
)
POOLS = {
    "async": "AsyncPool (arun)",
    "async-gc": "AsyncPool(gc_threshold=None) (arun)",
    "processes": "AsyncPool(processes=2) (arun)",
    "threads": "ThreadPool (run)",
}

CHILD = r"""
import asyncio, json, os, resource, sys, time
from collections.abc import Sequence
from returns.result import Success
from four import Action, Assistant, Message, Observation, arun, run
from four.batch import AsyncPool, Item, RunContext, run_many
from four.parse import regex_parse
from four.trajectory import save_trajectory

STEPS, LATENCY = 10, 1.0
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

def reply(messages: Sequence[Message]) -> Success[Assistant]:
    done = sum(1 for m in messages if isinstance(m, Assistant))
    return Success(Assistant(SUBMIT if done + 1 >= STEPS else "```bash\ntrue\n```"))

def env(action: Action) -> Success[Observation]:
    return Success(Observation("ok", 0))

async def aG(messages: Sequence[Message]) -> Success[Assistant]:
    await asyncio.sleep(LATENCY)
    return reply(messages)

async def aV2(action: Action) -> Success[Observation]:
    return env(action)

def G(messages: Sequence[Message]) -> Success[Assistant]:
    time.sleep(LATENCY)
    return reply(messages)

async def amake_run(ctx: RunContext) -> object:
    return await arun(aG, regex_parse(), aV2, save_trajectory(ctx.output_dir),
                      prompt=ctx.task, max_steps=STEPS, watch=ctx.watch)

def make_run(ctx: RunContext) -> object:
    return run(G, regex_parse(), env, save_trajectory(ctx.output_dir),
               prompt=ctx.task, max_steps=STEPS, watch=ctx.watch)

def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime

if __name__ == "__main__":  # (the worker processes import this file)
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    items = [Item(f"t{i}", f"task {i}") for i in range(n)]
    pools = {"processes": AsyncPool(processes=2), "async-gc": AsyncPool(gc_threshold=None)}
    pool = pools.get(kind)
    before = cpu(resource.RUSAGE_SELF) + cpu(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    results = run_many(make_run if kind == "threads" else amake_run, items, out, pool=pool,
                       max_concurrency=n, resume=False)
    wall = time.monotonic() - started
    # the workers are reaped by now: their CPU is in RUSAGE_CHILDREN
    spent = cpu(resource.RUSAGE_SELF) + cpu(resource.RUSAGE_CHILDREN) - before
    peak = max(resource.getrusage(who).ru_maxrss
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    ok = sum(r.outcome == "exit:task_complete" and r.steps == STEPS for r in results)
    print(json.dumps({"wall": wall, "cpu": spent, "ok": ok, "peak_mb": peak / 1024}))
"""


def measure(kind: str, n: int) -> dict[str, float]:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a stream open per running run
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=scratch) as out:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        script = Path(out) / "child.py"
        script.write_text(CHILD)
        done = subprocess.run(
            [sys.executable, str(script), kind, str(n), str(Path(out) / "batch")],
            capture_output=True, text=True, env=env, timeout=1800,
        )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> None:
    rows = [r for r in ROWS if not argv or str(r[1]) in argv]
    print(
        "| pool | runs at once | wall s | wall / ideal (10 s) | CPU s | CPU / step, us | peak MB | runs ok |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    per_step: dict[tuple[str, int], float] = {}
    for kind, n in rows:
        f = measure(kind, n)
        step = f["cpu"] / (n * STEPS) * 1e6
        per_step[kind, n] = step
        print(
            f"| {POOLS[kind]} | {n:,} | "
            f"{f['wall']:.1f} | {f['wall'] / IDEAL:.2f}x | {f['cpu']:.1f} | {step:.0f} | "
            f"{f['peak_mb']:.0f} | {int(f['ok']):,} |",
            flush=True,
        )
    for kind in ("async", "processes"):
        if ("async", 100) in per_step and (kind, 10_000) in per_step:
            ratio = per_step[kind, 10_000] / per_step["async", 100]
            print(f"\nCPU per step at 10,000 runs ({POOLS[kind]}) / at 100: {ratio:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
