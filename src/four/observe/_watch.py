"""What state each run of a folder is in, read from its files and its driver's process.

Reading (``observe``: the stream, the sealed document, the watch log beside them, and
``/proc`` for the driver) is kept apart from judging (``classify``: a pure function of
what was read, the time and a ``Policy``), so the judgement is testable on files alone.
"""

from __future__ import annotations

import itertools
import json
import platform
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, TypeAlias, cast

from four._checked import Checked, check_fields, checked
from four._files import ANY_SIZE, MAX_BYTES, open_regular, read_regular, walk
from four._types import JSON, Assistant, Message, ToolResult, User
from four.batch._result import read_saved
from four.trajectory._driver import Driver, boot_id, process_start
from four.trajectory._load import stream_lines
from four.trajectory._record import Beat, Info, Line, Start, message_of

State: TypeAlias = Literal[
    "finished", "running", "stalled", "over_budget", "looping", "dead", "failed", "resumed"
]
"""``failed``: sealed with a model error worth another attempt (a rate limit, a server
error...); ``resumed``: a later attempt continues it, so it needs nothing more."""

STATES: tuple[State, ...] = cast(tuple[State, ...], State.__args__)  # type: ignore[attr-defined]
TROUBLE: frozenset[State] = frozenset({"stalled", "over_budget", "looping", "dead", "failed"})
"""The states that need someone (``four watch --rescue``) to act."""

Process: TypeAlias = Literal["alive", "gone", "elsewhere"]
"""The driver, as seen from here: running, gone (or its pid reused: another start time),
or on another host or boot (then only its heartbeats say whether it lives)."""

WATCH_LOG = "watch.jsonl"
"""What ``four watch --rescue`` did, one JSON line an action, in each run's folder: the
manifest that links a run to the attempt that resumed it."""

NEVER_RETRIED = frozenset(
    {"authentication", "permission", "not_found", "bad_request", "context_window", "budget"}
)
"""Model errors that another attempt would meet again."""


@dataclass(frozen=True, slots=True)
class Policy:
    """When a run counts as stalled, looping or over budget.

    ``stall_factor`` times the run's median step without a new message is a stall, never
    less than ``stall_floor`` seconds; ``repeats`` identical turns (same reply, same
    output) in a row, or ``not_found`` replies of ``command not found`` (exit 127) in a
    row, a loop; past ``wall`` seconds (or the run's own ``--timeout`` plus ``grace``) it
    is over budget; a driver on another host is dead after ``lost`` seconds without a
    heartbeat. ``attempts``: how many attempts a run may have in all.

    >>> Policy(stall_factor=0)
    Traceback (most recent call last):
    ...
    ValueError: Policy: stall_factor must be above 0, e.g. 5; got 0
    """

    stall_factor: float = 5.0
    stall_floor: float = 60.0
    repeats: int = 4
    not_found: int = 5
    wall: float | None = None
    grace: float = 30.0
    lost: float = 120.0
    attempts: int = 3

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        for name in ("stall_factor", "stall_floor", "repeats", "not_found", "lost", "attempts"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"Policy: {name} must be above 0, e.g. 5; got {value!r}")
        if self.wall is not None and not self.wall > 0:
            raise ValueError(
                f"Policy: wall must be above 0 seconds (or none at all); got {self.wall!r}"
            )
        if self.grace < 0:
            raise ValueError(f"Policy: grace must be 0 or more seconds; got {self.grace!r}")


@dataclass(frozen=True, slots=True)
class Observed(Checked):
    """One run as its files show it. Times are epoch seconds."""

    stream: Path
    sealed: bool
    outcome: str | None
    driver: Driver | None
    started_at: float
    message_times: tuple[float, ...]  # each message's, since the run began
    last_sign: float  # the last message, heartbeat or write (epoch seconds)
    messages: tuple[Message, ...]
    timeout: float | None  # the run's own --timeout
    attempt: int
    resumes: str | None  # the stream of the run this one continues
    resumed_by: str | None = None  # a later attempt, from the watch log or its stream
    tries: int = 0  # attempts a watcher started for it
    steps: int = 0  # model replies so far (of a sealed run, as its document says)
    settings: Mapping[str, JSON] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.stream.name.removesuffix(".jsonl")


@dataclass(frozen=True, slots=True)
class Verdict(Checked):
    """A run's state and why, in one line."""

    run: Observed
    state: State
    why: str

    def to_json(self) -> dict[str, JSON]:
        driver = self.run.driver
        return {
            "run": str(self.run.stream),
            "state": self.state,
            "why": self.why,
            "outcome": self.run.outcome,
            "attempt": self.run.attempt,
            "steps": self.run.steps,
            "driver": driver.to_json() if driver else None,
            "resumes": self.run.resumes,
            "resumed_by": self.run.resumed_by,
        }


# --- judging ---------------------------------------------------------------------------


@checked
def classify(run: Observed, process: Process, now: float, policy: Policy) -> Verdict:
    """The state of one run: a pure function of what was read, the driver's state and
    the time.

    >>> from pathlib import Path
    >>> run = Observed(Path("r.jsonl"), True, "exit:task_complete", None, 0.0, (), 0.0,
    ...                (), None, 1, None)
    >>> classify(run, "gone", 100.0, Policy()).state
    'finished'
    """
    if run.resumed_by:
        return Verdict(run, "resumed", f"attempt {run.attempt + 1} continues it")
    if run.sealed:
        if not retryable(run.outcome):
            return Verdict(run, "finished", run.outcome or "sealed")
        if run.attempt + run.tries >= policy.attempts:
            spent = f"{run.attempt + run.tries} attempts of {policy.attempts}: no retry left"
            return Verdict(run, "finished", f"{run.outcome} ({spent})")
        return Verdict(run, "failed", f"{run.outcome}: worth another attempt")
    quiet = now - run.last_sign
    if process == "gone":
        who = f"pid {run.driver.pid}" if run.driver else "its driver"
        return Verdict(run, "dead", f"not sealed, and {who} is gone")
    if process == "elsewhere" and quiet > policy.lost:
        host = run.driver.host if run.driver else "?"
        return Verdict(run, "dead", f"no heartbeat from {host} for {quiet:.0f} s")
    age = now - run.started_at
    budget = _budget(run, policy)
    if budget is not None and age > budget:
        return Verdict(run, "over_budget", f"running {age:.0f} s, over its {budget:.0f} s")
    loop = looping(run.messages, policy)
    if loop:
        return Verdict(run, "looping", loop)
    replies = [
        t for t, m in zip(run.message_times, run.messages, strict=True) if isinstance(m, Assistant)
    ]
    limit = stall_limit(replies, policy)
    idle = now - (run.started_at + (run.message_times[-1] if run.message_times else 0.0))
    if idle > limit:
        return Verdict(run, "stalled", f"no step for {idle:.0f} s (limit {limit:.0f} s)")
    return Verdict(run, "running", f"last step {idle:.0f} s ago")


def judge(run: Observed, now: float, policy: Policy) -> Verdict:
    """``classify`` with the driver's state read from here (a sealed run's is not asked)."""
    return classify(run, "gone" if run.sealed else driver_state(run.driver), now, policy)


def stall_limit(times: Sequence[float], policy: Policy) -> float:
    """How long a run may go without a new message: ``stall_factor`` times its median
    step (the time from one reply to the next: ``times`` are the replies'), at least
    ``stall_floor``.

    >>> stall_limit([0.0, 10.0, 20.0, 30.0, 30.5], Policy(stall_factor=5, stall_floor=1))
    50.0
    """
    gaps = [b - a for a, b in itertools.pairwise(times) if b > a]
    if not gaps:
        return policy.stall_floor
    return max(policy.stall_floor, policy.stall_factor * statistics.median(gaps))


def looping(messages: Sequence[Message], policy: Policy) -> str | None:
    """Why the run's last turns are a loop, or None: the same reply answered by the same
    output ``repeats`` times in a row, or ``not_found`` replies in a row that ran a
    command that does not exist (exit 127).

    >>> from four import Assistant, User
    >>> turn = [Assistant("```bash\\nls\\n```"), User("x", "observation", 0)]
    >>> looping(turn * 4, Policy())
    'the same command and output 4 times in a row'
    """
    turns = list(_turns(messages))
    same = 0
    for turn in reversed(turns):
        if turn != turns[-1]:
            break
        same += 1
    if turns and same >= policy.repeats:
        return f"the same command and output {same} times in a row"
    missing = 0
    for _, _, code in reversed(turns):
        if code != 127:
            break
        missing += 1
    if missing >= policy.not_found:
        return f"{missing} commands in a row not found (exit 127)"
    return None


def _turns(messages: Sequence[Message]) -> Iterator[tuple[str, str, int | None]]:
    """(reply, its observations, the last return code), one per answered reply."""
    reply: Assistant | None = None
    seen: list[str] = []
    code: int | None = None
    for m in messages:
        if isinstance(m, Assistant):
            if reply is not None and seen:
                yield reply.content + repr(reply.tool_calls), "\n".join(seen), code
            reply, seen, code = m, [], None
        elif reply is not None and isinstance(m, User | ToolResult) and m.kind == "observation":
            seen.append(m.content)
            code = m.returncode
    if reply is not None and seen:
        yield reply.content + repr(reply.tool_calls), "\n".join(seen), code


def _budget(run: Observed, policy: Policy) -> float | None:
    own = run.timeout + policy.grace if run.timeout else None
    if own is not None and policy.wall is not None:
        return min(own, policy.wall)
    return own if own is not None else policy.wall


def retryable(outcome: str | None) -> bool:
    """Whether a sealed run's outcome is worth another attempt: a model error that may
    pass (a rate limit, a server error; not a bad key or request), or a stop by a
    watcher of a run that died or stalled.

    >>> retryable("model_error: rate_limit: slow down"), retryable("model_error: authentication: x")
    (True, False)
    """
    text = outcome or ""
    if text.startswith(("stopped: dead:", "stopped: stalled:")):
        return True
    if not text.startswith("model_error: "):
        return False
    return text.removeprefix("model_error: ").split(":", 1)[0].strip() not in NEVER_RETRIED


# --- reading ---------------------------------------------------------------------------


def driver_state(driver: Driver | None) -> Process:
    """Whether ``driver`` still runs: its pid alive with the start time recorded (a
    reused pid has another). A driver of another host, or a run that names none, is
    ``elsewhere``: only its heartbeats can tell."""
    if driver is None or driver.host != platform.node():
        return "elsewhere"
    if driver.boot is not None and driver.boot != boot_id():
        return "gone"  # this host was restarted since
    started = process_start(driver.pid)
    if started is None or (driver.start is not None and started != driver.start):
        return "gone"
    return "gone" if _zombie(driver.pid) else "alive"


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] == b"Z"


def streams(folder: Path, skipped: list[str] | None = None) -> list[Path]:
    """Every run stream (``*.jsonl`` but the watch logs) under ``folder``, sorted; why
    each ``*.jsonl`` that is not a regular file is not read goes to ``skipped``."""
    found: list[Path] = []
    for listing in walk(folder):
        found += (listing.folder / n for n in listing.files if n.endswith(".jsonl"))
        if skipped is not None:
            skipped += (why for name, why in listing.others if name.endswith(".jsonl"))
    return sorted(p for p in found if p.name != WATCH_LOG)


def observe(stream: Path) -> Observed | None:
    """One run read from its stream (and its sealed ``.json`` if there); None for a
    ``.jsonl`` that is no run of ours (a batch manifest...). Of a sealed run, only the
    stream's start record and the document's head are read."""
    document = stream.with_suffix(".json")
    try:
        mtime = stream.stat().st_mtime
        text = _start_line(stream) if document.is_file() else _whole(stream)
    except (OSError, ValueError):  # Unreadable: not a regular file, or too large
        return None
    info: Info | None = None
    times: list[float] = []
    messages: list[Message] = []
    outcome: str | None = None
    last_beat = 0.0
    for record in stream_lines(text):
        if isinstance(record, Start):
            info = record.info
        elif isinstance(record, Line):
            message = message_of(record.message)
            if message is not None:
                messages.append(message)
                times.append(record.t or 0.0)
        elif isinstance(record, Beat):
            last_beat = record.t or 0.0
        else:
            outcome = record.outcome or "sealed"
    if info is None:
        return None
    sealed = outcome is not None or document.is_file()
    steps = sum(1 for m in messages if isinstance(m, Assistant))
    if sealed and not messages:
        saved = read_saved(document)
        if saved is not None:
            outcome, steps = outcome or saved.outcome, saved.steps
        outcome = outcome or "sealed"
    start = mtime if info.started_at is None else info.started_at
    cli = info.components.get("cli")
    settings: Mapping[str, JSON] = cli if isinstance(cli, dict) else {}
    timeout, attempt, resumes = (settings.get(k) for k in ("timeout", "attempt", "resumes"))
    last = max([start + last_beat, start + (times[-1] if times else 0.0), mtime])
    return Observed(
        stream,
        sealed,
        outcome,
        Driver.from_json(info.driver),
        start,
        tuple(times),
        last,
        tuple(messages),
        float(timeout) if isinstance(timeout, int | float) and timeout else None,
        attempt if type(attempt) is int else 1,
        resumes if isinstance(resumes, str) else None,
        settings=settings,
        steps=steps,
    )


def _start_line(stream: Path) -> str:
    """The stream's first line: its start record (the run's settings and driver)."""
    with open_regular(stream, max_bytes=ANY_SIZE, follow=False) as f:
        return f.readline(MAX_BYTES).decode("utf-8", errors="replace")


def _whole(stream: Path) -> str:
    return read_regular(stream, follow=False).decode("utf-8", errors="replace")


def watch_log(folder: Path) -> list[dict[str, JSON]]:
    """The actions recorded in ``folder/watch.jsonl`` (a line cut short is skipped)."""
    try:
        text = read_regular(folder / WATCH_LOG, follow=False).decode("utf-8", errors="replace")
    except (OSError, ValueError):  # missing, or not a regular file (the walk names it)
        return []
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


@checked
def survey(folder: Path, skipped: list[str] | None = None) -> list[Observed]:
    """Every run under ``folder``, each linked to the attempt that continues it; why each
    stream that is not a regular file is not read goes to ``skipped``."""
    runs = [r for r in (observe(p) for p in streams(folder, skipped)) if r is not None]
    later = {r.resumes: str(r.stream) for r in runs if r.resumes}
    logs: dict[Path, list[dict[str, JSON]]] = {}
    out = []
    for r in runs:
        if r.stream.parent not in logs:
            logs[r.stream.parent] = watch_log(r.stream.parent)
        successor = later.get(str(r.stream.resolve())) if later else None
        out.append(linked(r, successor, logs[r.stream.parent]))
    return out


def linked(run: Observed, successor: str | None, log: Sequence[Mapping[str, JSON]]) -> Observed:
    """The run with the attempt that continues it: a stream that resumes it, else an
    attempt a watcher started (its log says) whose process still runs; and how many
    attempts were started for it (one that died before writing counts too)."""
    started = [e for e in log if e.get("action") == "resumed" and e.get("run") == run.stream.name]
    if successor is None:
        for entry in started:
            pid, start = entry.get("pid"), entry.get("pid_start")
            if type(pid) is int and process_start(pid) == start is not None:
                successor = f"pid {pid}, starting"
    return replace(run, resumed_by=successor, tries=len(started))


def successor_of(stream: Path) -> str | None:
    """A stream beside ``stream`` whose run resumes it (read from their start records)."""
    wanted = json.dumps(str(stream.resolve()))[1:-1]
    for other in stream.parent.glob("*.jsonl"):
        if other == stream or other.name == WATCH_LOG:
            continue
        try:
            head = _start_line(other)
        except (OSError, ValueError):
            continue
        if wanted in head:
            found = observe(other)
            if found is not None and found.resumes == str(stream.resolve()):
                return str(other)
    return None


def logged(stream: Path, action: str) -> bool:
    """Whether the watch log beside ``stream`` records ``action`` for it."""
    return any(
        e.get("action") == action and e.get("run") == stream.name for e in watch_log(stream.parent)
    )
