"""``four`` as an MCP server (``four mcp serve``): another agent hands it a task and gets
back a sealed, audited result.

Tools:
  run_task     run a verified agent on a task in a folder (check, budget, environment):
               ``four run`` in a process of its own, then the audit of its trajectory
  audit_run    check a saved run's seal, signature and receipts
  show_run     a saved run's outcome and steps (each command and what it showed)
  list_runs    the runs saved here, newest first
Resources: ``four://runs/<id>``, one per saved run: its sealed trajectory (JSON).

A run's model is the server's: the ``four run`` flags it was started with
(``--model``, ``--api-base``...) and its ``FOUR_*`` variables. Runs are saved in one
folder (``--runs``), outside the folders the agents work in.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import Resource
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from four._files import Unreadable, read_regular
from four.checks import audit
from four.execute._contain import launcher_env
from four.search._group import is_record
from four.trajectory import TrajectoryError, load_trajectory
from four.trajectory._load import load_head
from four.types import Assistant, ToolResult, User

RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")
RESOURCE = "four://runs/{run_id}"
STOP_GRACE = 10.0
"""Seconds a cancelled run has to save itself after SIGINT, before SIGKILL."""

INSTRUCTIONS = (
    "four runs an LLM agent on a task in a folder until a deterministic check (a command "
    "that must exit 0) accepts its work, and returns a sealed, audited record of the run. "
    "Call run_task with the task, the folder and the check; audit_run and show_run read a "
    "saved run; every saved run is also a resource, four://runs/<id>."
)


class AuditResult(TypedDict):
    """What ``four audit`` found: the seal (and signature, receipts) match the record."""

    valid: bool
    finished: bool
    errors: list[str]
    signature: str
    verified: bool
    receipts: int


class RunResult(TypedDict):
    """A finished run: its outcome, its record, and that record's audit."""

    run: str
    outcome: str
    success: bool
    accepted: bool
    steps: int
    cost: float | None
    submission: str | None
    trajectory: str
    resource: str
    audit: AuditResult


class Step(TypedDict):
    """One step: what the model said, and each action with what it showed."""

    step: int
    said: str
    actions: list[str]
    observations: list[str]


class RunSteps(TypedDict):
    run: str
    outcome: str | None
    steps: list[Step]


class RunEntry(TypedDict):
    run: str
    outcome: str | None
    resource: str


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """Where runs go, and the ``four run`` flags every run gets (the model...)."""

    runs: Path
    run_flags: tuple[str, ...] = ()


def _path(settings: ServeSettings, run: str) -> Path:
    """The sealed record (else the stream) of the run ``run``; a ToolError if none."""
    name = run.removeprefix("four://runs/").removesuffix(".json").removesuffix(".jsonl")
    if not RUN_ID.fullmatch(name):
        raise ToolError(f"{run!r} is not a run id (see list_runs)")
    for suffix in (".json", ".jsonl"):
        path = settings.runs / f"{name}{suffix}"
        if _regular(path):
            return path
    raise ToolError(f"no run {name!r} in {settings.runs}")


def audited(path: Path) -> AuditResult:
    """``four audit`` of ``path``, as a tool's result."""
    try:
        found = audit(path)
    except (OSError, TrajectoryError) as exc:
        return AuditResult(
            valid=False, finished=False, errors=[str(exc)], signature="none",
            verified=False, receipts=0,
        )  # fmt: skip
    return AuditResult(
        valid=found.valid,
        finished=found.finished,
        errors=list(found.errors),
        signature=found.signature,
        verified=found.verified,
        receipts=found.receipts,
    )


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters elided ...]\n{text[-half:]}"


def steps_of(path: Path, limit: int = 2000) -> RunSteps:
    """A saved run's outcome and steps, each text cut to ``limit`` characters."""
    try:
        trajectory = load_trajectory(path)
    except (OSError, TrajectoryError) as exc:
        raise ToolError(str(exc)) from None
    steps: list[Step] = []
    for message in trajectory.messages:
        if isinstance(message, Assistant):
            said = message.content or "; ".join(
                f"{c.name}({c.arguments})" for c in message.tool_calls
            )
            steps.append(
                Step(step=len(steps) + 1, said=_clip(said, limit), actions=[], observations=[])
            )
        elif steps and isinstance(message, ToolResult | User) and message.kind != "task":
            if message.command is not None:
                steps[-1]["actions"].append(_clip(message.command, limit))
            steps[-1]["observations"].append(_clip(message.content, limit))
    return RunSteps(run=path.stem, outcome=trajectory.outcome, steps=steps)


def run_command(
    settings: ServeSettings,
    folder: str,
    check: str | None,
    max_steps: int,
    cost_limit: float | None,
    timeout: float | None,
    environment: str,
    image: str | None,
    feedback: str,
) -> list[str]:
    """The ``four run`` command line for one task (the task itself comes on stdin)."""
    argv = [sys.executable, "-m", "four.cli", "run", "-", "--json"]
    argv += ["--cwd", folder, "-o", str(settings.runs), "--env", environment]
    argv += ["--max-steps", str(max_steps)]
    if check:
        argv += ["--check", check, "--feedback", feedback]
    if cost_limit is not None:
        argv += ["--cost-limit", str(cost_limit)]
    if timeout is not None:
        argv += ["--timeout", str(timeout)]
    if image:
        argv += ["--image", image]
    return argv + list(settings.run_flags)


async def run_task(
    settings: ServeSettings,
    task: str,
    folder: str,
    check: str | None = None,
    max_steps: int = 30,
    cost_limit: float | None = None,
    timeout: float | None = None,
    environment: str = "local",
    image: str | None = None,
    feedback: str = "verdict",
) -> RunResult:
    """Run ``four run`` on ``task`` in ``folder``; its result, audited. A cancelled call
    interrupts the run (it saves itself), then kills it."""
    if not task.strip():
        raise ToolError("the task is empty")
    where = Path(folder).expanduser()
    if not where.is_dir():
        raise ToolError(f"no folder {folder!r}: give the folder the agent works in")
    if max_steps < 1:
        raise ToolError("max_steps must be at least 1")
    settings.runs.mkdir(parents=True, exist_ok=True)
    argv = run_command(settings, str(where.resolve()), check, max_steps, cost_limit, timeout,
                       environment, image, feedback)  # fmt: skip
    process = await anyio.open_process(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
        env=launcher_env(dict(os.environ)),  # marked: it dies with this server, SIGKILL too
    )  # fmt: skip
    try:
        async with process:
            assert process.stdin is not None
            await process.stdin.send(task.encode())
            await process.stdin.aclose()
            out, err = await _read_all(process)
            code = await process.wait()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _stop(process)
        raise
    return _result(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), code)


async def _read_all(process: anyio.abc.Process) -> tuple[bytes, bytes]:
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    async def pump(stream: anyio.abc.ByteReceiveStream | None, key: str) -> None:
        if stream is None:
            return
        async for chunk in stream:
            chunks[key].append(chunk)

    async with anyio.create_task_group() as group:
        group.start_soon(pump, process.stdout, "out")
        group.start_soon(pump, process.stderr, "err")
    return b"".join(chunks["out"]), b"".join(chunks["err"])


async def _stop(process: anyio.abc.Process) -> None:
    """SIGINT (the run saves itself, ``interrupted``), then SIGKILL after a grace."""
    if process.returncode is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:
        return
    with anyio.move_on_after(STOP_GRACE):
        await process.wait()
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    await process.wait()


def _result(out: str, err: str, code: int) -> RunResult:
    """The JSON line ``four run --json`` printed, with its audit; a ToolError otherwise."""
    start = out.find("{")
    try:
        doc: Any = json.loads(out[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("path"), str):
        lines = [line for line in err.strip().splitlines() if line.strip()]
        said = lines[-1] if lines else f"four run exited {code} with no result"
        raise ToolError(said)
    path = Path(doc["path"])
    try:
        saved = load_head(path)
    except TrajectoryError as exc:
        raise ToolError(str(exc)) from None
    outcome = str(saved.outcome)
    return RunResult(
        run=path.stem,
        outcome=outcome,
        success=bool(doc.get("success")),
        accepted=outcome.startswith("accepted"),
        steps=saved.stats.steps,
        cost=saved.stats.usage.cost,
        submission=saved.detail.output,
        trajectory=str(path),
        resource=RESOURCE.format(run_id=path.stem),
        audit=audited(path),
    )


def _regular(path: Path) -> bool:
    """A regular file itself, not a link to one (a run's files are never links)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def saved_runs(settings: ServeSettings) -> list[Path]:
    """The runs in the folder, newest first: each sealed record, else its stream."""
    if not settings.runs.is_dir():
        return []
    found: dict[str, Path] = {}
    for path in settings.runs.iterdir():
        if is_record(path) or not _regular(path):  # a group record (--attempts) is no run,
            continue  # nor is a FIFO, a device or a link
        if (path.suffix == ".jsonl" and path.stem not in found) or path.suffix == ".json":
            found[path.stem] = path
    return sorted(found.values(), key=lambda p: p.stem, reverse=True)


def _outcome(path: Path) -> str | None:
    """A sealed run's outcome, read from its head (None: unfinished or unreadable)."""
    if path.suffix != ".json":
        return None
    try:
        return load_head(path).outcome
    except TrajectoryError:
        return None


class FourServer(MCPServer):
    """The MCP server: its resources are the saved runs, listed as they are now."""

    def __init__(self, settings: ServeSettings) -> None:
        super().__init__("four", instructions=INSTRUCTIONS, log_level="WARNING")
        self.four = settings

    async def list_resources(self) -> list[Resource]:
        return [
            Resource(
                uri=RESOURCE.format(run_id=path.stem),
                name=path.stem,
                description=f"a run of four: {_outcome(path) or 'unfinished'}",
                mime_type="application/json",
            )
            for path in saved_runs(self.four)
        ]


Environment = Literal["local", "persistent", "sandbox", "docker"]
Feedback = Literal["verdict", "output", "full"]


def server(settings: ServeSettings) -> FourServer:
    """The MCP server of ``four mcp serve``."""
    app = FourServer(settings)

    @app.tool(name="run_task")
    async def run_task_tool(
        task: str,
        folder: str,
        check: str | None = None,
        max_steps: int = 30,
        cost_limit: float | None = None,
        timeout: float | None = None,
        environment: Environment = "local",
        image: str | None = None,
        feedback: Feedback = "verdict",
    ) -> RunResult:
        """Run an agent on a task in a folder, until the check accepts its work.

        check: a shell command run in the folder that must exit 0 for the run to be
        accepted (e.g. "pytest -q"); without it the agent's own submission ends the run.
        max_steps, cost_limit (USD), timeout (seconds of the whole run) bound it.
        environment: where commands run (local, persistent, sandbox, docker with image).
        feedback: what the agent is told when the check fails (verdict, output, full).
        Returns the outcome ("accepted" when the check passed), the submission, the
        sealed trajectory, its resource URI and its audit."""
        return await run_task(settings, task, folder, check, max_steps, cost_limit,
                              timeout, environment, image, feedback)  # fmt: skip

    @app.tool(name="audit_run")
    def audit_run_tool(run: str) -> AuditResult:
        """Check a saved run's seal, signature and verdict receipts (its id, or URI)."""
        return audited(_path(settings, run))

    @app.tool(name="show_run")
    def show_run_tool(run: str, max_chars: int = 2000) -> RunSteps:
        """A saved run's outcome and steps: what the model said, each command and what
        it showed (texts cut to max_chars)."""
        return steps_of(_path(settings, run), max(100, max_chars))

    @app.tool(name="list_runs")
    def list_runs_tool(limit: int = 20) -> list[RunEntry]:
        """The runs saved here, newest first, with their outcomes."""
        return [
            RunEntry(run=p.stem, outcome=_outcome(p), resource=RESOURCE.format(run_id=p.stem))
            for p in saved_runs(settings)[: max(1, limit)]
        ]

    @app.resource(RESOURCE, name="run", mime_type="application/json")
    def read_run(run_id: str) -> str:
        """A saved run's sealed trajectory (its stream, if it has not ended)."""
        try:
            return read_regular(_path(settings, run_id), follow=False).decode("utf-8")
        except (Unreadable, UnicodeDecodeError) as exc:
            raise ToolError(str(exc)) from None

    return app


def serve(
    settings: ServeSettings,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 0,
    on_listen: Callable[[str], None] | None = None,
) -> None:
    """Serve until stopped: over this process's stdin and stdout, or streamable HTTP at
    ``http://host:port/mcp`` (``on_listen(url)`` is told the URL once it listens)."""
    app = server(settings)
    if transport == "stdio":
        anyio.run(app.run_stdio_async)
        return
    anyio.run(_serve_http, app, host, port, on_listen)


async def _serve_http(
    app: FourServer, host: str, port: int, on_listen: Callable[[str], None] | None
) -> None:
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    config = uvicorn.Config(app.streamable_http_app(host=host), log_level="warning")
    running = uvicorn.Server(config)
    if on_listen is not None:
        on_listen(f"http://{shown}:{bound}/mcp")
    await running.serve(sockets=[sock])
