"""The values that flow through the loop (messages, actions, observations, errors), each a
frozen, slotted record, and the four arrows over them (``four``'s docstring), Protocols
over ``returns.result.Result``."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, TypeVar, get_args, runtime_checkable

from four._checked import Checked as Checked  # four._types.Checked, where records import it
from four._checked import check_fields
from four._outcomes import Finished, Outcome

if TYPE_CHECKING:  # annotations only: `import four` does not load returns
    from returns.result import Result

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"


EXIT_SIGNAL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""The line with which an agent submits: alone on a line of a reply, or as the first line
of a command's output (the rest of the output is the submission)."""

UserKind: TypeAlias = Literal["task", "observation", "format_error", "feedback", "text"]
"""What the loop put in a user turn (for readers of trajectories; never sent)."""

ToolResultKind: TypeAlias = Literal[
    "observation", "rejected", "format_error", "feedback", "submission", "error", "skipped"
]
"""What answered a tool call (for readers of trajectories; never sent)."""

FinishReason: TypeAlias = Literal["stop", "length", "tool_calls", "content_filter", "other"]
"""Why the provider ended a reply; a reason outside this set is stored as ``other``."""


_USER_KINDS: dict[object, UserKind] = {k: k for k in get_args(UserKind)}
_TOOL_RESULT_KINDS: dict[object, ToolResultKind] = {k: k for k in get_args(ToolResultKind)}
_FINISH_REASONS: dict[object, FinishReason | None] = {
    **{k: k for k in get_args(FinishReason)},
    "function_call": "tool_calls",
    None: None,
}


def user_kind(value: object) -> UserKind:
    """A stored user turn's kind in our closed set (anything else is plain ``text``)."""
    return _USER_KINDS.get(value, "text") if isinstance(value, str) else "text"


def tool_result_kind(value: object) -> ToolResultKind:
    """A stored tool result's kind in our closed set (anything else is an observation)."""
    return _TOOL_RESULT_KINDS.get(value, "observation") if isinstance(value, str) else "observation"


def finish_reason(value: object) -> FinishReason | None:
    """A provider's finish reason in our closed set (``function_call`` is ``tool_calls``).

    >>> finish_reason("length"), finish_reason("end_turn"), finish_reason(None)
    ('length', 'other', None)
    """
    return _FINISH_REASONS.get(value, "other") if isinstance(value, str | None) else "other"


# --- usage -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of model calls. ``cost`` is None when the price is unknown.

    >>> (Usage(10, 2, 0.01) + Usage(5, 1, None)).cost_unknown_calls
    1
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    calls: int = 1
    # Calls whose price was unknown; their cost is not in ``cost``.
    cost_unknown_calls: int = 0

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        if self.cost is None and self.calls and not self.cost_unknown_calls:
            object.__setattr__(self, "cost_unknown_calls", self.calls)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def known_cost(self) -> float:
        return self.cost or 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            (self.cost or 0.0) + (other.cost or 0.0),  # known_cost, without two calls
            self.calls + other.calls,
            self.cost_unknown_calls + other.cost_unknown_calls,
        )


NO_USAGE = Usage(calls=0)

# --- messages ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class System(Checked):
    content: str


@dataclass(frozen=True, slots=True)
class User(Checked):
    """A user turn; ``kind``, ``returncode`` and ``command`` are for readers, never sent."""

    content: str
    kind: UserKind = "text"
    returncode: int | None = None
    command: str | None = field(default=None, compare=False)  # for readers only


@dataclass(frozen=True, slots=True)
class ToolCall(Checked):
    """One tool call of an assistant turn. ``arguments`` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str  # JSON text: an object a client decoded goes back to text (json.dumps)


@dataclass(frozen=True, slots=True)
class Sampling(Checked):
    """How a model call samples (None: the provider's default temperature, no seed).

    >>> Sampling(0.7, 42)
    Sampling(temperature=0.7, seed=42)
    """

    temperature: float | None = None
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class CycleBreak(Checked):
    """What a cycle breaker changed in the call that made a reply (docs/loop.md)."""

    reason: str
    repeats: int = 0
    dropped: tuple[int, ...] = ()
    sampling: Sampling | None = None
    discarded: int = 0


@dataclass(frozen=True, slots=True)
class Assistant(Checked):
    """A model reply, as stored in the history (its fields: docs/loop.md)."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    thinking: tuple[Mapping[str, JSON], ...] = ()
    finish_reason: FinishReason | None = "stop"
    usage: Usage | None = None
    model: str = ""
    cycle_break: CycleBreak | None = field(default=None, compare=False)  # for readers only

    @property
    def truncated(self) -> bool:
        """The provider cut the reply off at its token limit."""
        return self.finish_reason == "length"


@dataclass(frozen=True, slots=True)
class ToolResult(Checked):
    """The answer to one tool call, paired by ``tool_call_id``; ``kind``, ``returncode``
    and ``command`` are for readers, never sent."""

    tool_call_id: str
    content: str
    name: str = "bash"
    kind: ToolResultKind = "observation"
    returncode: int | None = None
    command: str | None = field(default=None, compare=False)  # for readers only


Message: TypeAlias = System | User | Assistant | ToolResult
Reply: TypeAlias = Assistant
"""What G returns: the assistant message, with its usage."""


def unanswered(history: Sequence[Message]) -> list[ToolCall]:
    """Tool calls of the last assistant turn that have no result yet: only the last turn
    can be open, as the loop answers every call before the next G call.

    >>> unanswered([User("hi")])
    []
    """
    answered: set[str] = set()
    for message in reversed(history):
        if isinstance(message, ToolResult):
            answered.add(message.tool_call_id)
        elif isinstance(message, Assistant):
            return [call for call in message.tool_calls if call.id not in answered]
    return []


# --- actions and observations --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Action(Checked):
    """A command to execute. ``call_id`` pairs it with the tool call it came from."""

    command: str
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Rejected(Checked):
    """A tool call V1 could not read. The loop answers it with ``error``; nothing runs."""

    call_id: str
    error: str


@dataclass(frozen=True, slots=True)
class Observation(Checked):
    """What executing an action showed. ``content`` is what the model sees."""

    content: str
    returncode: int | None = None
    timed_out: bool = False
    duration: float = 0.0


# --- errors (the Err sides of the arrows) ----------------------------------------


_OUTPUT = re.compile(r"<output>\n?(.*?)\n?</output>", re.S)


def output_of(content: str) -> str:
    """The command's output in an observation's text (as ``execute``'s ``observe`` writes it); the
    text itself when it holds none.

    >>> output_of("<returncode>0</returncode>\\n<output>\\nhi\\n</output>")
    'hi'
    """
    match = _OUTPUT.search(content)
    return match.group(1) if match else content


@dataclass(frozen=True, slots=True)
class FormatError(Checked):
    """V1 could not read the reply. ``feedback`` goes back to the model verbatim."""

    feedback: str


@dataclass(frozen=True, slots=True)
class Submitted(Checked):
    """The agent claims completion; ``output`` is its final submission."""

    output: str


@dataclass(frozen=True, slots=True)
class ExecutionError(Checked):
    """V2 cannot go on (a dead container, a missing shell). Ends the run."""

    message: str


class ModelErrorKind(enum.StrEnum):
    RATE_LIMIT = "rate_limit"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    SERVER = "server"
    OVERLOADED = "overloaded"
    AUTHENTICATION = "authentication"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    BAD_REQUEST = "bad_request"
    CONTEXT_WINDOW = "context_window"
    BUDGET = "budget"
    OTHER = "other"

    @property
    def transient(self) -> bool:
        """Worth another attempt after a wait."""
        return self in ("rate_limit", "timeout", "connection", "server", "overloaded")


@dataclass(frozen=True, slots=True)
class ModelError(Checked):
    """G failed. ``usage`` counts what was billed before the failure."""

    kind: ModelErrorKind
    message: str
    status: int | None = None
    retry_after: float | None = None
    attempts: int = 1
    usage: Usage | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True, slots=True)
class Feedback(Checked):
    """A judgement that the run goes on: ``text`` goes to the model, and ``steps`` more
    G calls are allowed (more work admitted)."""

    text: str
    steps: int = 0


# --- the four arrows ----------------------------------------------------------------

T_co = TypeVar("T_co", covariant=True)


class Invoke(Protocol):
    """G: the history so far to the model's reply."""

    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]: ...


class Parse(Protocol):
    """V1: a reply to the actions it asks for."""

    def __call__(
        self, reply: Reply, /
    ) -> Result[Sequence[Action | Rejected], FormatError | Submitted]: ...


class Execute(Protocol):
    """V2: one action to what it showed, or to the end of the run."""

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]: ...


@runtime_checkable
class Sampled(Protocol):
    """A G whose sampling can be set for a call (docs/loop.md)."""

    @property
    def sampling(self) -> Sampling: ...

    def sampled(self, sampling: Sampling, /) -> Invoke: ...


class AsyncInvoke(Protocol):
    """G for ``arun``: the history so far to the model's reply, awaited."""

    async def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]: ...


class AsyncExecute(Protocol):
    """V2 for ``arun``: one action to what it showed, or to the end of the run, awaited.
    Cancelling the awaiting task must stop what the action started."""

    async def __call__(
        self, action: Action, /
    ) -> Result[Observation, Submitted | ExecutionError]: ...


class Emit(Protocol[T_co]):
    """emit: the finished run to whatever the caller wants back (a path, usually)."""

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> T_co: ...


@dataclass(frozen=True, slots=True)
class RunInfo(Checked):
    """What a run was started with: stored at the head of its trajectory."""

    components: Mapping[str, JSON]
    max_steps: int
    max_format_errors: int
    started_at: float
    resumed_from: int = 0


@dataclass(frozen=True, slots=True)
class RunStats(Checked):
    """What a run used, known when it ends."""

    steps: int
    usage: Usage
    started_at: float
    ended_at: float
    format_errors: int = 0
    extra: Mapping[str, JSON] = field(default_factory=dict)

    @property
    def wall_time(self) -> float:
        return self.ended_at - self.started_at


# --- what the loop tells a watch that listens (``Watch.hear``; its clock's times) --------


@dataclass(frozen=True, slots=True)
class RunBegan(Checked):
    """The run starts: what it was started with (its ``started_at`` included)."""

    info: RunInfo


@dataclass(frozen=True, slots=True)
class ModelCalled(Checked):
    """G answered (a reply, or an error). ``history`` is what it was sent (the run's own
    list: read it before ``hear`` returns, never keep it)."""

    reply: Reply | ModelError
    history: Sequence[Message]
    started: float
    ended: float


@dataclass(frozen=True, slots=True)
class ActionRan(Checked):
    """V2 ran one action; its answer goes to ``position`` of the history (if it has one)."""

    action: Action
    result: Observation | Submitted | ExecutionError
    started: float
    ended: float
    position: int


@dataclass(frozen=True, slots=True)
class Judged(Checked):
    """The check judged a claim (or, at the end, the final state): its judgement, and the
    judge's record after it (``Judge.record``: the verdict log, with what was new)."""

    judgement: Outcome | Feedback
    record: Mapping[str, JSON]
    started: float
    ended: float


@dataclass(frozen=True, slots=True)
class RunEnded(Checked):
    """The run ended (``stats.ended_at``), told once its record was emitted, or failed
    to be."""

    outcome: Outcome
    stats: RunStats


Event: TypeAlias = RunBegan | ModelCalled | ActionRan | Judged | RunEnded
"""Everything a listening watch hears, in the order it happens."""


class Sink(Protocol[T_co]):
    """One run's record, written as the run goes (see ``Recorder``)."""

    def append(self, message: Message, /) -> None: ...

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> T_co: ...


class AsyncSink(Sink[T_co], Protocol[T_co]):
    """A sink that ``arun`` seals on its event loop, awaiting ``aclose`` (a sink with no
    ``aclose`` is closed in a worker thread)."""

    async def aclose(
        self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /
    ) -> T_co: ...


@runtime_checkable
class Recorder(Emit[T_co], Protocol[T_co]):
    """An emit that can also record each message the moment it joins the history."""

    def open(self, info: RunInfo, /) -> Sink[T_co]: ...


class Judge(Protocol):
    """One run's judge of the agent's submissions, made by a ``Verify``; it may also
    have ``at_start`` and ``at_end`` (docs/loop.md)."""

    def __call__(self, history: Sequence[Message], claim: Finished, /) -> Outcome | Feedback: ...

    def record(self) -> Mapping[str, JSON]:
        """What the judging left, for the trajectory (verdicts, receipts, their head)."""
        ...


class Watch(Protocol):
    """A supervisor's view of a run: told of progress, asked before each model call and
    each action whether to stop; it may also hear each event (docs/loop.md)."""

    def beat(self) -> None: ...

    def stopped(self) -> Outcome | None: ...


class Verify(Protocol):
    """The ``check=`` of ``run``: makes a fresh judge for each run, over its environment."""

    def open(self, env: Execute, /) -> Judge: ...


@runtime_checkable
class Closeable(Protocol):
    """A component holding resources (a shell, a container) that ``run`` releases."""

    def close(self) -> None: ...


@runtime_checkable
class AsyncCloseable(Protocol):
    """An async component holding resources, released by ``arun`` (``aclose`` is
    preferred to ``close`` when a component has both)."""

    async def aclose(self) -> None: ...
