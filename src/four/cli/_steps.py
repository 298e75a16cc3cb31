"""A saved run as steps: each model reply with the commands the loop ran and what they showed.

Our loop records everything a reader needs on its messages: the command each observation
answers (as V1 parsed it), its return code, what kind of message it is (an observation,
a format error, a check's feedback, a submission), and when each message was recorded,
so a step's model call and each command have their own time. Nothing of that is parsed
again from the reply. Older files and mini-swe-agent's are read by inference: commands
from tagged fenced blocks, return codes from the observation text.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from four._outcomes import outcome_tag
from four._types import JSON, Assistant, Message, System, ToolResult, Usage, User
from four.trajectory import Trajectory
from four.trajectory._load import (
    MAX_BYTES,
    TrajectoryError,
    TrajectoryTooLarge,
    load_trajectory,
    scan_trajectory,
)

_FENCE = re.compile(
    r"```(bash|sh|shell|console|zsh|mswea_bash_command)[ \t]*\n(.*?)\n?```", re.DOTALL
)
_RETURNCODE = (
    re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"),
    re.compile(r'"returncode"\s*:\s*(-?\d+)'),
    re.compile(
        r"(?im)^\s*\[?(?:returncode|return code|exit code|exit status|exit)[:= ]\s*(-?\d+)\]?"
    ),
)


_LABELS: Mapping[str, str] = {
    "feedback": "check",
    "submission": "submission",
    "rejected": "rejected",
    "error": "environment error",
    "skipped": "not run",
    "format_error": "format error",
}


@dataclass(frozen=True, slots=True)
class Step:
    """One model turn and what answered it, up to the next turn: every field read from
    what the loop recorded (for our runs; older files and mini-swe-agent's by inference).

    ``observations`` are the messages after the reply; ``actions``, ``returncodes`` and
    ``times`` line up with them: the command each one answers (None: no command's result,
    or one the file does not record), its exit status, and the seconds from the message
    before it to it (for a command: the command's run).
    """

    number: int
    reply: Assistant
    actions: tuple[str | None, ...]
    observations: tuple[Message, ...]
    returncodes: tuple[int | None, ...]
    format_error: str | None
    model_time: float | None = None
    """Seconds the model call took: from the last message it was sent to its reply."""
    times: tuple[float | None, ...] = ()
    submitted: bool = False
    """The loop took this step as a submission (its outcome, or a recorded kind): what
    follows it is a check's feedback, if anything."""
    at: int = 0
    """The reply's index among the run's messages."""

    @property
    def commands(self) -> tuple[str, ...]:
        """The commands the loop ran for this reply, in order."""
        return tuple(a for a in self.actions if a is not None)

    @property
    def ran(self) -> tuple[tuple[str, int | None], ...]:
        """Each command that ran with its exit status."""
        return tuple(
            (a, self.returncodes[i] if i < len(self.returncodes) else None)
            for i, a in enumerate(self.actions)
            if a is not None
        )

    @property
    def duration(self) -> float | None:
        """Seconds the step took: its model call and what answered it (None without
        recorded times)."""
        if self.model_time is None:
            return None
        return self.model_time + sum(t for t in self.times if t is not None)

    def time_of(self, index: int) -> float | None:
        """Seconds until the ``index``-th observation was recorded (None: not known)."""
        return self.times[index] if index < len(self.times) else None

    def label(self, index: int) -> str:
        """What the ``index``-th observation is: a command's output, a check's answer..."""
        message = self.observations[index]
        kind = message.kind if isinstance(message, User | ToolResult) else "text"
        if kind in _LABELS:
            return _LABELS[kind]
        code = self.returncodes[index] if index < len(self.returncodes) else None
        if self.submitted and code is None and kind == "text":
            return "check"
        return "output" if isinstance(message, ToolResult) else "observation"

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
    step_count: int = -1
    """Steps in the run: more than ``steps`` holds when only its ends were kept (-1: as many)."""
    failed_steps: int = 0
    format_error_steps: int = 0

    @property
    def domain(self) -> str:
        """The domain ``four run`` recorded (``bash`` when it recorded none)."""
        domain = self.trajectory.info.settings.get("domain")
        return domain if isinstance(domain, str) else "bash"

    @property
    def outcome(self) -> str:
        return self.trajectory.outcome or "unfinished"

    @property
    def total_steps(self) -> int:
        return len(self.steps) if self.step_count < 0 else self.step_count


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


def read_run(trajectory: Trajectory, timestamps: Sequence[float] = ()) -> Run:
    """Cut a trajectory's messages into steps; ``timestamps`` (else the trajectory's own)
    align with the messages.

    >>> from four.trajectory import Trajectory
    >>> from pathlib import Path
    >>> t = Trajectory((User("hi"), Assistant("```bash\\nls\\n```"), User("a b")), None, "x", Path("x"))
    >>> [s.commands for s in read_run(t).steps]
    [('ls',)]
    """
    messages = trajectory.messages
    times = timestamps or trajectory.timestamps
    stamps = list(times) if len(times) == len(messages) else [None] * len(messages)
    cutter = StepCutter()
    for message, t in zip(messages, stamps, strict=True):
        cutter.add(message, t)
    return cutter.run(trajectory)


@dataclass(slots=True)
class StepCutter:
    """Messages in, steps out, one message at a time: with ``keep``, only the first and
    the last ``keep`` steps are held (and the totals of all), so a long run is read in
    memory that follows what is shown; with ``pick``, only that step is held; with
    ``each``, every step is handed to it as it ends, and none is held."""

    keep: int | None = None
    pick: int | None = None
    each: Callable[[Step], object] | None = None
    system: str = field(default="", init=False)
    task: str = field(default="", init=False)
    count: int = field(default=0, init=False)
    _head: list[Step] = field(default_factory=list, init=False)
    _tail: deque[Step] = field(init=False)
    # the reply, its model call's time, its index among the messages
    _current: tuple[Assistant, float | None, int] | None = field(default=None, init=False)
    _observed: list[Message] = field(default_factory=list, init=False)
    _times: list[float | None] = field(default_factory=list, init=False)
    _last: float | None = field(default=None, init=False)  # the previous message's time
    _index: int = field(default=0, init=False)  # messages seen
    # our loop marks what it adds; older files are read by inference
    _marked: bool = field(default=False, init=False)
    _usage: Usage = field(default=Usage(calls=0), init=False)
    _model: str = field(default="", init=False)
    _failed: int = field(default=0, init=False)
    _formats: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._tail = deque(maxlen=self.keep or None)

    def add(self, message: Message, t: float | None = None) -> None:
        """Take the next message (``t``: its time in the run, if known)."""
        took = None if t is None or self._last is None else max(0.0, t - self._last)
        self._last = t
        self._index += 1
        if isinstance(message, Assistant):
            self._close(False)
            self._current, self._observed, self._times = (message, took, self._index - 1), [], []
            if message.usage is not None:
                self._usage += message.usage
            self._model = self._model or message.model
        elif self._current is not None:
            self._observed.append(message)
            self._times.append(took)
        elif isinstance(message, System) and not self.system:
            self.system = message.content
        elif isinstance(message, User):
            self._marked = self._marked or message.kind == "task"
            self.task = self.task or message.content

    def _close(self, last_submitted: bool) -> None:
        if self._current is None:
            return
        reply, model_time, at = self._current
        step = _step(
            self.count + 1,
            reply,
            tuple(self._observed),
            model_time,
            tuple(self._times),
            self._marked,
            last_submitted,
            at,
        )
        self.count += 1
        self._failed += step.failed
        self._formats += step.format_error is not None
        if self.each is not None:
            self.each(step)
        elif self.pick is not None:
            if step.number == self.pick:
                self._head.append(step)
        elif self.keep is None or len(self._head) < self.keep:
            self._head.append(step)
        else:
            self._tail.append(step)
        self._current = None

    def run(self, trajectory: Trajectory) -> Run:
        """The run so far, with ``trajectory``'s outcome and totals."""
        self._close(_ended_by_submission(trajectory))
        steps: tuple[Step, ...] = (*self._head, *self._tail)
        resumed = trajectory.info.resumed_from
        if resumed > 0:  # those were recorded at once, untimed
            steps = tuple(
                replace(s, model_time=None, times=()) if s.at < resumed else s for s in steps
            )
        return Run(
            trajectory,
            self.system,
            self.task,
            steps,
            _usage(trajectory, self._usage),
            _model(trajectory) or self._model,
            trajectory.stats.wall_time,
            self.count,
            self._failed,
            self._formats,
        )


_SUBMISSION_ENDS = frozenset({"exit:task_complete", "accepted", "held", "blocked", "Submitted"})
"""Outcomes only a submission reaches (``accepted`` also by a last judgement: see
``_ended_by_submission``); ``Submitted`` is mini-swe-agent's."""


def _ended_by_submission(trajectory: Trajectory) -> bool:
    """The run's last step was a submission, by its recorded outcome."""
    detail = trajectory.detail
    tag = detail.kind or outcome_tag(trajectory.outcome or "")
    if tag == "crashed":  # the check itself raised while judging a submission
        return detail.component == "check"
    if tag == "accepted":
        verdicts = trajectory.stats.verdicts
        return not (verdicts and isinstance(verdicts.judged_at_end, str))
    return tag in _SUBMISSION_ENDS


def _step(
    number: int,
    reply: Assistant,
    observations: tuple[Message, ...],
    model_time: float | None,
    times: tuple[float | None, ...],
    marked: bool,
    last_submitted: bool,
    at: int = 0,
) -> Step:
    """One step, from what the loop recorded (``marked``: our loop's kinds, return codes
    and commands), else by inference from the text (older files, mini-swe-agent's)."""
    if marked:
        kinds = [o.kind if isinstance(o, User | ToolResult) else "text" for o in observations]
        error = next(
            (
                o
                for o, k in zip(observations, kinds, strict=True)
                if k in ("format_error", "rejected")
            ),
            None,
        )
        return Step(
            number,
            reply,
            tuple(_recorded_command(reply, o) for o in observations),
            observations,
            tuple(o.returncode if isinstance(o, User | ToolResult) else None for o in observations),
            first_line(error.content) if error is not None else None,
            model_time,
            times,
            last_submitted or any(k in ("submission", "feedback") for k in kinds),
            at,
        )
    commands = commands_of(reply)
    format_error: str | None = None
    if last_submitted or not observations:
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
    actions = tuple(
        commands[i] if i < len(commands) and not format_error else None
        for i in range(len(observations))
    )
    return Step(
        number,
        reply,
        actions,
        observations,
        codes,
        format_error,
        model_time,
        times,
        last_submitted,
        at,
    )


def _recorded_command(reply: Assistant, message: Message) -> str | None:
    """The command a message of our loop answers: recorded on it; in files from before
    that was recorded, a tool call's own ``command`` argument (a text reply's blocks are
    not guessed at)."""
    if not isinstance(message, User | ToolResult):
        return None
    if message.command is not None:
        return message.command
    if isinstance(message, ToolResult) and message.kind in ("observation", "submission", "error"):
        call = next((c for c in reply.tool_calls if c.id == message.tool_call_id), None)
        return _call_command(call.arguments) if call is not None else None
    return None


def _usage(trajectory: Trajectory, total: Usage) -> Usage:
    if trajectory.outcome is not None and trajectory.format.startswith("four."):
        return trajectory.stats.usage.usage()  # a run that ended: its own total
    model_stats = trajectory.info.model_stats  # mini-swe-agent
    if model_stats:
        cost, calls = model_stats.get("instance_cost"), model_stats.get("api_calls")
        return Usage(
            total.prompt_tokens,
            total.completion_tokens,
            float(cost) if isinstance(cost, int | float) else total.cost,
            calls if isinstance(calls, int) else total.calls,
        )
    return total


def _model(trajectory: Trajectory) -> str:
    info = trajectory.info
    model = info.settings.get("model")
    if isinstance(model, str):
        return model
    return _find_key(info.components.get("G"), "model") or _find_key(
        info.config.get("model"),
        "model_name",  # mini-swe-agent
    )


def _find_key(data: JSON, key: str) -> str:
    """The first string under ``key`` in nested JSON (wrappers nest the real G), breadth
    first and without recursion (a file decides how deep it goes)."""
    level = [data]
    while level:
        below: list[JSON] = []
        for item in level:
            if isinstance(item, dict):
                value = item.get(key)
                if isinstance(value, str) and value:
                    return value
                below.extend(item.values())
            elif isinstance(item, list):
                below.extend(item)
        level = below
    return ""


def load_run(
    path: str | Path,
    *,
    keep: int | None = None,
    pick: int | None = None,
    each: Callable[[Step], object] | None = None,
    max_bytes: int = MAX_BYTES,
) -> Run:
    """Load a trajectory file as a run (with ``keep``, only its first and last ``keep``
    steps held; with ``pick``, only that one; with ``each``, none: each is handed to
    it); a file that cannot be read is a usage error."""
    cutter = StepCutter(keep, pick, each)
    try:
        head = scan_trajectory(path, cutter.add, max_bytes=max_bytes)
    except TrajectoryError as exc:
        raise refused(exc) from None
    return cutter.run(head)


def load_trajectory_or_say(path: str | Path, max_bytes: int = MAX_BYTES) -> Trajectory:
    """``load_trajectory``, with a file that cannot be read as a usage error."""
    try:
        return load_trajectory(path, max_bytes=max_bytes)
    except TrajectoryError as exc:
        raise refused(exc) from None


def refused(exc: TrajectoryError) -> Exception:
    """The usage error (the one line ``four`` prints) for a file that cannot be read."""
    from four.cli._errors import UsageError

    if isinstance(exc, TrajectoryTooLarge):
        return UsageError(
            f"{exc.path} is {exc.size / 2**20:.1f} MiB, over the limit of "
            f"{exc.limit / 2**20:.1f} MiB: raise it with --max-size (or FOUR_MAX_SIZE)"
        )
    return UsageError(str(exc))


def max_size(args: argparse.Namespace) -> int:
    """The size limit of trajectory files: ``--max-size``, ``FOUR_MAX_SIZE``, or 256 MiB."""
    from four.cli import _settings as env

    text = getattr(args, "max_size", None) or env.get("FOUR_MAX_SIZE")
    return MAX_BYTES if text is None else env.parse_size(str(text))
