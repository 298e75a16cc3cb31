"""An observer spoke: V2 reads a folder of trajectories, emit writes a report of metrics
and a failure taxonomy. It uses only the public extension API (and ``load_trajectory``),
and it is a spoke by the contract of ``four spoke new`` (``KIND``, ``make``, ``DRY_RUN``,
``EXPECT``), so the same acceptance checks it.

The agent asks questions as one-line commands in ```bash blocks; they are answered from
the files, never by running a shell:

    summary              runs, outcomes, steps, cost, format errors
    failures             the failure taxonomy, with the runs in each class
    runs [PREFIX]        the runs (whose outcome starts with PREFIX)
    show RUN             one run's steps, briefly

The report's figures come from the files, not from the model; the agent's final
submission is added as its analysis.

>>> import tempfile
>>> env = observe_env(tempfile.mkdtemp())
>>> print(env(Action("summary")).unwrap().content.splitlines()[0])
0 runs in the folder.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure, Result, Success

from four import Finished, Outcome, load_trajectory
from four.types import (
    EXIT_SIGNAL,
    Action,
    Assistant,
    Emit,
    Execute,
    ExecutionError,
    Message,
    Observation,
    Submitted,
    User,
)

KIND = "V2"
DRY_RUN = ["```bash\nsummary\n```", "```bash\nfailures\n```", EXIT_SIGNAL]
EXPECT = "exit:task_complete"

TAXONOMY: dict[str, tuple[str, ...]] = {
    "model": ("model_error",),
    "format": ("repeated_format_error",),
    "budget": ("max_steps_reached", "cost_limit_reached", "time_limit_reached"),
    "environment": ("execution_error", "crashed"),
    "verification": ("held", "blocked"),
    "stopped": ("interrupted", "stalled", "stopped"),
}
"""Failure classes, by the outcome's tag; a run that repeats a command is also
``repetition``, whatever its outcome."""

_REPEATS = 3  # the same command this many times in a row is step repetition


@dataclass(frozen=True, slots=True)
class Run:
    """What the observer knows of one trajectory."""

    name: str
    outcome: str
    steps: int
    cost: float
    format_errors: int
    commands: tuple[str, ...]

    @property
    def failed(self) -> bool:
        return self.outcome not in ("exit:task_complete", "accepted")

    @property
    def classes(self) -> tuple[str, ...]:
        found = [c for c, tags in TAXONOMY.items() if self.outcome.startswith(tags)]
        if self.failed and not found:
            found.append("other")
        if _repeats(self.commands) >= _REPEATS:
            found.append("repetition")
        return tuple(found)


def _repeats(commands: Sequence[str]) -> int:
    best = run = 0
    for index, command in enumerate(commands):
        run = run + 1 if index and command == commands[index - 1] else 1
        best = max(best, run)
    return best


def read_runs(folder: Path) -> list[Run]:
    """Every readable sealed trajectory (``*.json``) under ``folder``, by name."""
    runs: list[Run] = []
    for path in sorted(folder.rglob("*.json")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue  # caches and tools' folders
        try:
            saved = load_trajectory(path)
        except ValueError:
            continue  # not a trajectory (a manifest, a report): not ours to judge
        stats = saved.stats
        runs.append(
            Run(
                path.stem,
                saved.outcome or "unfinished",
                stats.steps or _turns(saved.messages),
                stats.usage.cost or 0.0,
                stats.format_errors,
                tuple(_commands(saved.messages)),
            )
        )
    return runs


def _turns(messages: Sequence[Message]) -> int:
    return sum(isinstance(m, Assistant) for m in messages)


def _commands(messages: Sequence[Message]) -> list[str]:
    """The first line of each fenced block of each model turn (good enough to see loops)."""
    found: list[str] = []
    for message in messages:
        if isinstance(message, Assistant):
            parts = message.content.split("```")
            found.extend(p.split("\n", 2)[1].strip() for p in parts[1::2] if "\n" in p)
    return found


def summary(runs: Sequence[Run]) -> str:
    if not runs:
        return "0 runs in the folder."
    outcomes = Counter(r.outcome.split(":")[0] for r in runs)
    steps = [r.steps for r in runs]
    lines = [
        f"{len(runs)} runs in the folder; {sum(not r.failed for r in runs)} succeeded.",
        "outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()),
        f"steps: mean {statistics.fmean(steps):.1f}, median {statistics.median(steps):g}, "
        f"max {max(steps)}",
        f"cost: {sum(r.cost for r in runs):.4f} USD in all",
        f"format errors: {sum(r.format_errors for r in runs)} in all",
    ]
    return "\n".join(lines)


def failures(runs: Sequence[Run]) -> str:
    classes: dict[str, list[str]] = {}
    for run in runs:
        for name in run.classes:
            classes.setdefault(name, []).append(run.name)
    if not classes:
        return "No failures."
    return "\n".join(
        f"{name}: {len(names)} ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''})"
        for name, names in sorted(classes.items(), key=lambda item: -len(item[1]))
    )


@dataclass(frozen=True, slots=True)
class ObserveEnv:
    """V2 over a folder of trajectories; see the module docstring."""

    folder: Path

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        words = action.command.strip().split()
        if words and words[0] == EXIT_SIGNAL:
            return Failure(Submitted(action.command.strip()[len(EXIT_SIGNAL) :].strip()))
        if not self.folder.is_dir():
            return Failure(ExecutionError(f"{self.folder} is not a folder"))
        runs = read_runs(self.folder)
        if words == ["summary"]:
            return Success(Observation(summary(runs), 0))
        if words == ["failures"]:
            return Success(Observation(failures(runs), 0))
        if words[:1] == ["runs"] and len(words) <= 2:
            prefix = words[1] if len(words) == 2 else ""
            shown = [
                f"{r.name}  {r.outcome}  {r.steps} steps"
                for r in runs
                if r.outcome.startswith(prefix)
            ]
            return Success(Observation("\n".join(shown) or "No such runs.", 0))
        if words[:1] == ["show"] and len(words) == 2:
            match = [r for r in runs if r.name == words[1]]
            if match:
                run = match[0]
                steps = "\n".join(f"  {i}. {c}" for i, c in enumerate(run.commands, 1))
                return Success(Observation(f"{run.name}: {run.outcome}\n{steps}", 0))
        known = "summary | failures | runs [PREFIX] | show RUN"
        return Success(Observation(f"Unknown question {action.command.strip()!r}: ask {known}.", 2))


def observe_env(folder: str | Path) -> ObserveEnv:
    """V2 that answers questions about the trajectories under ``folder``.

    >>> import tempfile
    >>> observe_env(tempfile.mkdtemp())(Action("tell me")).unwrap().returncode
    2
    """
    return ObserveEnv(Path(folder))


@dataclass(frozen=True, slots=True)
class Report:
    """emit: ``output`` gets a Markdown report of the runs under ``folder``."""

    folder: Path
    output: Path

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> Path:
        runs = read_runs(self.folder)
        analysis = outcome.output if isinstance(outcome, Finished) else ""
        asked = [m.content for m in messages if isinstance(m, User) and m.kind == "task"]
        text = (
            f"# Runs under {self.folder.name}\n\n"
            + (f"Asked: {asked[0]}\n\n" if asked else "")
            + f"## Metrics\n\n{summary(runs)}\n\n## Failure taxonomy\n\n{failures(runs)}\n"
            + (f"\n## Analysis\n\n{analysis}\n" if analysis else "")
        )
        self.output.parent.mkdir(parents=True, exist_ok=True)
        self.output.write_text(text, "utf-8")
        return self.output


def report_emit(folder: str | Path, output: str | Path = "report.md") -> Emit[Path]:
    """emit that writes the metrics and failure taxonomy of ``folder`` to ``output``.

    >>> report_emit("runs", "report.md").output.name
    'report.md'
    """
    return Report(Path(folder), Path(output))


def make() -> Execute:
    """The spoke's component: the observer over the working folder."""
    return observe_env(".")
