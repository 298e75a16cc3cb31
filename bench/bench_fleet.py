"""Benchmark ``four fleet DIR``: one page over 10,000 runs, against reading every run whole.

Makes one real run (the loop, a scripted model, real bash: 10 steps, about 12 KB sealed)
and lays out N copies of it (hard links, so the disk holds one) the way a batch writes
them: ``runs/<id>/<stem>.json`` and ``.jsonl``, and 1% of the runs as unsealed streams
(a killed run's). Two folders: a batch folder whose ``manifest.jsonl`` lists the
sealed runs, and the same runs with no manifest (each sealed document's head is read).
Each is read by ``four.observe.fleet`` and, for the ratio, by reading every trajectory
whole (``load_trajectory``, what ``four stats`` does), in one process, warm page cache;
wall and CPU time of the reading alone, best of 3.

    python bench/bench_fleet.py [N]        # default: 10000
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())


def template(folder: Path) -> Path:
    """One real, sealed 10-step run."""
    from four import local_env, regex_parse, run, save_trajectory, scripted_invoke

    replies = [f"```bash\necho step {i}; ls /\n```" for i in range(9)]
    replies.append("```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```")
    return run(scripted_invoke(replies), regex_parse(), local_env(cwd=str(folder)),
               save_trajectory(folder), prompt="list / ten times", max_steps=10)  # fmt: skip


def lay_out(folder: Path, sealed: Path, n: int, manifest: bool) -> None:
    stream = sealed.with_suffix(".jsonl")
    killed = folder.parent / f"killed-{folder.name}.jsonl"  # the stream without its end record
    killed.write_text("".join(stream.read_text().splitlines(keepends=True)[:-1]))
    lines = []
    for i in range(n):
        run = folder / "runs" / f"t{i:05d}"
        run.mkdir(parents=True)
        stem = f"20260101T000000Z-{i:012x}"
        if i % 100 == 99:
            os.link(killed, run / f"{stem}.jsonl")
            continue
        os.link(stream, run / f"{stem}.jsonl")
        os.link(sealed, run / f"{stem}.json")
        lines.append(json.dumps({"id": f"t{i:05d}", "outcome": "exit:task_complete",
                                 "trajectory": str(run / f"{stem}.json"), "tokens": 0,
                                 "cost": 0.0}))  # fmt: skip
    if manifest:
        (folder / "manifest.jsonl").write_text("\n".join(lines) + "\n")


def timed(fn: object) -> tuple[float, float]:
    best = (float("inf"), float("inf"))
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    return best


def read_all(folder: Path) -> None:
    from four.cli._stats import trajectory_files
    from four.trajectory._load import TrajectoryError, load_trajectory

    for path in trajectory_files([folder]):
        with contextlib.suppress(TrajectoryError):  # the manifest: four stats skips it too
            load_trajectory(path)


def main(n: int = 10_000) -> None:
    sys.path[:0] = [str(ROOT / "src"), str(ROOT)]
    from four.observe._fleet import fleet

    scratch = Path(tempfile.mkdtemp(prefix="four-fleet-", dir=SCRATCH))
    try:
        sealed = template(scratch)
        size = sealed.stat().st_size // 1024
        print(f"{n:,} runs of 10 steps ({size} KB sealed each), 1% unsealed\n")
        print("| folder | fleet wall s | fleet CPU s | read whole, wall s | ratio |")
        print("|---|---:|---:|---:|---:|")
        for manifest in (True, False):
            folder = scratch / ("batch" if manifest else "plain")
            lay_out(folder, sealed, n, manifest)
            (status,) = fleet([folder], stall_after=0)
            assert status.runs == n and status.stalled == n // 100, status
            wall, cpu = timed(lambda folder=folder: fleet([folder], stall_after=0))
            whole, _ = timed(lambda folder=folder: read_all(folder))
            name = "with manifest.jsonl" if manifest else "no manifest"
            print(f"| {name} | {wall:.2f} | {cpu:.2f} | {whole:.2f} | {whole / wall:.0f}x |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
