"""Latency of a trivial command (`true`) per environment, side by side in one run.

    python bench/run.py execute        # or: python bench/bench_execute.py
    python bench/bench_execute.py compare OTHER_TREE [ROUNDS]

`compare` times this tree against another checkout of four (main, say: `git worktree add
--detach OTHER_TREE main`), each in interpreters of its own taking turns round by
round: `true` in local_env and shell_env, and a batch of real commands an agent runs in a
repository (ls, cat, grep -r, find, git log, python3 -c, wc, sed) in local_env.

Rows: four's local_env (a fresh bash per command), four's persistent shell_env, and
mini-swe-agent's LocalEnvironment (a fresh /bin/sh per command). mini-swe-agent runs in
its own virtual environment, bench/.venv, made on first use with
`python -m venv bench/.venv && bench/.venv/bin/pip install mini-swe-agent==2.4.6`
(set FOUR_BENCH_MSWEA_PYTHON to use another interpreter that has it), and is timed in a
subprocess with the same loop, so the figures compare like with like.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "bench" / ".venv"
MSWEA = "mini-swe-agent==2.4.6"
WARMUP, RUNS = 50, 2000

# Timed in the subprocess: the same shape of loop as ``timed`` below, one round per line
# of stdin, so the three environments take turns and share the machine's load alike.
MSWEA_PROBE = """
import json, os, sys, time
os.environ["MSWEA_SILENT_STARTUP"] = "1"
from minisweagent.environments.local import LocalEnvironment
env = LocalEnvironment()
for line in sys.stdin:
    warmup, runs = map(int, line.split())
    for _ in range(warmup):
        env.execute({"command": "true"})
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        env.execute({"command": "true"})
        times.append(time.perf_counter() - t)
    print(json.dumps(times), flush=True)
"""


def timed(call: object, warmup: int, runs: int) -> list[float]:
    from four import Action

    assert callable(call)
    action = Action("true")
    for _ in range(warmup):
        call(action)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        call(action)
        times.append(time.perf_counter() - t)
    return times


def mswea_python() -> str | None:
    """An interpreter with mini-swe-agent: FOUR_BENCH_MSWEA_PYTHON, else bench/.venv (made here)."""
    given = os.environ.get("FOUR_BENCH_MSWEA_PYTHON")
    if given:
        return given
    python = VENV / "bin" / "python"
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        probe = [str(python), "-c", "import minisweagent"]
        if subprocess.run(probe, capture_output=True, env={"MSWEA_SILENT_STARTUP": "1"}).returncode:
            subprocess.run([str(python), "-m", "pip", "install", "-q", MSWEA], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"(mini-swe-agent unavailable: {exc})", file=sys.stderr)
        return None
    return str(python)


class Mswea:
    """mini-swe-agent's LocalEnvironment, timed in its own interpreter, round by round."""

    def __init__(self, python: str) -> None:
        self.proc = subprocess.Popen(
            [python, "-c", MSWEA_PROBE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

    def round(self, warmup: int, runs: int) -> list[float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{warmup} {runs}\n")
        self.proc.stdin.flush()
        times: list[float] = json.loads(self.proc.stdout.readline())
        return times

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


COMMANDS = (
    "ls -la",
    "head -50 README.md",
    "grep -rn 'def ' src | wc -l",
    "find . -name '*.py' -not -path './.venv/*' | head -20",
    "git log --oneline -5",
    "python3 -c 'print(sum(range(1000)))'",
    "wc -l src/four/*.py",
    "sed -n 1,40p pyproject.toml",
)
"""The realistic workload: what an agent runs in a repository, read-only."""

# One round per line of stdin ("local N", "shell N" or "batch N"): N timings back as JSON.
TREE_PROBE = """
import json, os, sys, time
from four import Action

def cpu():
    # This process and the children it reaped, and every living descendant with the
    # children it reaped (a launcher and its commands, a persistent shell): user + system s.
    total, todo = sum(os.times()[:4]), [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(child) for child in f.read().split()]
        except OSError:
            continue
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total

from four.execute import local_env, shell_env
commands = json.loads(sys.argv[1])
local = local_env()
shell = shell_env()
for line in sys.stdin:
    kind, runs = line.split()
    times = []
    before = cpu()
    for _ in range(int(runs)):
        t = time.perf_counter()
        if kind == "batch":
            for command in commands:
                local(Action(command))
        else:
            (local if kind == "local" else shell)(Action("true"))
        times.append(time.perf_counter() - t)
    print(json.dumps([times, (cpu() - before) / int(runs)]), flush=True)
shell.close()
"""


class Tree:
    """A checkout of four timed in an interpreter of its own (its ``src`` first on the path)."""

    def __init__(self, tree: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree / "src")}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", TREE_PROBE, json.dumps(COMMANDS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )

    def round(self, kind: str, runs: int) -> tuple[list[float], float]:
        """Wall times of ``runs`` rounds of ``kind``, and the CPU time of one."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{kind} {runs}\n")
        self.proc.stdin.flush()
        times, cpu = json.loads(self.proc.stdout.readline())
        return times, cpu

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def compare(other: Path, rounds: int) -> None:
    """This tree against ``other``, taking turns: medians and their ratio."""
    trees = {"this": Tree(ROOT), other.name: Tree(other)}
    plan = (
        ("local", "`true` in local_env", 40),
        ("shell", "`true` in shell_env", 200),
        ("batch", f"{len(COMMANDS)} real commands in local_env", 3),
    )
    times: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds + 1):
        for kind, _, runs in plan:
            for name, tree in trees.items():
                got, cpu = tree.round(kind, runs)
                if r:  # round 0 warms up
                    times.setdefault((kind, name), []).extend(got)
                    cpus.setdefault((kind, name), []).append(cpu)
    for tree in trees.values():
        tree.close()
    print(f"{rounds} interleaved rounds after one warm-up, milliseconds: median wall, and")
    print("mean CPU (the driver, its launcher or shell, and its commands, user + system)\n")
    print(f"| workload | this tree | {other.name} | this / {other.name} |")
    print("| --- | ---: | ---: | ---: |")
    for kind, label, _ in plan:
        for what, figures, middle in (
            ("wall", times, statistics.median),
            ("CPU", cpus, statistics.mean),
        ):
            mine = middle(figures[kind, "this"]) * 1000
            theirs = middle(figures[kind, other.name]) * 1000
            print(f"| {label}, {what} | {mine:.2f} | {theirs:.2f} | {mine / theirs:.2f}x |")


def row(name: str, times: list[float]) -> tuple[str, float, str]:
    ms = sorted(t * 1000 for t in times)
    median = statistics.median(ms)
    q1, q3 = ms[len(ms) // 4], ms[3 * len(ms) // 4]
    p95 = ms[int(len(ms) * 0.95)]
    text = f"| {name} | {median:.3f} | {q1:.3f} to {q3:.3f} | {p95:.3f} | {ms[0]:.3f} |"
    return text, median, name


def main() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from four.execute import local_env, shell_env

    runs = int(os.environ.get("FOUR_BENCH_RUNS", RUNS))
    rounds = 10
    python = mswea_python()
    mswea = Mswea(python) if python is not None else None
    names = ["four local_env (fresh bash)", "four shell_env (persistent bash)"]
    if mswea is not None:
        names.append("mini-swe-agent 2.4.6 LocalEnvironment")
    times: dict[str, list[float]] = {name: [] for name in names}
    local = local_env()
    with shell_env() as shell:
        for r in range(rounds):
            warmup = WARMUP if r == 0 else 5
            times[names[0]] += timed(local, warmup, runs // rounds)
            times[names[1]] += timed(shell, warmup, runs // rounds)
            if mswea is not None:
                times[names[2]] += mswea.round(warmup, runs // rounds)
    if mswea is not None:
        mswea.close()
    rows = [row(name, times[name]) for name in names]
    print(
        f"`true`, {runs} runs each in {rounds} interleaved rounds after {WARMUP} warm-up, "
        "milliseconds per command\n"
    )
    print("| environment | median | interquartile | p95 | min |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for text, _, _ in rows:
        print(text)
    medians = {name: median for _, median, name in rows}
    shell_ms = medians["four shell_env (persistent bash)"]
    print()
    print(f"persistent shell: {shell_ms:.3f} ms a command (target ≤ 1 ms)")
    if len(rows) == 3:
        ratio = medians["mini-swe-agent 2.4.6 LocalEnvironment"] / shell_ms
        print(f"persistent shell vs mini-swe-agent: {ratio:.1f}x faster (target ≥ 3x)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["compare"]:
        compare(Path(sys.argv[2]).resolve(), int(sys.argv[3]) if len(sys.argv) > 3 else 10)
    else:
        main()
