"""A saved run as steps: each model reply with the commands it asked for and what they showed.

The trajectory stores messages; the commands, return codes and format errors are
read back from them. Tool calls carry their command as JSON arguments; text replies
carry it in a fenced block. Return codes are read from the observation text in the
shapes our environments and mini-swe-agent's templates write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from four._types import EXIT_SIGNAL, JSON, Assistant, Message, System, ToolResult, Usage, User
from four.trajectory import Trajectory
from four.trajectory._codec import usage_from_json
from four.trajectory._load import stream_records

_FENCE = re.compile(
    r"```(bash|sh|shell|console|zsh|mswea_bash_command)?[ \t]*\n(.*?)\n?```", re.DOTALL
)
_RETURNCODE = (
    re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"),
    re.compile(r'"returncode"\s*:\s*(-?\d+)'),
    re.compile(
        r"(?im)^\s*\[?(?:returncode|return code|exit code|exit status|exit)[:= ]\s*(-?\d+)\]?"
    ),
)


@dataclass(frozen=True, slots=True)
class Step:
    """One model turn and what followed it, up to the next turn."""

    number: int
    reply: Assistant
    commands: tuple[str, ...]
    observations: tuple[Message, ...]
    returncodes: tuple[int | None, ...]
    format_error: str | None
    started: float | None = None
    ended: float | None = None
    submitted: bool = False
    """The step claimed completion; what follows it is a check's feedback, if anything."""

    @property
    def duration(self) -> float | None:
        """Seconds from this reply to the next one (None without timestamps)."""
        if self.started is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.started)

    def label(self, index: int) -> str:
        """What the ``index``-th observation is: a command's output, or a check's answer."""
        code = self.returncodes[index] if index < len(self.returncodes) else None
        if self.submitted and code is None:
            return "check"
        return "output" if isinstance(self.observations[index], ToolResult) else "observation"

    @property
    def failed(self) -> bool:
        """A command of this step exited non-zero."""
        return any(rc not in (None, 0) for rc in self.returncodes)


@dataclass(frozen=True, slots=True)
class Run:
    """A trajectory read as a run: its prompts, its steps and its totals."""

    trajectory: Trajectory
    system: str
    task: str
    steps: tuple[Step, ...]
    usage: Usage
    model: str
    wall_time: float | None

    @property
    def outcome(self) -> str:
        return self.trajectory.outcome or "unfinished"


def commands_of(reply: Assistant) -> tuple[str, ...]:
    """The commands a reply asks for: tool-call ``command`` arguments, else fenced blocks.

    >>> commands_of(Assistant("Look:\\n```bash\\nls -l\\n```"))
    ('ls -l',)
    """
    if reply.tool_calls:
        return tuple(_call_command(c.arguments) or c.arguments for c in reply.tool_calls)
    return tuple(m.group(2).strip() for m in _FENCE.finditer(reply.content))


def _call_command(arguments: str) -> str | None:
    try:
        data: JSON = json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        return None
    if isinstance(data, dict):
        command = data.get("command", data.get("cmd"))
        if isinstance(command, str):
            return command
    return None


def returncode_of(text: str) -> int | None:
    """The return code an observation reports, if it reports one.

    >>> returncode_of("<returncode>2</returncode>\\n<output>no such file</output>")
    2
    >>> returncode_of("hello") is None
    True
    """
    for part in (text[:400], text[-400:]):
        for pattern in _RETURNCODE:
            match = pattern.search(part)
            if match:
                return int(match.group(1))
    return None


def first_line(text: str, width: int = 120) -> str:
    """The first non-blank line, cut to ``width`` characters.

    >>> first_line("\\n  Format error: no command\\nmore")
    'Format error: no command'
    """
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= width else line[: width - 1] + "…"
    return ""


def content_of(message: Message) -> str:
    """The text a message carries (reasoning aside)."""
    return message.content


def read_run(trajectory: Trajectory, timestamps: Sequence[float] = ()) -> Run:
    """Cut a trajectory's messages into steps; ``timestamps`` align with the messages.

    >>> from four.trajectory import Trajectory
    >>> from pathlib import Path
    >>> t = Trajectory((User("hi"), Assistant("```bash\\nls\\n```"), User("a b")), None, "x", Path("x"))
    >>> [s.commands for s in read_run(t).steps]
    [('ls',)]
    """
    messages = trajectory.messages
    times = list(timestamps) if len(timestamps) == len(messages) else []
    system = next((m.content for m in messages if isinstance(m, System)), "")
    # Our loop marks what it adds (task, observation, format_error, ...) and keeps return
    # codes; older files and mini-swe-agent's are read by inference.
    marked = any(isinstance(m, User) and m.kind == "task" for m in messages)
    task = ""
    steps: list[Step] = []
    current: tuple[int, Assistant] | None = None
    observed: list[Message] = []

    def close(end_index: int) -> None:
        if current is None:
            return
        index, reply = current
        started = times[index] if times else None
        ended = (
            times[end_index] if times and end_index < len(times) else (times[-1] if times else None)
        )
        steps.append(_step(len(steps) + 1, reply, tuple(observed), started, ended, marked))

    for i, message in enumerate(messages):
        if isinstance(message, Assistant):
            close(i)
            current, observed = (i, message), []
        elif current is not None:
            observed.append(message)
        elif isinstance(message, User) and not task:
            task = message.content
    close(len(messages) - 1)
    total = _usage(trajectory, steps)
    return Run(trajectory, system, task, tuple(steps), total, _model(trajectory), _wall(trajectory))


def _step(
    number: int,
    reply: Assistant,
    observations: tuple[Message, ...],
    started: float | None,
    ended: float | None,
    marked: bool = False,
) -> Step:
    commands = commands_of(reply)
    submitted = _submits(reply, commands)
    format_error: str | None = None
    if marked:
        kinds = [o for o in observations if isinstance(o, User | ToolResult)]
        error = next((o for o in kinds if o.kind in ("format_error", "rejected")), None)
        format_error = first_line(error.content) if error is not None else None
        codes = tuple(o.returncode for o in kinds if o.kind == "observation")
        return Step(
            number, reply, commands, observations, codes, format_error, started, ended, submitted
        )
    if submitted or not observations:
        pass
    elif reply.truncated or not commands:
        format_error = first_line(observations[0].content)
    elif reply.tool_calls:
        bad = [c for c in reply.tool_calls if _call_command(c.arguments) is None]
        if bad:
            rejected = next(
                (
                    o
                    for o in observations
                    if isinstance(o, ToolResult) and o.tool_call_id == bad[0].id
                ),
                None,
            )
            format_error = first_line(rejected.content if rejected else "unreadable tool call")
    codes = tuple(returncode_of(o.content) for o in observations) if not format_error else ()
    return Step(
        number, reply, commands, observations, codes, format_error, started, ended, submitted
    )


def _submits(reply: Assistant, commands: tuple[str, ...]) -> bool:
    """The reply claims completion: a command prints the exit signal, or (no command) a
    line of the reply is the signal."""
    if commands:
        return any(EXIT_SIGNAL in command for command in commands)
    return any(
        line.strip().strip("`").strip() == EXIT_SIGNAL for line in reply.content.splitlines()
    )


def _usage(trajectory: Trajectory, steps: Sequence[Step]) -> Usage:
    stats_usage = trajectory.stats.get("usage")
    if isinstance(stats_usage, dict):
        return usage_from_json(stats_usage)
    total = Usage(calls=0)
    for step in steps:
        if step.reply.usage is not None:
            total += step.reply.usage
    model_stats = trajectory.info.get("model_stats")  # mini-swe-agent
    if isinstance(model_stats, dict):
        cost, calls = model_stats.get("instance_cost"), model_stats.get("api_calls")
        return Usage(
            total.prompt_tokens,
            total.completion_tokens,
            float(cost) if isinstance(cost, int | float) else total.cost,
            calls if isinstance(calls, int) else total.calls,
        )
    return total


def _model(trajectory: Trajectory) -> str:
    components = trajectory.info.get("components")
    if isinstance(components, dict):
        cli = components.get("cli")
        if isinstance(cli, dict) and isinstance(cli.get("model"), str):
            return str(cli["model"])
        found = _find_key(components.get("G"), "model")
        if found:
            return found
    config = trajectory.info.get("config")  # mini-swe-agent
    if isinstance(config, dict):
        found = _find_key(config.get("model"), "model_name")
        if found:
            return found
    return next((m.model for m in trajectory.messages if isinstance(m, Assistant) and m.model), "")


def _find_key(data: JSON, key: str) -> str:
    """The first string under ``key`` in nested JSON (wrappers nest the real G)."""
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
        for item in data.values():
            found = _find_key(item, key)
            if found:
                return found
    elif isinstance(data, list):
        for item in data:
            found = _find_key(item, key)
            if found:
                return found
    return ""


def _wall(trajectory: Trajectory) -> float | None:
    wall = trajectory.stats.get("wall_time")
    return float(wall) if isinstance(wall, int | float) else None


def read_timestamps(path: Path) -> list[float]:
    """Seconds since the run started, one per message, from our ``.json`` or ``.jsonl``.

    Empty for files that carry none (mini-swe-agent's, or a plain emit).
    """
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    if path.suffix == ".jsonl":
        times: list[float] = []
        for record in stream_records(text):
            if record.get("type") == "message":
                t = record.get("t")
                times.append(float(t) if isinstance(t, int | float) else 0.0)
        return times
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    stamps = data.get("timestamps") if isinstance(data, dict) else None
    if isinstance(stamps, list) and all(isinstance(t, int | float) for t in stamps):
        return [float(t) for t in stamps]
    return []


def load_run(path: str | Path) -> Run:
    """Load a trajectory file as a run; an unreadable file is a usage error."""
    from four.cli._errors import UsageError
    from four.trajectory import TrajectoryError, load_trajectory

    try:
        trajectory = load_trajectory(path)
    except TrajectoryError as exc:
        raise UsageError(str(exc)) from None
    return read_run(trajectory, read_timestamps(Path(path)))


def verdicts_of(stats: Mapping[str, JSON]) -> Mapping[str, JSON] | None:
    """The verified loop's record in a run's stats (``verdicts``), if the run has one."""
    value = stats.get("verdicts")
    return value if isinstance(value, dict) else None
