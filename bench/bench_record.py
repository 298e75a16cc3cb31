"""The typed record (issue 32) against the tree before it, in one run: reading runs back.

python bench/bench_record.py OTHER_TREE [ROUNDS]   # OTHER_TREE: git archive REV src | tar -x -C DIR

Each measure runs in fresh processes, alternating this tree and OTHER_TREE (``PYTHONPATH``
the tree's ``src``), so both see the machine's load alike; medians over ROUNDS (default 5).
The files are written once, by this tree (the format is the same): 10,000 sealed runs of
10 steps (what ``four stats`` and ``four show`` read one by one), and one run of about
70 MB (``bench_cli.huge_run``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
RUNS = 10_000
HUGE_STEPS = 185_000  # about 70 MB sealed


def child(kind: str, target: str) -> None:
    """One measure in this process (four from PYTHONPATH): wall s, CPU s."""
    wall, cpu = time.perf_counter(), time.process_time()
    if kind == "import":
        import four
    elif kind == "import-trajectory":
        import four.trajectory  # noqa: F401
    elif kind == "load-each":
        from four.trajectory import load_trajectory

        for path in sorted(Path(target).rglob("*.json")):
            load_trajectory(path)
    elif kind == "load":
        from four.trajectory import load_trajectory

        load_trajectory(target)
    print(time.perf_counter() - wall, time.process_time() - cpu)


PROBE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], stderr=subprocess.DEVNULL); "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)"
)
"""Runs argv in a fresh process and measures it from a small parent (a child forked from
this process would count this process's peak as its own)."""


def command(argv: list[str], tree: Path) -> tuple[float, float, float]:
    """A ``four`` command of ``tree`` in a fresh process: wall s, CPU s, peak MB."""
    *_, last = probed([sys.executable, "-m", "four.cli", *argv], tree)
    wall, cpu, peak = last.split()
    return float(wall), float(cpu), float(peak)


def measured(kind: str, target: str, tree: Path) -> tuple[float, float, float]:
    """One ``child`` measure of ``tree`` in a fresh process: wall s, CPU s (its own),
    peak MB (the process's)."""
    own, probe = probed([sys.executable, __file__, "child", kind, target], tree)
    wall, cpu = own.split()
    return float(wall), float(cpu), float(probe.split()[2])


def probed(argv: list[str], tree: Path) -> list[str]:
    """The lines ``argv`` printed, and the probe's: wall s, CPU s, peak MB."""
    return subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True,
        env=_env(tree),
    ).stdout.splitlines()  # fmt: skip


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree / "src"), "FOUR_NO_EXTENSIONS": "1"}


def corpus(folder: Path) -> tuple[Path, Path]:
    """10,000 sealed runs (hard links of one real run) and the 70 MB run."""
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    from bench.bench_cli import huge_run
    from bench.bench_fleet import template

    sealed = template(folder / "one")
    for i in range(RUNS):
        run = folder / "runs" / f"t{i // 100:03d}"
        run.mkdir(parents=True, exist_ok=True)
        os.link(sealed, run / f"20260101T000000Z-{i:012x}.json")
    return folder / "runs", huge_run(folder / "huge", HUGE_STEPS)


def main(other: str, rounds: int) -> None:
    trees = {"before": Path(other).resolve(), "after": ROOT}
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        runs, huge = corpus(Path(tmp))
        rows: dict[str, tuple[str, ...]] = {
            "`import four`": ("import", ""),
            "`import four.trajectory`": ("import-trajectory", ""),
            f"`load_trajectory` of {RUNS:,} runs, one process": ("load-each", str(runs)),
            f"`load_trajectory` of one {huge.stat().st_size / 2**20:.0f} MB run": (
                "load",
                str(huge),
            ),
            f"`four stats` of {RUNS:,} runs": ("stats", str(runs)),
            f"`four show` of the {huge.stat().st_size / 2**20:.0f} MB run": ("show", str(huge)),
        }
        found: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        for _ in range(rounds):
            for row, (kind, target) in rows.items():
                for name, tree in trees.items():
                    value = (
                        command([kind, target], tree)
                        if kind in ("stats", "show")
                        else measured(kind, target, tree)
                    )
                    found.setdefault((row, name), []).append(value)
    print(f"median of {rounds} alternating fresh processes; wall s (CPU s), peak MB\n")
    print("| measure | before | after | after / before (CPU) |\n|---|---:|---:|---:|")
    for row in rows:
        b, a = (
            [statistics.median(c) for c in zip(*found[(row, n)], strict=True)]
            for n in ("before", "after")
        )
        scale = 1000 if row.startswith("`import") else 1
        unit = " ms" if scale == 1000 else " s"
        print(
            f"| {row} | {b[0] * scale:.3g}{unit} ({b[1] * scale:.3g}), {b[2]:.0f} MB "
            f"| {a[0] * scale:.3g}{unit} ({a[1] * scale:.3g}), {a[2]:.0f} MB | {a[1] / b[1]:.2f}x |"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5)
