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
    python bench/bench_audit.py compare OTHER_TREE [N] [ROUNDS]
    python bench/bench_audit.py instructions OTHER_TREE
    python bench/bench_audit.py hash [N]

``compare`` audits N runs (default 10,000) written by this tree, and N written by
another checkout of four (``git worktree add --detach OTHER_TREE COMMIT``, with its own
``.venv``) with that tree's own code, compiled and pure, the four taking turns for
ROUNDS rounds (default 3): the medians of CPU and wall seconds, one process each.
``instructions`` counts the instructions of such audits with valgrind's callgrind (the
same count whatever else the machine does): of 100 and of 300 runs, subtracted, so
start-up and imports drop out.
``hash`` times SHA-256 against BLAKE2b-256 (``hashlib``) over the links of N verified
runs' seals and receipts (the texts the chain hashes): ns a link, and the ratio.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def _audit(
    folder: Path, pure: bool, jobs: int, tree: Path = ROOT, python: str = sys.executable
) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    env.pop("FOUR_NO_EXTENSIONS", None)
    if pure:
        env["FOUR_NO_EXTENSIONS"] = "1"
    done = subprocess.run(
        [python, str(tree / "bench" / "bench_audit.py"), "child", str(folder), str(jobs)],
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


def _make_with(tree: Path, python: str, folder: Path, n: int) -> None:
    """N runs written by ``tree``'s own code (its interpreter ``python``)."""
    code = f"import sys; sys.path[:0] = [{str(tree / 'src')!r}, {str(tree)!r}]; "
    code += "from bench.bench_audit import make_runs; from pathlib import Path; "
    code += f"make_runs(Path({str(folder)!r}), {n})"
    subprocess.run([python, "-c", code], check=True)


def compare(other: Path, n: int, rounds: int) -> None:
    """This tree against ``other``, each auditing the runs it wrote (see the docstring)."""
    pythons = {other: str(other / ".venv" / "bin" / "python"), ROOT: sys.executable}
    folders = {
        tree: Path(tempfile.mkdtemp(prefix="four-bench-audit-", dir=SCRATCH)) for tree in pythons
    }
    try:
        for tree, folder in folders.items():
            _make_with(tree, pythons[tree], folder, n)
        figures: dict[tuple[Path, bool], list[tuple[float, float]]] = {}
        for _ in range(rounds):
            for tree in (other, ROOT):
                for pure in (False, True):
                    r = _audit(folders[tree], pure, 1, tree, pythons[tree])
                    assert r["compiled"] is not pure and r["statuses"] == {"valid": n}, r
                    figures.setdefault((tree, pure), []).append(
                        (float(str(r["cpu"])), float(str(r["wall"])))
                    )
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)
    base = statistics.median(cpu for cpu, _ in figures[other, False])
    print(f"| tree, core ({n:,} runs, {rounds} rounds) | CPU s | wall s | CPU / before compiled |")
    print("|---|---:|---:|---:|")
    for (tree, pure), values in figures.items():
        cpu, wall = (statistics.median(v[i] for v in values) for i in (0, 1))
        name = ("this tree" if tree == ROOT else "before") + (", pure" if pure else ", compiled")
        print(f"| {name} | {cpu:.2f} | {wall:.2f} | {cpu / base:.2f}x |")


def instructions(other: Path) -> None:
    """Instructions a run audited, this tree against ``other`` (see the docstring)."""
    pythons = {other: str(other / ".venv" / "bin" / "python"), ROOT: sys.executable}
    print("| tree, core | instructions a run audited | / before compiled |")
    print("|---|---:|---:|")
    base = 0.0
    for tree, python in pythons.items():
        folder = Path(tempfile.mkdtemp(prefix="four-bench-audit-", dir=SCRATCH))
        try:
            _make_with(tree, python, folder, 300)
            for pure in (False, True):
                env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
                env.pop("FOUR_NO_EXTENSIONS", None)
                env |= {"FOUR_NO_EXTENSIONS": "1"} if pure else {}
                counts = []
                for where in (folder / "000", folder):  # 100 runs, then 300
                    done = subprocess.run(
                        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python,
                         str(tree / "bench" / "bench_audit.py"), "child", str(where), "1"],
                        capture_output=True, text=True, check=True, env=env,
                    )  # fmt: skip
                    counts.append(int(done.stderr.split("Collected :")[1].split()[0]))
                per_run = (counts[1] - counts[0]) / 200
                base = base or per_run
                name = ("this tree" if tree == ROOT else "before") + (
                    ", pure" if pure else ", compiled"
                )
                print(f"| {name} | {per_run:,.0f} | {per_run / base:.2f}x |", flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def hashes(n: int) -> None:
    """SHA-256 against BLAKE2b-256 over the texts the chain hashes, from N verified runs."""
    from four._chain import canonical_text
    from four.checks._audit import runs_under

    folder = Path(tempfile.mkdtemp(prefix="four-bench-audit-", dir=SCRATCH))
    try:
        make_runs(folder, n)
        texts: list[bytes] = []
        for path in runs_under(folder):
            if path.suffix == ".json":
                data = json.loads(path.read_text())
                fields = [
                    data[k]
                    for k in (
                        "format",
                        "seal",
                        "info",
                        "outcome",
                        "outcome_detail",
                        "stats",
                        "stream",
                    )
                ]
                receipts = data["stats"]["verdicts"]["receipts"]["receipts"]
                texts += [
                    canonical_text(v).encode() for v in [*fields, *data["messages"], *receipts]
                ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    long = [bytes([i % 256]) * 65536 for i in range(64)]  # long tool outputs, 64 KB a link
    print("| links hashed | sha256, ns a link | blake2b-256, ns a link | blake2b / sha256 |")
    print("|---|---:|---:|---:|")
    for name, links in ((f"{n} runs' seals and receipts", texts), ("64 KB outputs", long)):
        best = [
            min(_cpu_of(_hashing(algorithm, links)) for _ in range(5)) / len(links) * 1e9
            for algorithm in ("sha256", "blake2b")
        ]
        mean = sum(map(len, links)) / len(links)
        print(
            f"| {len(links):,} {name} ({mean:,.0f} bytes mean) | {best[0]:,.0f} "
            f"| {best[1]:,.0f} | {best[1] / best[0]:.2f}x |"
        )


def _hashing(algorithm: str, links: list[bytes]) -> Callable[[], object]:
    prev = bytes(32)
    if algorithm == "sha256":
        return lambda: [hashlib.sha256(prev + t).digest() for t in links]
    return lambda: [hashlib.blake2b(prev + t, digest_size=32).digest() for t in links]


def _cpu_of(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["compare"]:
        sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
        size = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
        compare(Path(sys.argv[2]).resolve(), size, int(sys.argv[4]) if len(sys.argv) > 4 else 3)
    elif sys.argv[1:2] == ["instructions"]:
        sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
        instructions(Path(sys.argv[2]).resolve())
    elif sys.argv[1:2] == ["hash"]:
        sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
        hashes(int(sys.argv[2]) if len(sys.argv) > 2 else 100)
    else:
        sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
        main([int(a) for a in sys.argv[1:]] or None)
