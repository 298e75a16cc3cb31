"""`import four` time, and the loop's own cost per step with trajectory saving on.

python bench/run.py core
python bench/bench_core.py compare OTHER_TREE [ROUNDS]   # the loop, this tree vs another
python bench/bench_core.py instructions [OTHER_TREE]   # instructions a run (callgrind)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from returns.result import Result, Success

ROOT = Path(__file__).resolve().parents[1]
IMPORT_PROBE = (
    "import sys, time; t = time.perf_counter(); {statement}; d = time.perf_counter() - t; "
    "print(d * 1000, 'litellm' in sys.modules)"
)


def import_ms(statement: str, runs: int = 15) -> tuple[float, float, bool]:
    """Median and min of in-process time of an import statement in fresh interpreters."""
    times, leaked = [], False
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE.format(statement=statement)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": str(ROOT / "src")},
        ).stdout.split()
        times.append(float(out[0]))
        leaked |= out[1] == "True"
    return statistics.median(times), min(times), leaked


def loop_us_per_step(
    steps: int, repeats: int, parent: Path, awaited: bool = False
) -> tuple[float, float]:
    """Medians of wall and CPU time of whole runs of ``steps`` steps, divided by
    ``steps`` (``steps=0``: the per-run cost alone, in us a run). CPU time is this
    process's own, so it moves less than wall time when other jobs share the cores.
    ``awaited``: ``arun`` with an async G and V2, the runs one after another on one
    event loop."""
    import asyncio

    from four import (
        Action,
        Assistant,
        ExecutionError,
        FormatError,
        Invoke,
        Message,
        ModelError,
        Observation,
        Rejected,
        Reply,
        Submitted,
        arun,
        run,
        save_trajectory,
        scripted_invoke,
    )

    def parse(reply: Assistant) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        return Success([Action(reply.content)])

    def execute(action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return Success(Observation("<returncode>0</returncode>\n<output>\nok\n</output>", 0))

    async def aexecute(action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return execute(action)

    walls: list[float] = []
    cpus: list[float] = []
    emit = save_trajectory(tempfile.mkdtemp(dir=parent))  # deleted with ``parent``
    budget = max(steps, 1)

    def timed(t: float, c: float) -> None:
        cpus.append((time.process_time() - c) / budget * 1e6)
        walls.append((time.perf_counter() - t) / budget * 1e6)

    async def aruns() -> None:
        for _ in range(repeats):
            G = scripted_invoke(["echo step"] * steps)

            async def aG(messages: Sequence[Message], G: Invoke = G) -> Result[Reply, ModelError]:
                return G(messages)

            t, c = time.perf_counter(), time.process_time()
            await arun(aG, parse, aexecute, emit, "system", "task", max_steps=budget)
            timed(t, c)

    if awaited:
        asyncio.run(aruns())
    else:
        for _ in range(repeats):
            G = scripted_invoke(["echo step"] * steps)
            t, c = time.perf_counter(), time.process_time()
            run(G, parse, execute, emit, "system", "task", max_steps=budget)
            timed(t, c)
    return statistics.median(walls), statistics.median(cpus)


def create_us(parent: Path, files: int = 300) -> float:
    """What the filesystem alone charges for one new file (created, 500 bytes written,
    closed), median over ``files`` files in a fresh folder: a run creates two."""
    samples = []
    tmp = tempfile.mkdtemp(dir=parent)  # deleted with ``parent``
    for i in range(files):
        t = time.perf_counter()
        fd = os.open(f"{tmp}/{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.write(fd, b"x" * 500)
        os.close(fd)
        samples.append((time.perf_counter() - t) * 1e6)
    return statistics.median(samples)


@contextlib.contextmanager
def scratch(parent: Path) -> Iterator[Path]:
    """A folder for one bench's files, deleted only when the bench ends: on this
    machine's ext4 (no journal) each new inode skips, one by one, those freed in the
    last minutes, so deleting between measures would charge the bench's own clean-up
    to the next one."""
    with tempfile.TemporaryDirectory(dir=parent, prefix=".runs-") as tmp:
        yield Path(tmp)


# tmpfs shows the loop and its saving code (system calls included); the project tree
# adds what this disk charges for creating the run's two files, measured beside it.
FOLDERS = (("tmpfs, /dev/shm", Path("/dev/shm")), ("disk, the project tree", ROOT / "bench"))


def main() -> None:
    four_med, four_min, leaked = import_ms("import four")
    run_med, run_min, _ = import_ms("from four import run")
    base_med, _, _ = import_ms("import json")
    print("| measure | value |\n|---|---|")
    print(
        f"| `import four`, median of 15 fresh interpreters | {four_med:.1f} ms (min {four_min:.1f}) |"
    )
    print(
        f"| `from four import run` (loads returns), same | {run_med:.1f} ms (min {run_min:.1f}) |"
    )
    print(f"| `import json` in the same run, for scale | {base_med:.1f} ms |")
    print(f"| litellm imported by `import four` | {'YES (bug)' if leaked else 'no'} |")
    print()
    print(
        "| trajectories on | steps | wall us/step | CPU us/step | CPU beyond the run's own cost |"
    )
    print("|---|---:|---:|---:|---:|")
    for label, parent in FOLDERS:
        if not parent.is_dir():
            continue
        with scratch(parent) as folder:
            created = create_us(folder)
            figures = interleaved(folder)
        print(f"| {label}: one file created, by the filesystem alone | | {created:.0f} us | | |")
        for driver, awaited in (("run", False), ("arun", True)):
            where = f"{label}, `{driver}`"
            fixed, fixed_cpu = figures[awaited, 0]
            print(
                f"| {where}: a run of 1 step (per run) | 1 | {fixed:.0f} us | {fixed_cpu:.0f} us | |"
            )
            for n, _ in SIZES[1:]:
                wall, cpu = figures[awaited, n]
                beyond = (cpu * n - fixed_cpu) / n
                print(f"| {where} | {n} | {wall:.1f} | {cpu:.1f} | {beyond:.1f} |")


SIZES = ((0, 200), (10, 200), (100, 40), (1000, 15))
"""(steps, runs): the runs of each size, over all rounds."""
ROUNDS = 5


def interleaved(folder: Path) -> dict[tuple[bool, int], tuple[float, float]]:
    """Every (driver, size) measured a little in each of ``ROUNDS`` rounds, so that all
    of them see the host alike (its speed moves by tens of percent within minutes); the
    median of the rounds' medians."""
    rounds: dict[tuple[bool, int], list[tuple[float, float]]] = {}
    for _ in range(ROUNDS):
        for awaited in (False, True):
            for n, runs in SIZES:
                got = loop_us_per_step(n, max(3, runs // ROUNDS), folder, awaited)
                rounds.setdefault((awaited, n), []).append(got)
    return {
        key: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
        for key, got in rounds.items()
    }


STEPS = ((0, 200), (10, 200), (100, 40))


def child(folder: str) -> None:
    """One process's figures for ``compare``: wall and CPU us per run (0 steps) or per
    step, of ``run`` then of ``arun``."""
    with scratch(Path(folder)) as tmp:
        figures = [
            x
            for awaited in (False, True)
            for n, r in STEPS
            for x in loop_us_per_step(n, r, tmp, awaited)
        ]
        print(*(f"{x:.2f}" for x in figures))


def instructions(other: str | None = None, steps: int = 10) -> None:
    """User-space instructions per run of ``steps`` steps (saving on, tmpfs), counted by
    valgrind's callgrind: the same count whatever else the machine does, so a change
    can be judged when wall time swings with the host. Runs of 10 and of 40 runs are
    counted and subtracted (start-up and imports drop out)."""
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)")
        return
    trees = {"this tree": ROOT} | ({other: Path(other).resolve()} if other else {})
    print(f"{steps} steps a run, trajectories on /dev/shm; instructions (callgrind)\n")
    print("| driver | tree | per run | per step |\n|---|---|---:|---:|")
    for driver in ("run", "arun"):
        for name, tree in trees.items():
            counts = []
            for runs in (10, 40):
                done = subprocess.run(
                    ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                     sys.executable, __file__, "runs", str(steps), str(runs), "/dev/shm", driver],
                    capture_output=True, text=True, check=True,
                    env={**os.environ, "PYTHONPATH": str(tree / "src")},
                )  # fmt: skip
                counts += [int(w) for w in done.stderr.split("Collected :")[1].split()[:1]]
            per_run = (counts[1] - counts[0]) / 30
            print(f"| `{driver}` | {name} | {per_run:,.0f} | {per_run / max(steps, 1):,.0f} |")


def compare(other: str, rounds: int = 9, folder: str = "/dev/shm") -> None:
    """The loop of this tree and of ``other`` (another copy of the project, e.g.
    ``git archive REV src | tar -x -C DIR``) in alternating fresh interpreters, so both
    see the machine's load alike; medians over ``rounds``."""
    trees = {"this tree": ROOT, other: Path(other).resolve()}
    samples: dict[str, list[list[float]]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            out = subprocess.run(
                [sys.executable, __file__, "child", folder],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONPATH": str(tree / "src")},
            ).stdout
            samples[name].append([float(x) for x in out.split()])
    print(f"trajectories on {folder}, median of {rounds} alternating processes\n")
    print("wall time, and in brackets the process's CPU time (less moved by other jobs)\n")
    print("| driver | tree | run of 0 steps, us | 10 steps, us/step | 100 steps, us/step |")
    print("|---|---|---:|---:|---:|")
    for i, driver in enumerate(("run", "arun")):
        for name, rows in samples.items():
            m = [statistics.median(column) for column in zip(*rows, strict=True)][i * 6 :]
            print(
                f"| `{driver}` | {name} | {m[0]:.0f} ({m[1]:.0f}) | {m[2]:.1f} ({m[3]:.1f}) "
                f"| {m[4]:.1f} ({m[5]:.1f}) |"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2])  # four comes from PYTHONPATH, the tree under test
    elif sys.argv[1:2] == ["runs"]:  # counted by ``instructions``; four from PYTHONPATH
        with scratch(Path(sys.argv[4])) as tmp:
            loop_us_per_step(int(sys.argv[2]), int(sys.argv[3]), tmp, sys.argv[5] == "arun")
    elif sys.argv[1:2] == ["instructions"]:
        instructions(sys.argv[2] if len(sys.argv) > 2 else None)
    elif sys.argv[1:2] == ["compare"]:
        sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
        compare(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 9)
    else:
        sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
        main()
