"""Benchmark ``four watch DIR``: one pass of classification over a folder of runs.

Makes N runs with the real loop (a scripted model, an in-memory environment, 3 steps,
sealed) and N/10 streams left open by a driver that has gone (a child process, exited),
on tmpfs, then times one ``four watch DIR --once --json`` in a fresh interpreter
(imports excluded): every stream found, each sealed run read from its start record and
its document's head, each open one read whole and judged (dead, here).

    python bench/bench_watch.py [N ...]        # default: 1000 10000
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())

OPEN = """
import sys, time
from pathlib import Path
from four import Assistant, System, User
from four._types import RunInfo
from four.trajectory._save import TrajectorySink
keep = []
for i in range(int(sys.argv[2])):
    sink = TrajectorySink(Path(sys.argv[1]) / f"{i // 100:03d}", RunInfo({"cli": {}}, 9, 3, time.time()))
    for m in (System("s"), User(f"task {i}", "task"), Assistant("```bash\\nsleep 60\\n```")):
        sink.append(m)
    keep.append(sink)  # never closed: the driver exits with them open
"""

TIMED = """
import json, sys, time
from pathlib import Path
from four.cli._watch import one_pass
from four.observe._watch import Policy
t = time.perf_counter()
status = one_pass([Path(sys.argv[1])], Policy(), False, True)
print(json.dumps({"seconds": time.perf_counter() - t, "status": status}), file=sys.stderr)
"""


def make_runs(folder: Path, n: int) -> None:
    from four import run, save_trajectory, scripted_invoke
    from tests._doubles import FakeEnv, line_parse

    for i in range(n):
        replies = ["$ ls", "$ cat calc.py", "DONE fixed"]
        run(scripted_invoke(replies), line_parse, FakeEnv(),
            save_trajectory(folder / f"{i // 100:03d}"), "You fix bugs.", f"Task {i}.")  # fmt: skip
    env = {"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    subprocess.run([sys.executable, "-c", OPEN, str(folder / "open"), str(max(1, n // 10))],
                   check=True, env=env)  # fmt: skip


def one(n: int) -> tuple[float, int]:
    folder = Path(tempfile.mkdtemp(prefix="four-bench-watch-", dir=SCRATCH))
    try:
        make_runs(folder, n)
        done = subprocess.run(
            [sys.executable, "-c", TIMED, str(folder)],
            capture_output=True, text=True, check=True,
            env={"PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
        )  # fmt: skip
        report = json.loads(done.stdout)
        dead = report["counts"].get("dead", 0)
        figures = json.loads(done.stderr.strip().splitlines()[-1])
        return float(figures["seconds"]), int(dead)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    sizes = [int(a) for a in (argv if argv is not None else sys.argv[1:])] or [1000, 10000]
    print("| runs (sealed + open) | one pass | per run | dead found |")
    print("|---|---|---|---|")
    for n in sizes:
        seconds, dead = one(n)
        total = n + max(1, n // 10)
        per = seconds / total * 1e6
        print(f"| {n} + {max(1, n // 10)} | {seconds:.2f} s | {per:.0f} µs | {dead} |")


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    main()
