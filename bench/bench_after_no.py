"""What a NO buys: the rest of an attempt after its first NO, drawn again and again.

A search turns a NO into a YES only if the model, told NO, can write work the check
accepts. This bench measures that chance on the tasks bench's own runs. For each task
of a ``bench_tasks.py --keep`` folder it takes the first attempt whose submission was
checked and not accepted, rebuilds the task's folder as it was then (the attempt's
commands before the NO, run again in a fresh copy; a task whose replay does not fail the
check again is skipped), and goes on from the NO ``--draws`` times: the attempt's
history up to and with the NO's feedback resumed, at the temperature and with the
wrappers of a search's later attempts (``DEFAULT_TEMPERATURE``, seeds 1..N, the reply
grammar, the cycle breaker), for the steps the attempt had left, with the same check
and feedback (each reason told once: the NO's own is told again once, as
``--retries-per-reason 2`` allows; a new one once, not twice; as in any resumed run, a
NO shows each named file as it is, not against the task's start). Each draw ends in one
of three ways:

- accepted: the check said YES;
- the same work: the folder ends as it was at the NO (the file rewritten as it was, or
  not touched), so the check's NO was not used;
- other work: the folder changed, and the check did not accept it.

    python bench/bench_after_no.py --keep DIR [--draws 8] [--tasks id,id] [--out DIR]

``DIR`` is a folder ``bench_tasks.py --keep`` wrote (``--runners check``). The model:
``$FOUR_BENCH_MODEL`` (default the registry's default), on the tasks bench's server
settings, ``LANES`` draws at once.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]  # run as a file: the bench package
from bench.bench_tasks import (  # noqa: E402
    COMMAND_TIMEOUT,
    LANES,
    RUN_SECONDS,
    STEPS,
    TASKS,
    Task,
    cycle_breaking_invoke,
    local_g,
    make_workspace,
    solved,
)

if TYPE_CHECKING:
    from four._types import Message

DRAWS = 8

Ending = Literal["accepted", "the same work", "other work"]


@dataclass(frozen=True, slots=True)
class AtNo:
    """A task's first NO: the attempt's messages up to and with the NO's feedback, and the
    steps the attempt had left."""

    task: Task
    messages: tuple[Message, ...]
    left: int


def first_no(task: Task, keep: Path, steps: int) -> AtNo | None:
    """The first attempt (in the order they ran) of ``task`` in ``keep`` that was told NO."""
    from four._types import Assistant, User
    from four.trajectory import load_trajectory

    for path in sorted(keep.glob(f"{task.id}-*-out/*.jsonl")):
        messages = load_trajectory(path).messages
        at = next(
            (i for i, m in enumerate(messages) if isinstance(m, User) and m.kind == "feedback"),
            None,
        )
        if at is None:
            continue
        made = sum(1 for m in messages[: at + 1] if isinstance(m, Assistant))
        if made < steps:
            return AtNo(task, tuple(messages[: at + 1]), steps - made)
    return None


def replayed(at: AtNo, parent: Path) -> Path | None:
    """A fresh folder of the task with the attempt's commands before its NO run again in
    it, through the bench's environment; None when the check accepts it (no NO to start
    from: a command whose result was not the same again)."""
    from four._types import Action, Assistant
    from four.domains._bash import environment as make_env
    from four.parse import regex_parse

    folder = make_workspace(at.task, parent)
    env = make_env("local", cwd=str(folder), timeout=COMMAND_TIMEOUT)
    V1 = regex_parse()
    for message in at.messages:
        if isinstance(message, Assistant):  # a submission parses to no action
            for action in V1(message).value_or(()):
                if isinstance(action, Action):
                    env(action)
    return None if solved(at.task, folder) else folder


def draw(at: AtNo, start: Path, seed: int, out: Path) -> Ending:
    """The rest of the attempt from its NO, once, in a copy of ``start``."""
    from four import run
    from four.checks import command_check, verify
    from four.cli._build import Deadline
    from four.cli._options import VISIBLE_FEEDBACK
    from four.domains._bash import environment as make_env
    from four.parse import regex_parse
    from four.search._attempt import SamplingArgs
    from four.search._search import DEFAULT_TEMPERATURE
    from four.trajectory import save_trajectory
    from four.trajectory._artifacts import _digests

    folder = Path(tempfile.mkdtemp(prefix=f"{at.task.id}-{seed}-", dir=start.parent))
    shutil.copytree(start, folder, dirs_exist_ok=True)
    check = verify(
        command_check(at.task.check, timeout=60, feedback=VISIBLE_FEEDBACK),  # type: ignore[arg-type]
        retries_per_reason=1,
    )
    V1 = regex_parse()
    sampling = SamplingArgs(temperature=DEFAULT_TEMPERATURE, seed=seed)
    run(
        cycle_breaking_invoke(local_g(sampling, V1.grammar())),
        V1,
        make_env("local", cwd=str(folder), timeout=COMMAND_TIMEOUT),
        save_trajectory(out),
        max_steps=at.left,
        resume=at.messages,
        check=check,
        watch=Deadline(RUN_SECONDS),
    )
    if solved(at.task, folder):
        return "accepted"
    return "the same work" if _digests(folder) == _digests(start) else "other work"


def table(rows: Sequence[tuple[AtNo, list[Ending]]], skipped: Sequence[str], steps: int) -> str:
    lines = [
        "| task | NO at step | steps left | draws | accepted | the same work | other work |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for at, endings in rows:
        step = steps - at.left
        counts = [endings.count(e) for e in ("accepted", "the same work", "other work")]
        lines.append(
            f"| {at.task.id} | {step} | {at.left} | {len(endings)} | "
            + " | ".join(map(str, counts))
            + " |"
        )
    total = [e for _, es in rows for e in es]
    lines.append(
        f"| all | | | {len(total)} | {total.count('accepted')} | "
        f"{total.count('the same work')} | {total.count('other work')} |"
    )
    if skipped:
        lines.append(f"\nSkipped: {', '.join(skipped)}.")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, required=True, help="a bench_tasks.py --keep folder")
    parser.add_argument("--draws", type=int, default=DRAWS, help=f"draws a task (default {DRAWS})")
    parser.add_argument("--tasks", help="comma-separated task ids (default: all it holds)")
    parser.add_argument("--out", type=Path, help="keep the draws' trajectories here")
    parser.add_argument(
        "--steps", type=int, default=STEPS, help=f"the attempts' steps (default {STEPS})"
    )
    args = parser.parse_args(argv)
    if args.draws < 1:
        parser.error("--draws must be at least 1")
    if not args.keep.is_dir():
        parser.error(f"--keep {args.keep}: no such folder")
    wanted = set(args.tasks.split(",")) if args.tasks else None
    parent = Path(tempfile.mkdtemp(prefix="four-bench-after-no-"))
    rows: list[tuple[AtNo, list[Ending]]] = []
    skipped: list[str] = []
    try:
        starts: list[tuple[AtNo, Path]] = []
        for task in TASKS:
            if (wanted is not None and task.id not in wanted) or not any(
                args.keep.glob(f"{task.id}-*-out")
            ):
                continue
            at = first_no(task, args.keep, args.steps)
            start = None if at is None else replayed(at, parent)
            if at is None or start is None:
                why = "no NO with steps left" if at is None else "its replay passes the check"
                skipped.append(f"{task.id} ({why})")
                continue
            starts.append((at, start))
        jobs = [(at, start, seed) for at, start in starts for seed in range(1, args.draws + 1)]
        out = args.out or parent / "runs"
        with ThreadPoolExecutor(LANES) as pool:
            endings = list(pool.map(lambda job: draw(job[0], job[1], job[2], out), jobs))
        for i, (at, _) in enumerate(starts):
            rows.append((at, endings[i * args.draws : (i + 1) * args.draws]))
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    print(table(rows, skipped, args.steps))
    print(
        f"\nDraws a task from its first NO: {args.draws}, at the later attempts' "
        f"temperature; {args.steps} steps an attempt."
    )


if __name__ == "__main__":
    main(sys.argv[1:])
