"""``four show TRAJ``: a run in the terminal, step by step, long outputs folded."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from four.cli import _terminal
from four.cli._errors import UsageError
from four.cli._figures import Figure, Notebook, mentioned, notebook_of
from four.cli._format import fold, seconds, succeeded, tokens, usage_line
from four.cli._steps import Run, Step, load_run, max_size
from four.cli._terminal import visible

SHOWN_STEPS = 100
"""A longer run shows its first and last 50 steps (``--all``: every one), so a run of
any length is shown in time and memory that follow what is printed."""


def main(args: argparse.Namespace) -> int:
    """Print the run in ``args.trajectory``; 0 when it was read, 2 when it was not."""

    limit = 0 if args.full else int(args.lines)
    only: int | None = args.step
    keep = None if args.all else SHOWN_STEPS // 2
    run = load_run(str(args.trajectory), keep=keep, pick=only, max_bytes=max_size(args))
    if only is not None and not 1 <= only <= run.total_steps:
        raise UsageError(f"step {only} does not exist: the run has {run.total_steps} steps")
    # soft wrap: the terminal wraps long lines, rich need not (5x faster on long runs)
    console = _terminal.console(highlight=False, soft_wrap=True)
    with console:  # one write at the end, not one per line
        show(console, run, limit=limit, step=only, system=bool(args.system))
    return 0


def show(
    console: Console, run: Run, *, limit: int = 16, step: int | None = None, system: bool = False
) -> None:
    """Write ``run`` to ``console``: a header, then each step (or only ``step``).

    >>> from four.cli._steps import read_run
    >>> from four.trajectory import Trajectory
    >>> from pathlib import Path
    >>> from four import User
    >>> show(Console(width=60), read_run(Trajectory((User("hi"),), None, "x", Path("x.json"))))
    ... # doctest: +ELLIPSIS
    x.json ...
    """

    notebook = notebook_of(run.trajectory)
    _header(console, run)
    if notebook is not None:
        _notebook(console, notebook)
    if system and run.system:
        _block(console, "system", run.system, limit, "magenta")
    if run.task and step is None:
        _block(console, "task", run.task, limit, "cyan")
    shown = 0
    figures = notebook.by_number() if notebook is not None else {}
    for s in run.steps:
        if step is None or s.number == step:
            if step is None and s.number > shown + 1:
                _gap(console, s.number - shown - 1)
            _step(console, s, limit, figures, "$ " if run.domain == "bash" else "» ")
            shown = s.number
    if step is None:
        output = run.trajectory.detail.output
        if output and output.strip():  # what the run submitted, as recorded
            _block(console, "submission", output, limit, "green")
        console.print()
        console.print(Text.assemble(("outcome ", "bold"), _outcome_text(run.outcome)))


def _gap(console: Console, hidden: int) -> None:
    console.print()
    console.print(
        Text(
            f"… {hidden} steps not shown (--step N shows one, --all every one) …",
            style="bold cyan",
        )
    )


def _header(console: Console, run: Run) -> None:
    t = run.trajectory
    formats, failed = run.format_error_steps, run.failed_steps
    rows: list[tuple[str, Text]] = [("outcome", _outcome_text(run.outcome))]
    if run.model:
        rows.append(("model", Text(visible(run.model))))
    rows.append(
        (
            "steps",
            Text(f"{run.total_steps} · {failed} with a failing command · {formats} format errors"),
        )
    )
    rows.append(("usage", Text(usage_line(run.usage))))
    if run.wall_time is not None:
        rows.append(("time", Text(seconds(run.wall_time))))
    verdicts = t.stats.verdicts
    if verdicts is not None:
        said = [e.verdict for e in verdicts.log]
        at_end = verdicts.judged_at_end  # the last judgement, not a submission
        said_at = f", the last judged at the end: {at_end}" if isinstance(at_end, str) else ""
        receipts = f"(receipts: four audit {t.path.name})"
        rows.append(("verdicts", Text(f"{' → '.join(said) or 'none'}{said_at} {receipts}")))
    console.print(
        Text(visible(str(t.path)), style="bold underline"),
        Text(visible(f"  ({t.format})"), style="dim"),
    )
    for name, value in rows:
        console.print(Text(f"{name:<9}", style="bold") + value)


def _outcome_text(outcome: str) -> Text:

    style = "bold green" if succeeded(outcome) else "bold red"
    return Text(visible(outcome), style=style)


def _block(console: Console, title: str, body: str, limit: int, style: str) -> None:

    console.print()
    console.print(Text(f"── {title}", style=f"bold {style}"))
    _folded(console, body, limit, "")


def _notebook(console: Console, notebook: Notebook) -> None:
    """The notebook row: where it is, its cells, and each figure it keeps."""
    if notebook.problem:
        line = Text(f"{notebook.path.name} {notebook.problem}", style="red")
    else:
        kept = ", ".join(f"figure {f.number} (cell {f.cell})" for f in notebook.figures)
        line = Text(
            f"{notebook.path.name} · {notebook.cells} cells · "
            f"{len(notebook.figures)} figures{': ' + kept if kept else ''}"
        )
    console.print(Text(f"{'notebook':<9}", style="bold") + line)


def _step(
    console: Console,
    step: Step,
    limit: int,
    figures: Mapping[int, Figure] | None = None,
    prompt: str = "$ ",
) -> None:

    usage = step.reply.usage
    facts = [f"step {step.number}"]
    if step.duration is not None and step.model_time is not None:
        facts.append(f"{seconds(step.duration)} (model {seconds(step.model_time)})")
    if usage is not None:
        facts.append(f"{tokens(usage.total_tokens)} tok")
        if usage.cost:
            facts.append(f"${usage.cost:.4f}")
    if step.reply.truncated:
        facts.append("cut off")
    if step.submitted:
        facts.append("submitted")
    console.print()
    console.print(Rule(Text(" · ".join(facts)), align="left", style="blue"))
    if step.reply.reasoning:
        _folded(console, step.reply.reasoning, limit, "dim italic")
    if step.reply.content.strip():
        _folded(console, step.reply.content, limit, "")
    if step.format_error and not step.commands:  # nothing ran: the error is the answer
        console.print(Text(visible(f"format error: {step.format_error}"), style="bold magenta"))
        return
    for index, observation in enumerate(step.observations):
        command = step.actions[index] if index < len(step.actions) else None
        if command is not None:  # as the loop ran it
            first, _, rest = visible(command).partition("\n")
            console.print(Text(prompt, style="bold yellow") + Text(first, style="bold"))
            if rest:
                _folded(console, rest, limit, "bold")
        code = step.returncodes[index] if index < len(step.returncodes) else None
        took = step.time_of(index)
        status = "" if code is None else f" · exit {code}"
        status += "" if took is None else f" · {seconds(took)}"
        style = "red" if code not in (None, 0) else "green"
        console.print(Text(f"{step.label(index)}{status}", style=style))
        _folded(console, observation.content, limit, "")
        for number in mentioned(observation.content):
            figure = (figures or {}).get(number)
            if figure is not None:
                console.print(
                    Text(f"  figure {number}: in the notebook, cell {figure.cell}", style="cyan")
                )


def _folded(console: Console, text: str, limit: int, style: str) -> None:

    shown, hidden = fold(visible(text), limit)
    body = Text("\n".join(f"  {line}" for line in shown.splitlines()), style=style)
    if hidden:
        body.highlight_regex(r"… \d+ more lines …", "bold cyan")
    console.print(body)
