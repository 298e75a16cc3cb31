"""What a held-out check costs: one judgement in place against one in a copy of the workspace.

    python bench/run.py checks        # or: python bench/bench_checks.py

`command_check("true")` judges a claim; in place it runs in the agent's environment,
held out (one small held-out file) in a fresh copy of the workspace, deleted after. The
workspace holds N files of 1 KB. Rounds interleave the rows so they share the machine's
load; the table shows the median and interquartile range (ms a judgement).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROUNDS, PER_ROUND = 5, 20


def workspace(files: int) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="four-bench-checks-"))
    for i in range(files):
        sub = folder / f"pkg{i % 10}"
        sub.mkdir(exist_ok=True)
        (sub / f"m{i}.py").write_bytes(b"x = 1\n" * 170)
    return folder


def main() -> None:
    from four import Action
    from four.checks import Claim, command_check
    from four.execute import local_env, sandbox_env

    small, large = workspace(100), workspace(1_000)
    in_place = command_check("true", timeout=30)
    held = command_check("true", timeout=30, files={"tests_hidden/t.py": b"def test(): pass\n"})
    rows: dict[str, Callable[[], object]] = {
        "in place, local_env": lambda: in_place(Claim("", (), local_env(cwd=str(small)))),
        "held out, local_env, 100 files": lambda: held(Claim("", (), local_env(cwd=str(small)))),
        "held out, local_env, 1,000 files": lambda: held(Claim("", (), local_env(cwd=str(large)))),
    }
    sandbox = sandbox_env(30, workdir=str(small))
    if shutil.which("bwrap") and sandbox(Action("true")).unwrap().returncode == 0:
        rows["in place, sandbox_env"] = lambda: in_place(Claim("", (), sandbox))
        rows["held out, sandbox_env, 100 files"] = lambda: held(Claim("", (), sandbox))
    times: dict[str, list[float]] = {name: [] for name in rows}
    try:
        for _ in range(ROUNDS):
            for name, judge in rows.items():
                for _ in range(PER_ROUND):
                    start = time.perf_counter()
                    judge()
                    times[name].append((time.perf_counter() - start) * 1000)
    finally:
        shutil.rmtree(small, ignore_errors=True)
        shutil.rmtree(large, ignore_errors=True)
    print("| judgement | median | interquartile |")
    print("| --- | ---: | ---: |")
    for name, values in times.items():
        q1, median, q3 = statistics.quantiles(values, n=4)
        print(f"| {name} | {median:.1f} | {q1:.1f} to {q3:.1f} |")


if __name__ == "__main__":
    import sys

    sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src")]
    main()
