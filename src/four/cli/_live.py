"""What a person sees while a run goes: G and V2, ``Watched``, tell a ``Display``, the loop
unchanged (its events hold no "started" moments); ``Recording`` wraps the trajectory writer.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Generic, TypeVar

from returns.result import Result, Success

from four._describe import describe
from four._outcomes import Outcome
from four._types import (
    JSON,
    NO_USAGE,
    Action,
    Closeable,
    Execute,
    ExecutionError,
    Invoke,
    Message,
    ModelError,
    Observation,
    Recorder,
    Reply,
    RunInfo,
    RunStats,
    Sink,
    Submitted,
    Usage,
)
from four.cli._format import seconds, tokens
from four.cli._signals import held, kept
from four.cli._steps import first_line
from four.cli._terminal import console, visible

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

A = TypeVar("A")
R = TypeVar("R")


@dataclass(slots=True)
class Row:
    """One command of the run, as the display shows it."""

    step: int
    command: str
    returncode: int | None = None
    seconds: float | None = None
    note: str = ""


@dataclass(eq=False, slots=True)
class Display:
    """The run's state, and how it is shown: ``live`` (rich, redrawn in place),
    ``lines`` (one line per event, for logs and pipes) or ``quiet`` (nothing)."""

    mode: str
    title: str = ""
    max_steps: int = 0
    model_lines: bool = True
    stream: IO[str] = field(default_factory=lambda: sys.stderr)
    step: int = 0
    usage: Usage = NO_USAGE
    activity: str = "starting"
    started: float = field(default_factory=time.monotonic)
    rows: deque[Row] = field(default_factory=lambda: deque(maxlen=8))  # the last commands
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _live: Live | None = None

    def start(self) -> None:
        """Begin showing (a no-op for ``lines`` and ``quiet``)."""
        self.started = time.monotonic()
        if self.mode != "live":
            return
        from rich.live import Live

        # a fresh frame at every refresh (4 a second), so elapsed time moves
        self._live = Live(get_renderable=self.frame, console=console(self.stream, highlight=False))
        self._live.start()

    def stop(self, final: str = "") -> None:
        """Stop redrawing; the last frame (with ``final`` as its status) stays on screen."""
        if self._live is not None:
            if final:
                with self._lock:
                    self.activity = final
                    if self.rows and self.rows[-1].seconds is None:
                        self.rows[-1].note = final
                self._live.refresh()
            self._live.stop()
            self._live = None

    def model_started(self, _: Sequence[Message]) -> None:
        with self._lock:
            self.step += 1
            self.activity = "… waiting for the model"

    def model_done(self, result: Result[Reply, ModelError], elapsed: float) -> None:
        with self._lock:
            reply = result.unwrap() if isinstance(result, Success) else result.failure()
            self.usage += reply.usage or NO_USAGE
            if isinstance(reply, ModelError):
                note = f"model error: {first_line(str(reply), 100)}"
            else:
                used = reply.usage.total_tokens if reply.usage else 0
                note = f"model {seconds(elapsed)}, {tokens(used)} tok"
                note += ", cut off" if reply.truncated else ""
            self.activity = "… reading the reply"
        if self.model_lines:
            self._line(f"step {self.step} · {note} · total {self._totals()}")

    def command_started(self, action: Action) -> None:
        with self._lock:
            shown = visible(action.command)  # before rich measures it
            self.rows.append(Row(self.step, shown))
            self.activity = f"… running {first_line(shown, 60)}"

    def command_done(
        self, result: Result[Observation, Submitted | ExecutionError], elapsed: float
    ) -> None:
        with self._lock:
            row = self.rows[-1]
            row.seconds = elapsed
            seen = result.unwrap() if isinstance(result, Success) else result.failure()
            if isinstance(seen, Observation):
                row.returncode, row.note = seen.returncode, "timed out" if seen.timed_out else ""
            else:
                row.note = "submitted" if isinstance(seen, Submitted) else f"env error: {seen}"
                row.note = visible(row.note)
            self.activity = "… waiting for the model"
        code = "" if row.returncode is None else f" · exit {row.returncode}"
        note = f" · {row.note}" if row.note else ""
        self._line(
            f"step {row.step} · $ {first_line(row.command, 80)}{code}{note} · {seconds(elapsed)}"
        )

    def _totals(self) -> str:
        u = self.usage
        money = "cost ?" if u.calls and u.cost_unknown_calls >= u.calls else f"${u.known_cost:.4f}"
        took = seconds(time.monotonic() - self.started)
        return f"{tokens(u.total_tokens)} tok · {money} · {took}"

    def _line(self, text: str) -> None:
        if self.mode == "lines":
            print(text, file=self.stream, flush=True)

    def frame(self) -> RenderableType:
        """What the live display draws now."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            limit = f"/{self.max_steps}" if self.max_steps else ""
            head = Text.assemble(
                ("four ", "bold"),
                (visible(self.title), "cyan"),
                f"  step {self.step}{limit} · {self._totals()}",
            )
            table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
            table.add_column("step", justify="right")
            table.add_column("command", overflow="ellipsis", no_wrap=True, ratio=1)
            table.add_column("exit", justify="right")
            table.add_column("time", justify="right")
            for row in self.rows:
                code = "" if row.returncode is None else str(row.returncode)
                style = "red" if row.returncode not in (None, 0) else "green"
                table.add_row(
                    str(row.step),
                    Text(first_line(row.command, 200)),
                    Text(row.note or code, style=style),
                    seconds(row.seconds) if row.seconds is not None else "",
                )
            status = Text(self.activity, style="dim")
        return Group(head, table, status)


@dataclass(frozen=True, slots=True)
class Watched(Generic[A, R]):
    """G or V2 telling a display as each call starts and ends; a Ctrl-C a library swallowed
    meanwhile is raised again (never taken for a model or command error). It closes what
    it wraps, so ``run`` still releases shells and containers."""

    inner: Callable[[A], R]
    started: Callable[[A], None] = field(repr=False)
    done: Callable[[R, float], None] = field(repr=False)

    def __call__(self, arg: A, /) -> R:
        self.started(arg)
        t = time.monotonic()
        with kept():
            result = self.inner(arg)
        self.done(result, time.monotonic() - t)
        return result

    def close(self) -> None:
        if isinstance(self.inner, Closeable):
            self.inner.close()


@dataclass(slots=True)
class Recording:
    """The trajectory writer, remembering the file it writes and adding the CLI's record
    (the real G and V2, and ``four replay``'s settings). With ``hold``, it is the run's
    sink: a Ctrl-C waits from ``open`` until ``began()``, when the run can seal its record,
    and never cuts the seal (one meanwhile is raised once it is sealed)."""

    writer: Recorder[Path]
    components: Mapping[str, JSON] = field(repr=False)
    sink: Sink[Path] | None = field(default=None, repr=False)
    hold: bool = False
    _holding: ExitStack = field(default_factory=ExitStack, repr=False)

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> Path:
        return self.writer(messages, outcome)

    def open(self, info: RunInfo, /) -> Sink[Path]:
        info = replace(info, components={**info.components, **self.components})
        if self.hold:
            self._holding.enter_context(held())
        self.sink = self.writer.open(info)
        return self if self.hold else self.sink  # (a batch's: its aclose kept)

    def append(self, message: Message, /) -> None:
        assert self.sink is not None  # (opened)
        self.sink.append(message)

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> Path:
        assert self.sink is not None
        with held():
            return self.sink.close(messages, outcome, stats)

    def began(self) -> None:
        """The run's loop has begun: a Ctrl-C that waited since ``open`` is raised now."""
        self._holding.close()

    @property
    def path(self) -> Path | None:
        """The sealed ``.json`` once the run ended, else the ``.jsonl`` being written;
        None when neither is on disk (never a path that does not exist)."""
        named = (getattr(self.sink, "path", None), getattr(self.sink, "jsonl", None))
        return next((p for p in named if isinstance(p, Path) and p.is_file()), None)


def components(G: Invoke, V2: Execute, cli: Mapping[str, JSON]) -> dict[str, JSON]:
    """The head record for ``Recording``: the unwrapped G and V2, and the CLI settings."""
    from four.execute import NoteRepeats

    env = V2.inner if isinstance(V2, NoteRepeats) else V2  # the environment, as replay makes it
    return {"G": describe(G), "V2": describe(env), "cli": dict(cli)}
