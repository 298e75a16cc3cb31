"""``four view TRAJ -o page.html``: a run as one self-contained HTML page.

Everything from the trajectory is escaped (it is model and command output); the
page's Content-Security-Policy lets only its own style sheet and script run and
fetches nothing, so it can be opened offline, attached to an issue or archived.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from html import escape
from pathlib import Path
from typing import IO

import msgspec

from four._types import JSON
from four.cli._errors import UsageError
from four.cli._figures import Figure, Notebook, mentioned, notebook_of
from four.cli._format import cost, seconds, succeeded, tokens
from four.cli._html import CSS, POLICY, SCRIPT
from four.cli._steps import Run, Step, load_run, max_size
from four.cli._terminal import visible
from four.trajectory._record import Verdicts

OPEN_LINES = 20
"""Outputs up to this many lines are shown open; longer ones are folded."""
OPEN_CHARS = 2500


def main(args: argparse.Namespace) -> int:
    """Write the page for ``args.trajectory`` and print its path."""
    source = Path(str(args.trajectory))
    target = Path(str(args.output)) if args.output else _default_target(source)
    _writable(target)
    write_page(source, target, max_size(args))
    print(target)
    return 0


def write_page(source: Path, target: Path, max_bytes: int) -> None:
    """The page of the run in ``source``, written to ``target`` a step at a time: each
    step's HTML goes to a temporary file as it is read (memory follows the largest step,
    not the run), then the page is put together around it."""
    try:
        with (
            tempfile.TemporaryFile("w+", encoding="utf-8", newline="", dir=target.parent) as steps,
            tempfile.TemporaryFile("w+", encoding="utf-8", newline="", dir=target.parent) as links,
        ):

            def each(step: Step) -> None:
                steps.write(_step(step, None) + "\n")
                links.write(_link(step))

            run = load_run(source, each=each, max_bytes=max_bytes)
            notebook = notebook_of(run.trajectory)
            figures = notebook.by_number() if notebook is not None else {}
            steps.seek(0)
            links.seek(0)
            chunks = iter(lambda: links.read(1 << 20), "")  # the timeline, a MiB at a time
            write_whole(target, _page(run, notebook, chunks, _placed(steps, figures)))
    except OSError as exc:  # the temporary files: the folder is full, or went
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None


def _placed(steps: IO[str], figures: Mapping[int, Figure]) -> Iterator[str]:
    """The steps' HTML with each figure where its placeholder is (see ``_step``)."""
    for line in steps:
        if line.startswith(_FIGURE):  # ours: a trajectory's text is escaped, so has no "<"
            number = int(line[len(_FIGURE) :].partition("-->")[0])
            yield _figure(figures[number]) + "\n" if number in figures else ""
        else:
            yield line


_FIGURE = "<!--figure "


def _writable(target: Path) -> None:
    """``target`` can be written, in a folder that exists: none is created, so a
    mistyped path is an error, not a new tree."""
    if not target.parent.is_dir():
        what = "is not a folder" if target.parent.exists() else "does not exist"
        raise UsageError(f"cannot write {target}: the folder {target.parent} {what}")
    if target.is_dir():
        raise UsageError(f"cannot write {target}: it is a folder")


def write_whole(target: Path, chunks: Iterable[str]) -> None:
    """Write ``target`` whole or not at all (a temporary beside it, then a rename), in a
    folder that exists. Control characters are shown as escapes, as in the terminal."""
    _writable(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as out:
            for chunk in chunks:
                out.write(visible(chunk))
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None


def _default_target(source: Path) -> Path:
    name = source.name
    for suffix in (".traj.json", ".jsonl", ".json"):
        if name.endswith(suffix):
            return source.with_name(name[: -len(suffix)] + ".html")
    return source.with_name(name + ".html")


def render_page(run: Run) -> str:
    """The whole page as one string, of a run read whole (``write_page`` streams it).

    >>> from four.cli._steps import read_run
    >>> from four.trajectory import Trajectory
    >>> from four import User
    >>> page = render_page(read_run(Trajectory((User("<hi>"),), None, "x", Path("x.json"))))
    >>> "&lt;hi&gt;" in page and "<hi>" not in page
    True
    """
    notebook = notebook_of(run.trajectory)
    figures = notebook.by_number() if notebook is not None else {}
    steps = (_step(step, figures) + "\n" for step in run.steps)
    page = "".join(_page(run, notebook, (_link(step) for step in run.steps), steps))
    return visible(page)


def _page(
    run: Run, notebook: Notebook | None, links: Iterable[str], steps: Iterable[str]
) -> Iterator[str]:
    """The page's pieces around the steps' timeline ``links`` and HTML ``steps`` (each
    step's ending in a newline), a line each."""
    t = run.trajectory
    title = f"four · {run.outcome} · {t.path.name}"
    head = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(POLICY, quote=False)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f"<h1>{escape(t.path.name)}</h1>",
        f'<div class="dim">{escape(str(t.path))} · {escape(t.format)}</div>',
        _facts(run),
    ]
    yield "\n".join(head) + '\n<nav class="timeline" aria-label="steps">'
    yield from links
    parts = [
        "</nav>",
        '<div class="toolbar"><button type="button" id="expand">Expand all</button>'
        '<button type="button" id="collapse">Collapse all</button>'
        '<button type="button" id="failing" aria-pressed="false">Only failing steps</button>'
        '<span class="dim">keys: j / k move between steps</span></div>',
    ]
    if run.system:
        parts.append(_fold("System prompt", run.system, open_=False))
    if run.task:
        parts.append(_fold("Task", run.task, open_=True))
    if notebook is not None:
        parts.append(_notebook(notebook))
    parts.append(f'<h2 id="steps">Steps ({run.total_steps})</h2>')
    yield "\n".join(parts) + "\n"
    yield from steps
    parts = [_ending(run)]
    if t.stats.verdicts is not None:
        parts.append(_verdicts(run, t.stats.verdicts))
    record = msgspec.to_builtins({"info": t.info, "stats": t.stats})
    parts.append(_fold("Run record (info and stats)", _pretty(record)))
    parts.append(f"</main><script>{SCRIPT}</script></body></html>\n")
    yield "\n".join(parts)


def _facts(run: Run) -> str:
    t, usage = run.trajectory, run.usage
    kind = "ok" if succeeded(run.outcome) else "bad"
    rows: list[tuple[str, str]] = [
        ("outcome", f'<span class="badge {kind}" id="outcome">{escape(run.outcome)}</span>')
    ]
    if run.model:
        rows.append(("model", escape(run.model)))
    failing, formats = run.failed_steps, run.format_error_steps
    rows.append(
        ("steps", f"{run.total_steps} · {failing} with a failing command · {formats} format errors")
    )
    rows.append(
        (
            "usage",
            f"{tokens(usage.prompt_tokens)} prompt + {tokens(usage.completion_tokens)} completion"
            f" tokens · {usage.calls} calls",
        )
    )
    rows.append(("cost", escape(cost(usage))))
    if run.wall_time is not None:
        rows.append(("wall time", escape(seconds(run.wall_time))))
    started = t.info.started_at
    if started is not None and started > 0:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
        rows.append(("started", stamp))
    body = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="facts">{body}</table>'


def _kind(step: Step) -> str:
    if step.format_error:
        return "fmt"
    if step.failed:
        return "bad"
    if step.submitted:
        return "sub"
    if not step.commands:
        return "none"
    return "ok"


def _link(step: Step) -> str:
    """A step's link in the timeline."""
    tip = f"step {step.number}: " + (step.format_error or "; ".join(step.commands) or "no command")
    grow = ""
    if step.duration is not None:
        grow = f' data-seconds="{step.duration:.3f}"'
    return (
        f'<a href="#step-{step.number}" class="{_kind(step)}" title="{escape(tip[:300])}"'
        f"{grow}>{step.number}</a>"
    )


def _notebook(notebook: Notebook) -> str:
    name = escape(notebook.path.name)
    if notebook.problem:
        return f'<p><span class="badge bad">notebook</span> {name} {escape(notebook.problem)}</p>'
    return (
        f'<p><span class="badge ok">notebook</span> {name} · {notebook.cells} cells · '
        f"{len(notebook.figures)} figures, shown where they were made</p>"
    )


def _figure(figure: Figure) -> str:
    """A figure inline: a ``data:`` PNG (the page's policy allows images of that kind only)."""
    png = escape(figure.png, quote=True)
    caption = f"figure {figure.number} · notebook cell {figure.cell}"
    return (
        f'<figure class="nb" id="figure-{figure.number}"><img alt="{caption}" '
        f'src="data:image/png;base64,{png}"><figcaption>{caption}</figcaption></figure>'
    )


def _step(step: Step, figures: Mapping[int, Figure] | None) -> str:
    """A step's HTML; with ``figures`` None (not known yet), a placeholder line for each
    figure its outputs mention (``_placed`` puts the figure there)."""
    reply = step.reply
    facts = []
    if step.duration is not None:
        facts.append(seconds(step.duration))
    if reply.usage is not None:
        facts.append(f"{tokens(reply.usage.total_tokens)} tokens")
        facts.append(cost(reply.usage))
    if reply.truncated:
        facts.append("cut off at the token limit")
    if step.submitted:
        facts.append("submitted")
    parts = [
        f'<section class="step {_kind(step)}" id="step-{step.number}" data-step="{step.number}">',
        f'<header><a href="#step-{step.number}">Step {step.number}</a>'
        f'<span class="dim">{escape(" · ".join(facts))}</span></header>',
    ]
    if reply.reasoning:
        parts.append(_fold("reasoning", reply.reasoning, open_=False))
    if reply.content.strip():
        parts.append(_fold("reply", reply.content, open_=None))
    parts.extend(f'<pre class="cmd">$ {escape(command)}</pre>' for command in step.commands)
    if step.format_error:
        parts.append(
            f'<div><span class="badge fmt">format error</span> {escape(step.format_error)}</div>'
        )
    for index, observation in enumerate(step.observations):
        code = step.returncodes[index] if index < len(step.returncodes) else None
        label = step.label(index)
        if code is not None:
            css = "code-ok" if code == 0 else "code-bad"
            label += f' · <span class="{css}">exit {code}</span>'
        parts.append(_fold(label, observation.content, open_=None, escaped_label=True))
        numbers = mentioned(observation.content)
        if figures is None:
            parts.extend(f"{_FIGURE}{n}-->" for n in numbers)
        else:
            parts.extend(_figure(figures[n]) for n in numbers if n in figures)
    parts.append("</section>")
    return "\n".join(parts)


def _fold(label: str, text: str, open_: bool | None = None, *, escaped_label: bool = False) -> str:
    """A ``<details>`` holding ``text``; ``open_`` None opens it when it is short."""
    lines = text.count("\n") + 1
    if open_ is None:
        open_ = lines <= OPEN_LINES and len(text) <= OPEN_CHARS
    head = label if escaped_label else escape(label)
    size = f"{lines} lines" if lines != 1 else f"{len(text)} chars"
    return (
        f"<details{' open' if open_ else ''}><summary><b>{head}</b> · {size}</summary>"
        f"<pre>{escape(text)}</pre></details>"
    )


def _ending(run: Run) -> str:
    t = run.trajectory
    parts = ['<h2 id="outcome-detail">Outcome</h2>']
    kind = "ok" if succeeded(run.outcome) else "bad"
    parts.append(f'<p><span class="badge {kind}">{escape(run.outcome)}</span></p>')
    detail: dict[str, JSON] = msgspec.to_builtins(t.detail)
    output = t.detail.output or t.info.submission
    if output:
        parts.append(_fold("submission", output, open_=True))
    if detail:
        parts.append(_fold("outcome detail", _pretty(detail), open_=False))
    return "\n".join(parts)


def _verdicts(run: Run, verdicts: Verdicts) -> str:
    """The verified loop's record: the audit, the verdict log, the receipts, the config."""
    parts = ['<h2 id="verdicts">Verdicts and receipts</h2>', _audit(run)]
    facts = [
        ("evaluations", verdicts.evaluations),
        ("initial_rank", verdicts.initial_rank),
        ("head", verdicts.head),
    ]
    body = "".join(
        f"<tr><td>{escape(k)}</td><td>{escape(str(v))}</td></tr>" for k, v in facts if v is not None
    )
    parts.append(f'<table class="facts">{body}</table>')
    if verdicts.log:
        log: list[JSON] = msgspec.to_builtins(verdicts.log)
        parts.append(f"<h3>verdict log · {len(log)}</h3>")
        parts.append(_records(log, "verdict-log"))
    receipts = verdicts.receipts.get("receipts")
    if isinstance(receipts, list):
        parts.append(f"<h3>receipts · {len(receipts)}</h3>")
        parts.append(_records(receipts, "receipts", _RECEIPT_KEYS))
        parts.append(_fold("receipts as stored", _pretty(receipts), open_=False))
    elif verdicts.receipts:
        parts.append(_fold("receipts as stored", _pretty(verdicts.receipts), open_=False))
    rest = {"config": verdicts.config, "slots": verdicts.slots}
    if verdicts.judged_at_end is not None:
        rest["judged_at_end"] = verdicts.judged_at_end
    parts.append(_fold("verdict record", _pretty(rest), open_=False))
    return "\n".join(parts)


_RECEIPT_KEYS = ("index", "type", "verdict", "payload", "action", "event", "digest")
_VERDICT_NAMES = {0: "NO", 1: "YES", 2: "MAYBE", 3: "IFF"}  # four.quaternary.Verdict


def _audit(run: Run) -> str:
    """Replay the receipts now, so the page says whether they hold."""
    from four.checks import audit

    try:
        result = audit(run.trajectory)
    except Exception as exc:  # a page is still worth writing when the record is broken
        return f'<p><span class="badge bad">audit failed</span> {escape(str(exc))}</p>'
    if result.valid:
        return (
            f'<p><span class="badge ok" id="audit">audit: valid</span> {result.evaluations}'
            f" evaluations, rank {result.initial_rank} → {result.final_rank}</p>"
        )
    reasons = "".join(f"<li>{escape(e)}</li>" for e in result.errors)
    return f'<p><span class="badge bad" id="audit">audit: invalid</span></p><ul>{reasons}</ul>'


def _records(items: list[JSON], css: str, preferred: tuple[str, ...] = ()) -> str:
    """A list of JSON records as a table: the ``preferred`` columns when present, else all."""
    records = [r for r in items if isinstance(r, dict)]
    keys: list[str] = []
    for record in records:
        keys.extend(k for k in record if k not in keys)
    if preferred and any(k in keys for k in preferred):
        keys = [k for k in preferred if k in keys]
    head = "".join(f"<th>{escape(k)}</th>" for k in ["#", *keys])
    rows = []
    for n, record in enumerate(records, 1):
        cells = "".join(f"<td>{escape(_cell(k, record.get(k)))}</td>" for k in keys)
        rows.append(f"<tr><td>{n}</td>{cells}</tr>")
    return f'<table class="grid {css}"><tr>{head}</tr>{"".join(rows)}</table>'


def _cell(key: str, value: JSON) -> str:
    if value is None:
        return ""
    if key == "verdict" and isinstance(value, int) and not isinstance(value, bool):
        return _VERDICT_NAMES.get(value, str(value))
    if key == "digest" and isinstance(value, str):
        return value[:16]
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 300 else text[:300] + "…"


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
