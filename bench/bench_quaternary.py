"""Benchmark four.quaternary against verdict4 0.2.0, each measurement in its own process.

Two experiments (run both with no arguments):

* ``process``: build a trace of n distinct NO verdicts (failure alphabet of size n),
  then ``controller.audit()`` it; time both (the audit also in CPU time of the process,
  which other jobs on the machine inflate less) and the peak RSS growth of the process.
* ``replay``: build the same trace, then time ``audit_trace(config, receipts)`` alone
  (the replay of every receipt), for n = 10^3 .. 10^6.

Implementations: ``four-c`` (compiled accounting core, if built), ``four-py``
(``FOUR_NO_EXTENSIONS=1``) and ``verdict4`` (0.2.0 from PyPI, installed on demand into
``bench/.venv`` and never into the project environment; it is quadratic, so it only
runs up to ``--verdict4-max`` receipts and under ``--timeout`` seconds).

    python bench/bench_quaternary.py [--experiment process|replay|both] [--sizes ...]
    python bench/bench_quaternary.py --check-compat 3000   # behaviour vs verdict4
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_VENV = ROOT / "bench" / ".venv"
VERDICT4 = "verdict4==0.2.0"
RETURNS = "returns>=0.30,<0.31"  # as pinned in pyproject.toml


def _rss_kb() -> int:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def child(impl: str, experiment: str, n: int) -> dict[str, Any]:
    """Run one measurement in this process and return it (stdlib only: runs in both venvs)."""
    q: Any = importlib.import_module("quaternary" if impl == "verdict4" else "four.quaternary")
    if impl != "verdict4":
        accounting = importlib.import_module("four.quaternary._accounting")
        if (impl == "four-c") != accounting.USE_EXTENSIONS:
            raise SystemExit(f"{impl}: USE_EXTENSIONS is {accounting.USE_EXTENSIONS}")
    config = q.QICTConfig(failure_alphabet={f"reason {i}" for i in range(n)})
    results = [q.no(f"reason {i}") for i in range(n)]
    base = _rss_kb()
    start = time.perf_counter()
    controller = q.QICTController(config)
    for result in results:
        controller.process(result)
    built = time.perf_counter()
    cpu = time.process_time()
    if experiment == "process":
        audit = controller.audit()
    else:
        audit = q.audit_trace(config, controller.receipts)
    done = time.perf_counter()
    cpu = time.process_time() - cpu  # apart from the wall time, which other jobs inflate
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert audit.valid and audit.evaluations == n, audit.errors[:3]
    return {
        "impl": impl,
        "experiment": experiment,
        "n": n,
        "process_s": built - start,
        "audit_s": done - built,
        "audit_cpu_s": cpu,
        "peak_mb": (peak - base) / 1024,
    }


def _snapshot(state: Any) -> tuple[Any, ...]:
    deps, lease = state.dependencies, state.pending_lease
    return (
        set(state.exclusions),
        set(state.used_evidence),
        set(state.used_compute),
        set(deps.used),
        set(deps.unresolved),
        set(deps.relation),
        [(name, str(outcome.value)) for name, outcome in deps.outcomes],
        state.evidence_budget,
        state.compute_budget,
        state.dependency_budget,
        state.status.value,
        getattr(state.candidate_disposition, "value", None),
        state.evaluation_count,
        state.clock,
        None
        if lease is None
        else (lease.lease_id, lease.kind.value, lease.obligation, lease.deadline),
        state.held_reason,
    )


def _step(m: Any, c: Any, op: int, pick: float, right: bool, shift: int, arcs: Any) -> Any:
    lease = c.state.pending_lease
    lid = lease.lease_id if right and lease else "nope"
    if op == 0:
        return c.process(m.yes())
    if op == 1:
        return c.process(m.no(["f0", "f1", "f2", "zz"][int(pick * 4)]))
    if op == 2:
        return c.process(m.maybe(m.EvidenceNeed(["g0", "g1", "gz"][int(pick * 3)])))
    if op == 3:
        return c.process(m.maybe(m.ComputeNeed(["k0", "k1", "kz"][int(pick * 3)])))
    if op == 4:
        return c.process(m.iff(["d0", "d1", "d2"][int(pick * 3)]), dependency_arcs=arcs)
    if op == 5:
        return c.evidence_returned(lid)
    if op == 6:
        outcome = [m.ResolutionOutcome.HOLDS, m.ResolutionOutcome.FAILS, None][int(pick * 3)]
        return c.resolve_dependency(lid, outcome)
    if op == 7:
        return c.advance_clock(max(0, c.state.clock + shift))
    if op == 8:
        return c.expire(lid)
    return c.invalidate_dependency(["d0", "d1", "dz"][int(pick * 3)])


def compat_child(trials: int) -> int:
    """Drive verdict4 and four.quaternary with the same random calls; count differences."""
    import random

    v4: Any = importlib.import_module("quaternary")
    ours: Any = importlib.import_module("four.quaternary")
    rng = random.Random(2026)
    mismatches = 0
    for trial in range(trials):
        kwargs = {
            "failure_alphabet": set(rng.sample(["f0", "f1", "f2"], rng.randint(0, 3))),
            "evidence_alphabet": set(rng.sample(["g0", "g1"], rng.randint(0, 2))),
            "compute_alphabet": set(rng.sample(["k0", "k1"], rng.randint(0, 2))),
            "dependency_alphabet": set(rng.sample(["d0", "d1", "d2"], rng.randint(0, 3))),
            "lease_ticks": rng.randint(1, 3),
        }
        controllers = [m.QICTController(m.QICTConfig(**kwargs)) for m in (v4, ours)]
        for _ in range(12):
            op, pick, right = rng.randrange(10), rng.random(), rng.random() < 0.7
            shift = rng.randint(-1, 3)
            arcs = rng.choice([(), [("d0", "d1")], [("d0", "d0")], [("a", "b", "c")]])

            seen: list[tuple[Any, ...]] = []
            for module, controller in zip((v4, ours), controllers, strict=True):
                try:
                    receipt = _step(module, controller, op, pick, right, shift, arcs)
                    seen.append(
                        (
                            "ok",
                            receipt.action.value,
                            _snapshot(receipt.before),
                            _snapshot(receipt.after),
                        )
                    )
                except (TypeError, ValueError) as exc:
                    seen.append(("raised", type(exc).__name__, str(exc)))
            if seen[0] != seen[1]:
                mismatches += 1
                print(f"trial {trial}: {seen}", file=sys.stderr)
                break
        audits = [c.audit() for c in controllers]
        fields = [(a.valid, a.errors, a.evaluations, a.initial_rank, a.final_rank) for a in audits]
        if fields[0] != fields[1]:
            mismatches += 1
            print(f"trial {trial}: audits {fields}", file=sys.stderr)
    return mismatches


def check_compat(trials: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    python = ensure_verdict4()
    probe = subprocess.run([str(python), "-c", "import returns"], capture_output=True)
    if probe.returncode:  # importing four.quaternary imports four, which needs returns
        subprocess.run([str(python), "-m", "pip", "install", "-q", RETURNS], check=True)
    done = subprocess.run(
        [str(python), __file__, "--compat-child", str(trials)],
        env=env,
        capture_output=True,
        text=True,
    )
    print(done.stdout.strip(), done.stderr.strip()[-2000:])


def ensure_verdict4() -> Path:
    python = BENCH_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
    probe = subprocess.run(
        [str(python), "-c", "import quaternary; print(quaternary.__version__)"],
        capture_output=True,
        text=True,
    )
    if probe.stdout.strip() != "0.2.0":
        subprocess.run([str(python), "-m", "pip", "install", "-q", VERDICT4], check=True)
    return python


def measure(impl: str, experiment: str, n: int, timeout: float) -> dict[str, Any] | None:
    env = dict(os.environ)
    env.pop("FOUR_NO_EXTENSIONS", None)
    if impl == "verdict4":
        python = str(ensure_verdict4())
        env.pop("PYTHONPATH", None)
    else:
        python = sys.executable
        env["PYTHONPATH"] = str(ROOT / "src")
        if impl == "four-py":
            env["FOUR_NO_EXTENSIONS"] = "1"
    try:
        done = subprocess.run(
            [python, __file__, "--child", impl, experiment, str(n)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as exc:
        print(f"{impl} {experiment} {n} failed: {exc.stderr.strip()[-400:]}", file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def compiled_available() -> bool:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    env.pop("FOUR_NO_EXTENSIONS", None)
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from four.quaternary import _accounting; print(_accounting.USE_EXTENSIONS)",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    return probe.stdout.strip() == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("IMPL", "EXPERIMENT", "N"))
    parser.add_argument("--experiment", choices=["process", "replay", "both"], default="both")
    parser.add_argument("--sizes", type=int, nargs="*")
    parser.add_argument("--verdict4-max", type=int, default=16_000)
    parser.add_argument("--pure-max", type=int, default=1_000_000)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--skip-verdict4", action="store_true")
    parser.add_argument(
        "--check-compat",
        type=int,
        metavar="TRIALS",
        help="compare behaviour with verdict4 on random call sequences",
    )
    parser.add_argument("--compat-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compat_child is not None:
        mismatches = compat_child(args.compat_child)
        print(f"{args.compat_child} random traces, {mismatches} differences from verdict4")
        return
    if args.check_compat is not None:
        check_compat(args.check_compat)
        return
    if args.child:
        impl, experiment, n = args.child
        print(json.dumps(child(impl, experiment, int(n))))
        return
    impls = (["four-c"] if compiled_available() else []) + ["four-py"]
    if not args.skip_verdict4:
        impls.append("verdict4")
    experiments = ["process", "replay"] if args.experiment == "both" else [args.experiment]
    for experiment in experiments:
        sizes = args.sizes or (
            [1_000, 4_000, 16_000]
            if experiment == "process"
            else [1_000, 4_000, 16_000, 100_000, 1_000_000]
        )
        print(f"\n### {experiment}: n distinct NO verdicts\n")
        print("| impl | n | process (s) | audit (s) | audit CPU (s) | peak RSS growth (MB) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for n in sizes:
            for impl in impls:
                if impl == "verdict4" and n > args.verdict4_max:
                    continue
                if impl == "four-py" and n > args.pure_max:
                    continue
                row = measure(impl, experiment, n, args.timeout)
                if row is None:
                    print(f"| {impl} | {n:,} | timeout | | | |", flush=True)
                    continue
                print(
                    f"| {impl} | {n:,} | {row['process_s']:.3f} | {row['audit_s']:.4f} | "
                    f"{row['audit_cpu_s']:.4f} | {row['peak_mb']:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
