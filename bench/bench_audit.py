"""Benchmark ``four audit DIR``: a fleet of verified runs checked against their seals.

Makes N verified runs with the real loop (a scripted model, an in-memory environment,
a check that says NO once and then YES: 11 messages and 2 receipts a run, about 9 KB
sealed) on tmpfs, then audits the folder in a fresh interpreter, twice: with the
compiled accounting core (the replay path ``four.quaternary`` uses when it is built)
and with the pure-Python one (``FOUR_NO_EXTENSIONS=1``). Each audit recomputes every
run's seal (SHA-256 over every field), checks the verdict record's fields, and replays
its receipts to their head. Wall and CPU time of the audit alone, interpreter start
and imports excluded.

    python bench/bench_audit.py [N ...]        # default: 1000 10000
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())


def make_runs(folder: Path, n: int) -> None:
    """N verified runs in ``folder`` (one sub-folder per hundred, as a batch writes)."""
    from four import run, save_trajectory, scripted_invoke
    from four.checks import verify
    from four.quaternary import CheckResult, no, yes
    from tests._doubles import FakeEnv, line_parse

    for i in range(n):
        said: list[CheckResult] = [no(f"test_{i % 7} fails"), yes()]
        judge = verify(lambda claim, said=said: said.pop(0))
        replies = ["$ ls", "$ cat calc.py", "DONE fixed", "$ sed -i s/-/+/ calc.py", "DONE now"]
        run(
            scripted_invoke(replies),
            line_parse,
            FakeEnv(),
            save_trajectory(folder / f"{i // 100:03d}"),
            "You fix bugs.",
            f"Task {i}: make the tests pass.",
            check=judge,
        )


def child(folder: str, jobs: int) -> None:
    """Audit every run under ``folder``; print the figures as JSON."""
    from four.checks._audit import audit_all, runs_under
    from four.quaternary._accounting import USE_EXTENSIONS

    start, cpu = time.perf_counter(), _cpu()
    statuses: dict[str, int] = {}
    for result in audit_all(sorted(runs_under(folder)), jobs=jobs):
        statuses[result.status] = statuses.get(result.status, 0) + 1
    wall, cpu = time.perf_counter() - start, _cpu() - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "statuses": statuses, "compiled": USE_EXTENSIONS}))


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the worker processes)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _audit(folder: Path, pure: bool, jobs: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    env.pop("FOUR_NO_EXTENSIONS", None)
    if pure:
        env["FOUR_NO_EXTENSIONS"] = "1"
    done = subprocess.run(
        [sys.executable, __file__, "child", str(folder), str(jobs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main(sizes: list[int] | None = None) -> None:
    sizes = sizes or [1000, 10000]
    print(
        "| runs | accounting core, processes | audit wall s | audit CPU s | wall ms a run | valid |"
    )
    print("|---:|---|---:|---:|---:|---:|")
    for n in sizes:
        folder = Path(tempfile.mkdtemp(prefix="four-bench-audit-", dir=SCRATCH))
        try:
            make_runs(folder, n)
            for pure, jobs in ((False, 1), (True, 1), (False, 0)):
                r = _audit(folder, pure, jobs)
                wall, cpu = float(str(r["wall"])), float(str(r["cpu"]))
                statuses = r["statuses"]
                assert isinstance(statuses, dict)
                core = "compiled" if r["compiled"] else "pure Python"
                core += ", one process" if jobs == 1 else f", {os.cpu_count()} processes"
                shown = f"{cpu:.2f}" if jobs == 1 else "n/a"  # forkserver workers: not ours
                print(
                    f"| {n:,} | {core} | {wall:.2f} | {shown} | {wall / n * 1000:.3f} "
                    f"| {statuses.get('valid', 0):,} |",
                    flush=True,
                )
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2], int(sys.argv[3]))
    else:
        sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
        main([int(a) for a in sys.argv[1:]] or None)
