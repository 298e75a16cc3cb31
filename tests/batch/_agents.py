"""make_run functions and a model for the batch tests: a loopback server whose agent
takes a fixed number of steps, and scripted agents that stall, loop or crash."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from returns.result import Failure, Result, Success

from four import Assistant, Invoke, Message, ModelError, ModelErrorKind, Reply, Usage, arun, run
from four._outcomes import Outcome
from four.batch import RunContext
from four.execute import local_env
from four.parse import regex_parse
from four.trajectory import save_trajectory
from tests._server import Answer, LoopbackServer, Request, chat, error, responses

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def batch_args(*words: str) -> argparse.Namespace:
    """``four batch WORDS`` parsed, as the command gets them."""
    from four.cli import build_parser

    return build_parser("batch").parse_args(["batch", *words])


def write_tasks(path: Path, n: int) -> Path:
    """A tasks file of ``n`` items ``t0``... (each with a ``repo`` field kept as is)."""
    lines = [json.dumps({"id": f"t{i}", "task": f"task {i}", "repo": f"r{i}"}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def bash(command: str) -> str:
    return f"```bash\n{command}\n```"


@functools.cache
def _patient_model(base: str) -> Invoke:
    from four.invoke import http_response_invoke, retry_invoke

    G = http_response_invoke("test-model", base, "x", bash_tool=False, timeout=30)
    # The model may answer "busy" (503) for a few seconds while a test kills a node.
    return retry_invoke(G, max_attempts=60, base_delay=0.1, max_delay=0.2)


@dataclass(frozen=True)
class PatientServerRun:
    """make_run like ``server_run``, whose model calls wait out a busy model."""

    base: str

    def __call__(self, ctx: RunContext) -> Path:
        return run(
            ctx.meter(_patient_model(self.base)),
            regex_parse(),
            local_env(timeout=30),
            save_trajectory(ctx.output_dir),
            prompt=ctx.task,
            max_steps=20,
            watch=ctx.watch,
        )


@dataclass
class GatedModel:
    """A model that counts the calls it answered (each 10 + 5 tokens): ``steps - 1``
    commands of ``sleep`` s each, then a submission. ``drain()`` answers "busy" (503,
    not counted) to new calls and waits for those being answered; ``reopen()`` ends it.
    So a test can kill a node when no call is between the model and its client."""

    steps: int = 6
    sleep: float = 0.5
    answered: int = 0
    by_task: dict[str, int] = field(default_factory=dict)  # calls answered, by task
    in_flight: int = 0
    open: bool = True
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Request) -> Answer:
        with self._lock:
            if not self.open:
                return error(503, "busy")
            self.in_flight += 1
        try:
            items = request.json().get("input")
            said = [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []
            done = sum(1 for m in said if m.get("role") == "assistant")
            task = next((str(m.get("content")) for m in said if m.get("role") == "user"), "")
            if done + 1 >= self.steps:
                answer = _responses(bash(f"echo {SUBMIT}; echo {task}"))
            else:
                answer = _responses(bash(f"sleep {self.sleep}; echo step {done} {task}"))
            with self._lock:
                self.answered += 1
                self.by_task[task] = self.by_task.get(task, 0) + 1
            return answer
        finally:
            with self._lock:
                self.in_flight -= 1

    def drain(self) -> None:
        with self._lock:
            self.open = False
        while True:
            with self._lock:
                if self.in_flight == 0:
                    return
            time.sleep(0.01)

    def reopen(self) -> None:
        with self._lock:
            self.open = True


@dataclass
class StepModel:
    """The loopback server's default answer: ``steps - 1`` commands, then a submission.

    Each command echoes the run's marker (from the prompt), so the test can look for
    leftover processes. Counts requests in flight to check the concurrency cap.
    """

    steps: int = 5
    delay: float = 0.0
    in_flight: int = 0
    peak: int = 0
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Request) -> Answer:
        with self._lock:
            self.in_flight += 1
            self.calls += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            try:
                body = request.json()
            except ValueError:  # a client killed mid-request
                return error(400, "bad request body")
            items = body.get("messages", body.get("input"))
            if not isinstance(items, list):
                return error(400, "no messages")
            said = [m for m in items if isinstance(m, dict)]
            done = sum(1 for m in said if m.get("role") == "assistant")
            task = next((str(m.get("content")) for m in said if m.get("role") == "user"), "")
            answer = chat if request.path.endswith("/chat/completions") else _responses
            if done + 1 >= self.steps:
                return answer(bash(f"echo {SUBMIT}; echo {task}"))
            return answer(bash(f"echo step {done} {task}"))
        finally:
            with self._lock:
                self.in_flight -= 1


def serve_many(default: StepModel) -> LoopbackServer:
    """The loopback server answering every request with ``default``."""
    return LoopbackServer(default)


def _responses(text: str) -> Answer:
    return responses(text)


def server_run(base: str) -> Callable[[RunContext], Path]:
    """make_run: the Responses API over httpx against the loopback server (litellm's
    ~8 ms of CPU per call would make 1,000 calls a slow test), regex parse, local bash.
    Picklable (for Ray): the model client is made once per process."""
    return ServerRun(base)


@functools.cache
def _model(base: str) -> Invoke:
    from four.invoke import http_response_invoke, retry_invoke

    G = http_response_invoke("test-model", base, "x", bash_tool=False, timeout=30)
    # As `four batch` does: a keep-alive connection the loaded server just closed is
    # a transient error, tried again (a real failure still shows after 3 attempts).
    return retry_invoke(G, max_attempts=3, base_delay=0.05, max_delay=0.2)


@dataclass(frozen=True)
class ServerRun:
    base: str
    max_steps: int = 20

    def __call__(self, ctx: RunContext) -> Path:
        if ctx.item.fields.get("fail"):
            raise RuntimeError(f"setup failed for {ctx.id}")
        return run(
            ctx.meter(_model(self.base)),
            regex_parse(),
            local_env(timeout=30),
            save_trajectory(ctx.output_dir),
            prompt=ctx.task,
            max_steps=self.max_steps,
            watch=ctx.watch,
        )


@dataclass
class Scripted:
    """A G of fixed replies (the last one repeats), each after ``delay`` s, costing ``cost``."""

    replies: Sequence[str]
    delay: float = 0.0
    cost: float = 0.0

    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        if self.delay:
            time.sleep(self.delay)
        done = sum(1 for m in messages if isinstance(m, Assistant))
        if not self.replies:
            return Failure(ModelError(ModelErrorKind.OTHER, "no replies"))
        text = self.replies[min(done, len(self.replies) - 1)]
        return Success(Assistant(text, usage=Usage(10, 5, self.cost)))


def scripted_run(
    replies: Sequence[str],
    *,
    delay: float = 0.0,
    cost: float = 0.0,
    env: Callable[[], object] | None = None,
    max_steps: int = 50,
) -> Callable[[RunContext], Path]:
    """make_run with a scripted model and (by default) local bash."""

    def make_run(ctx: RunContext) -> Path:
        V2 = env() if env is not None else local_env(timeout=60)
        return run(
            ctx.meter(Scripted([r.replace("{id}", ctx.id) for r in replies], delay, cost)),
            regex_parse(),
            V2,  # type: ignore[arg-type]
            save_trajectory(ctx.output_dir),
            prompt=ctx.task,
            max_steps=max_steps,
            watch=ctx.watch,
        )

    return make_run


def outcome_run(outcome: Outcome) -> Callable[[RunContext], Outcome]:
    return lambda ctx: outcome


def alive(token: str) -> list[int]:
    """Pids of processes whose command line holds ``token``."""
    found = []
    mark = token.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if mark in f.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def kill_all(token: str) -> None:
    """SIGKILL every process whose command line holds ``token``; one that ended since it
    was listed is already what this wants."""
    for pid in alive(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def commands_running(token: str) -> list[int]:
    """Pids of the commands (each the leader of its own session) whose command line holds
    ``token``. A command's forked children, until they exec, show the same command line
    but lead no session: they are not counted."""
    leaders = []
    for pid in alive(token):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == pid:  # after the name: state, ppid, pgrp, session
            leaders.append(pid)
    return leaders


def manifest_lines(folder: Path) -> list[dict[str, object]]:
    text = (folder / "manifest.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@dataclass(frozen=True)
class SlowThenQuick:
    """make_run: the first attempt runs ``sleep 60`` (tagged with ``token``), a second
    attempt (after its worker died) submits at once. Each model call costs ``cost``
    (and 10 prompt, 5 completion tokens)."""

    token: str
    cost: float = 0.0

    def __call__(self, ctx: RunContext) -> Path:
        if ctx.attempt == 1:
            replies = [bash(f"sleep 60; echo {self.token}")]
        else:
            replies = [bash(f"echo {SUBMIT}")]
        return scripted_run(replies, cost=self.cost)(ctx)


@dataclass(frozen=True)
class SavedThenHangs:
    """make_run: the first attempt submits (one model call costing ``cost``), then,
    with its trajectory saved, writes ``saved`` in its folder and hangs in make_run (to
    be killed there); a second attempt that runs submits at a cost of 1.0."""

    cost: float

    def __call__(self, ctx: RunContext) -> Path:
        if ctx.attempt > 1:
            return scripted_run([bash(f"echo {SUBMIT}")], cost=1.0)(ctx)
        path = scripted_run([bash(f"echo {SUBMIT}")], cost=self.cost)(ctx)
        (ctx.output_dir / "saved").write_text(str(path))
        time.sleep(60)
        return path


@dataclass(frozen=True)
class SlowSecondStart:
    """make_run for two actors: the second process to unpickle it (the second actor to
    start) first sleeps ``delay`` s, then writes its pid and the time in ``folder/up``.
    Each run writes its actor's pid in its output folder and submits after ``run_delay`` s.
    """

    folder: str
    delay: float
    run_delay: float = 0.3

    def __reduce__(self) -> tuple[object, tuple[str, float, float]]:
        return (_slow_second_start, (self.folder, self.delay, self.run_delay))

    def __call__(self, ctx: RunContext) -> Path:
        (ctx.output_dir / "pid").write_text(str(os.getpid()))
        return scripted_run([bash(f"echo {SUBMIT}")], delay=self.run_delay)(ctx)


def _slow_second_start(folder: str, delay: float, run_delay: float) -> SlowSecondStart:
    try:
        os.close(os.open(Path(folder) / "first", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        time.sleep(delay)
        (Path(folder) / "up").write_text(f"{os.getpid()} {time.time()}")
    return SlowSecondStart(folder, delay, run_delay)


@dataclass(frozen=True)
class CannotStart:
    """make_run that no actor can unpickle: its creation fails with ``message``."""

    message: str

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (_cannot_start, (self.message,))

    def __call__(self, ctx: RunContext) -> None:
        return None


def _cannot_start(message: str) -> CannotStart:
    raise RuntimeError(message)


@dataclass
class AsyncScripted(Scripted):
    """``Scripted``, awaited: the delay is an ``asyncio.sleep``, not a blocked thread."""

    async def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:  # type: ignore[override]
        if self.delay:
            await asyncio.sleep(self.delay)
        return Scripted(self.replies, 0.0, self.cost)(messages)


def async_scripted_run(
    replies: Sequence[str],
    *,
    delay: float = 0.0,
    cost: float = 0.0,
    max_steps: int = 50,
) -> Callable[[RunContext], Awaitable[Path]]:
    """An async make_run: ``arun`` with an async scripted model and local bash."""

    async def make_run(ctx: RunContext) -> Path:
        return await arun(
            ctx.meter(AsyncScripted([r.replace("{id}", ctx.id) for r in replies], delay, cost)),
            regex_parse(),
            local_env(timeout=60),
            save_trajectory(ctx.output_dir),
            prompt=ctx.task,
            max_steps=max_steps,
            watch=ctx.watch,
        )

    return make_run
