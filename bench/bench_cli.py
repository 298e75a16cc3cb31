"""The `four` command's start-up and its trajectory commands on a long run.

python bench/run.py cli
FOUR_BENCH_MINI=/tmp/mini-pkgs python bench/run.py cli   # also times mini-swe-agent's `mini --help`

Every figure is wall time of a fresh subprocess (`python -m four.cli`, what the
`four` script runs), median of N runs. `four --help` must stay under 150 ms and
must not import litellm (nor rich).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELP_BUDGET_MS = 150.0


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "100"}


def wall_ms(argv: Sequence[str], runs: int) -> tuple[float, float, float]:
    """Median and min wall time, and median CPU time (user + system), of ``argv`` in
    fresh processes. CPU time moves less than wall time when other work shares the cores."""
    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(
            argv, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        times.append((time.perf_counter() - t) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        cpu.append(used * 1000)
    return statistics.median(times), min(times), statistics.median(cpu)


def four_command() -> list[str]:
    """The installed ``four`` script beside this Python, else what that script does
    (``from four.cli import main``; ``python -m`` would add runpy's own imports)."""
    script = Path(sys.executable).with_name("four")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from four.cli import main; sys.exit(main())"]


MINI_PROBE = "import sys; sys.argv[0] = 'mini'; from minisweagent.run.mini import app; app()"


def mini_help_ms(packages: str, runs: int) -> tuple[float, float, float, bool]:
    """mini-swe-agent's ``mini --help`` from a ``pip install --target`` folder: wall
    median, min, CPU median, and whether litellm was imported."""
    environ = {
        **os.environ,
        "PYTHONPATH": packages,
        "MSWEA_SILENT_STARTUP": "1",
        "XDG_CONFIG_HOME": tempfile.mkdtemp(prefix="four-bench-mini-"),
    }
    argv = [sys.executable, "-c", MINI_PROBE, "--help"]
    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(argv, env=environ, capture_output=True, check=True)
        times.append((time.perf_counter() - t) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    probe = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", MINI_PROBE, "--help"],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return statistics.median(times), min(times), statistics.median(cpu), "litellm" in probe.stderr


def imported_by_help() -> set[str]:
    """Which heavy modules `four --help` imports (from -X importtime)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "four.cli", "--help"],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    return names & {"litellm", "rich", "httpx", "openai", "pydantic"}


def long_run(directory: Path, steps: int) -> Path:
    """A trajectory of ``steps`` steps with 40-line outputs, made by the real loop."""
    from returns.result import Success

    from four import Action, Assistant, Observation, Usage, run, save_trajectory, scripted_invoke

    output = "".join(f"line {i} of some command output\n" for i in range(40))
    replies = [
        Assistant(f"step {i}\n```bash\necho {i}\n```", usage=Usage(1000, 50, 0.001))
        for i in range(steps)
    ]
    return run(
        scripted_invoke(replies),
        lambda reply: Success([Action(reply.content.split("\n")[2])]),
        lambda action: Success(
            Observation(f"<returncode>0</returncode>\n<output>\n{output}</output>", 0)
        ),
        save_trajectory(directory),
        "system",
        "task",
        max_steps=steps,
    )


LONG_STEPS = 200_000
"""A run of 400,002 messages (about 76 MB as sealed JSON): the issue's long run."""
SHOW_BUDGET = (10.0, 200.0)
"""`four show` of that run: at most 10 s and 200 MB."""


def huge_run(directory: Path, steps: int = LONG_STEPS) -> Path:
    """A run of ``steps`` short steps by the real loop (G and V2 functions, no script
    to record): two messages a step, each a few hundred bytes."""
    from returns.result import Success

    from four import Action, Assistant, Observation, Usage, run, save_trajectory

    made = [0]

    def G(history: object) -> Success[Assistant]:
        made[0] += 1
        text = f"step {made[0]}: list the files\n```bash\necho {made[0]}\n```"
        return Success(Assistant(text, usage=Usage(1000, 50, 0.001)))

    return run(
        G,
        lambda reply: Success([Action(reply.content.split("\n")[2])]),
        lambda action: Success(
            Observation(f"<returncode>0</returncode>\n<output>\nfile{made[0]}.txt\n</output>", 0)
        ),
        save_trajectory(directory),
        "system",
        "task",
        max_steps=steps,
    )


PEAK = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss)"
)


def wall_and_peak(argv: Sequence[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak resident MB of one fresh ``argv`` (measured by
    a parent of its own). CPU time moves less than wall time on a shared machine."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *argv], env=_env(), capture_output=True, text=True, check=True
    )
    wall, cpu, kb = done.stdout.split()
    return float(wall), float(cpu), int(kb) / 1024


def main() -> None:
    four = four_command()
    base_med, _, base_cpu = wall_ms([sys.executable, "-c", "pass"], 20)
    import_med, _, import_cpu = wall_ms([sys.executable, "-c", "import four"], 20)
    help_med, help_min, help_cpu = wall_ms([*four, "--help"], 20)
    heavy = imported_by_help()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = long_run(folder / "one", 200)
        for _ in range(100):
            long_run(folder / "many", 20)
        show_med, _, _ = wall_ms([*four, "show", str(path)], 5)
        view_med, _, _ = wall_ms([*four, "view", str(path), "-o", str(folder / "p.html")], 5)
        stats_med, _, _ = wall_ms([*four, "stats", str(folder / "many")], 5)
        page_kb = (folder / "p.html").stat().st_size / 1024
        huge = huge_run(folder / "huge")
        huge_mb = huge.stat().st_size / 2**20
        show_huge = wall_and_peak([*four, "show", str(huge)])
        show_stream = wall_and_peak([*four, "show", str(huge.with_suffix(".jsonl"))])
        view_huge = wall_and_peak([*four, "view", str(huge), "-o", str(folder / "huge.html")])
        traj_kb = path.stat().st_size / 1024
        check = json.loads(
            subprocess.run(
                [*four, "stats", "--json", str(folder / "many")],
                env=_env(),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
    print("| measure | value |\n|---|---|")
    shown = "four" if len(four) == 1 else "python -c 'from four.cli import main; ...'"
    print(f"| command timed | `{shown}` |")
    print(
        f"| `python -c pass`, for scale (median of 20) | {base_med:.0f} ms (CPU {base_cpu:.0f}) |"
    )
    print(
        f"| `python -c 'import four'`, the floor of any `four` command | {import_med:.0f} ms"
        f" (CPU {import_cpu:.0f}) |"
    )
    print(
        f"| `four --help` (median of 20) | {help_med:.0f} ms (min {help_min:.0f},"
        f" CPU {help_cpu:.0f}) |"
    )
    print(f"| heavy modules imported by `four --help` | {', '.join(sorted(heavy)) or 'none'} |")
    print(f"| `four show`, 200-step run ({traj_kb:.0f} KB), median of 5 | {show_med:.0f} ms |")
    print(f"| `four view`, same run, median of 5 ({page_kb:.0f} KB page) | {view_med:.0f} ms |")
    print(f"| `four stats`, {check['runs']} runs of 20 steps, median of 5 | {stats_med:.0f} ms |")
    for what, (took, cpu, peak) in (("sealed .json", show_huge), (".jsonl stream", show_stream)):
        # judged on CPU time: on a shared machine, wall time is also the other jobs' time
        within = "within" if cpu <= SHOW_BUDGET[0] and peak <= SHOW_BUDGET[1] else "OVER"
        print(
            f"| `four show`, {2 * LONG_STEPS + 2:,}-message run, {what} ({huge_mb:.0f} MB as "
            f".json) | CPU {cpu:.1f} s (wall {took:.1f} s), peak {peak:.0f} MB (CPU and "
            f"memory {within} 10 s, 200 MB) |"
        )
    took, cpu, peak = view_huge
    print(
        f"| `four view`, the same run, sealed .json (every step on the page) | CPU {cpu:.1f} s "
        f"(wall {took:.1f} s), peak {peak:.0f} MB |"
    )
    mini = os.environ.get("FOUR_BENCH_MINI")
    if mini:
        m_med, m_min, m_cpu, m_lite = mini_help_ms(mini, 20)
        print(
            f"| mini-swe-agent `mini --help` (median of 20) | {m_med:.0f} ms (min {m_min:.0f},"
            f" CPU {m_cpu:.0f}); litellm imported: {'yes' if m_lite else 'no'} |"
        )
    verdict = "within" if help_med <= HELP_BUDGET_MS and not heavy else "OVER"
    print(f"| `four --help` budget {HELP_BUDGET_MS:.0f} ms, no litellm | {verdict} |")


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    main()
