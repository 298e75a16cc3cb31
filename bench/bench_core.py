"""`import four` time, and the loop's own cost per step with trajectory saving on.

python bench/run.py core
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from returns.result import Result, Success

ROOT = Path(__file__).resolve().parents[1]
IMPORT_PROBE = (
    "import sys, time; t = time.perf_counter(); import {mod}; d = time.perf_counter() - t; "
    "print(d * 1000, 'litellm' in sys.modules)"
)


def import_ms(module: str, runs: int = 15) -> tuple[float, float, bool]:
    """Median and min of in-process import time in fresh interpreters."""
    times, leaked = [], False
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE.format(mod=module)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": str(ROOT / "src")},
        ).stdout.split()
        times.append(float(out[0]))
        leaked |= out[1] == "True"
    return statistics.median(times), min(times), leaked


def loop_us_per_step(steps: int, repeats: int, parent: Path) -> float:
    """Median wall time of whole runs of ``steps`` steps, divided by ``steps``
    (``steps=0``: the per-run cost alone, in us a run)."""
    from four import (
        Action,
        Assistant,
        ExecutionError,
        FormatError,
        Observation,
        Rejected,
        Submitted,
        run,
        save_trajectory,
        scripted_invoke,
    )

    def parse(reply: Assistant) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        return Success([Action(reply.content)])

    def execute(action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return Success(Observation("<returncode>0</returncode>\n<output>\nok\n</output>", 0))

    samples = []
    with tempfile.TemporaryDirectory(dir=parent, prefix=".runs-") as tmp:
        emit = save_trajectory(tmp)
        for _ in range(repeats):
            G = scripted_invoke(["echo step"] * steps)
            t = time.perf_counter()
            run(G, parse, execute, emit, "system", "task", max_steps=steps)
            samples.append((time.perf_counter() - t) / max(steps, 1) * 1e6)
    return statistics.median(samples)


def create_us(parent: Path, files: int = 300) -> float:
    """What the filesystem alone charges for one new file (created, 500 bytes written,
    closed), median over ``files`` files in a fresh folder: a run creates two."""
    samples = []
    with tempfile.TemporaryDirectory(dir=parent, prefix=".files-") as tmp:
        for i in range(files):
            t = time.perf_counter()
            fd = os.open(f"{tmp}/{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            os.write(fd, b"x" * 500)
            os.close(fd)
            samples.append((time.perf_counter() - t) * 1e6)
    return statistics.median(samples)


# tmpfs shows the loop and its saving code (system calls included); the project tree
# adds what this disk charges for creating the run's two files, measured beside it.
FOLDERS = (("tmpfs, /dev/shm", Path("/dev/shm")), ("disk, the project tree", ROOT / "bench"))


def main() -> None:
    four_med, four_min, leaked = import_ms("four")
    base_med, _, _ = import_ms("json")
    print("| measure | value |\n|---|---|")
    print(
        f"| `import four`, median of 15 fresh interpreters | {four_med:.1f} ms (min {four_min:.1f}) |"
    )
    print(f"| `import json` in the same run, for scale | {base_med:.1f} ms |")
    print(f"| litellm imported by `import four` | {'YES (bug)' if leaked else 'no'} |")
    for label, parent in FOLDERS:
        if not parent.is_dir():
            print(f"| trajectories on {label} | (no such folder) |")
            continue
        fixed = loop_us_per_step(0, 200, parent)
        per = {n: loop_us_per_step(n, r, parent) for n, r in ((10, 200), (100, 40), (1000, 6))}
        print(f"| **trajectories on {label}** | |")
        print(f"| one file created there, by the filesystem alone | {create_us(parent):.0f} us |")
        print(f"| a run of 0 steps (files created, components recorded, sealed) | {fixed:.0f} us |")
        for n, us in per.items():
            marginal = (us * n - fixed) / n
            print(
                f"| loop + saving, {n} steps | {us:.1f} us/step "
                f"({marginal:.1f} beyond the run's own cost) |"
            )
        print(f"| 1000-step / 10-step cost per step | {per[1000] / per[10]:.2f}x |")


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    main()
