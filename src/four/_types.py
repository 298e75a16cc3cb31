"""The values that flow through the loop: messages, actions, observations, errors.

Everything here is a frozen, slotted record. The four arrows are Protocols over
``returns.result.Result``:

    invoke   G   : history   -> Result[Reply, ModelError]
    parse    V1  : Reply     -> Result[Sequence[Action | Rejected], FormatError | Submitted]
    execute  V2  : Action    -> Result[Observation, Submitted | ExecutionError]
    emit         : (history, Outcome) -> T
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar, runtime_checkable

from four._outcomes import Finished, Outcome
from four._record import record

if TYPE_CHECKING:  # annotations only: `import four` does not load returns
    from returns.result import Result

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"

# --- usage -------------------------------------------------------------------


@record
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


@record
class System:
    content: str


@record
class User:
    """A user turn. ``kind`` says what the loop put there, for readers of trajectories
    (never sent): ``task``, ``observation`` (text mode), ``format_error``, ``feedback``
    (a check's verdict), or ``text``. ``returncode`` is an observation's exit status."""

    content: str
    kind: str = "text"
    returncode: int | None = None


@record
class ToolCall:
    """One tool call of an assistant turn. ``arguments`` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str


@record
class Assistant:
    """A model reply, as stored in the history.

    ``reasoning`` is kept apart from ``content`` and never parsed for actions.
    ``thinking`` holds provider thinking blocks verbatim, to be sent back in order.
    ``usage`` and ``finish_reason`` are metadata: kept in the trajectory, not sent.
    """

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    thinking: tuple[Mapping[str, JSON], ...] = ()
    finish_reason: str | None = "stop"
    usage: Usage | None = None
    model: str = ""

    @property
    def truncated(self) -> bool:
        """The provider cut the reply off at its token limit."""
        return self.finish_reason == "length"


@record
class ToolResult:
    """The answer to one tool call, paired with it by ``tool_call_id``. ``kind`` (never
    sent): ``observation``, ``rejected`` (V1 could not read the call), ``format_error``,
    ``submission``, ``error``, or ``skipped`` (the run ended before this call)."""

    tool_call_id: str
    content: str
    name: str = "bash"
    kind: str = "observation"
    returncode: int | None = None


Message: TypeAlias = System | User | Assistant | ToolResult
Reply: TypeAlias = Assistant
"""What G returns: the assistant message, with its usage."""

# --- actions and observations --------------------------------------------------


@record
class Action:
    """A command to execute. ``call_id`` pairs it with the tool call it came from."""

    command: str
    call_id: str | None = None


@record
class Rejected:
    """A tool call V1 could not read. The loop answers it with ``error``; nothing runs."""

    call_id: str
    error: str


@record
class Observation:
    """What executing an action showed. ``content`` is what the model sees."""

    content: str
    returncode: int | None = None
    timed_out: bool = False
    duration: float = 0.0


# --- errors (the Err sides of the arrows) ----------------------------------------


@record
class FormatError:
    """V1 could not read the reply. ``feedback`` goes back to the model verbatim."""

    feedback: str


@record
class Submitted:
    """The agent claims completion; ``output`` is its final submission."""

    output: str


@record
class ExecutionError:
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
        return self in _TRANSIENT


_TRANSIENT = frozenset(
    {
        ModelErrorKind.RATE_LIMIT,
        ModelErrorKind.TIMEOUT,
        ModelErrorKind.CONNECTION,
        ModelErrorKind.SERVER,
        ModelErrorKind.OVERLOADED,
    }
)


@record
class ModelError:
    """G failed. ``usage`` counts what was billed before the failure."""

    kind: ModelErrorKind
    message: str
    status: int | None = None
    retry_after: float | None = None
    attempts: int = 1
    usage: Usage | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@record
class Feedback:
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


class Emit(Protocol[T_co]):
    """emit: the finished run to whatever the caller wants back (a path, usually)."""

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> T_co: ...


@record
class RunInfo:
    """What a run was started with: stored at the head of its trajectory."""

    components: Mapping[str, JSON]
    max_steps: int
    max_format_errors: int
    started_at: float
    resumed_from: int = 0


@record
class RunStats:
    """What a run used, known when it ends."""

    steps: int
    usage: Usage
    started_at: float
    ended_at: float
    format_errors: int = 0
    extra: Mapping[str, JSON] = MappingProxyType({})

    @property
    def wall_time(self) -> float:
        return self.ended_at - self.started_at


class Sink(Protocol[T_co]):
    """One run's record, written as the run goes (see ``Recorder``)."""

    def append(self, message: Message, /) -> None: ...

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> T_co: ...


@runtime_checkable
class Recorder(Protocol[T_co]):
    """An emit that can also record each message the moment it joins the history."""

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> T_co: ...

    def open(self, info: RunInfo, /) -> Sink[T_co]: ...


class Judge(Protocol):
    """One run's judge of the agent's submissions (made by a ``Verify``)."""

    def __call__(self, history: Sequence[Message], claim: Finished, /) -> Outcome | Feedback: ...

    def record(self) -> Mapping[str, JSON]:
        """What the judging left, for the trajectory (verdicts, receipts, their head)."""
        ...


class Watch(Protocol):
    """A supervisor's view of a run (see ``four.batch``): told of progress, asked whether
    to stop. ``stopped`` is asked before each model call and each action."""

    def beat(self) -> None: ...

    def stopped(self) -> Outcome | None: ...


class Verify(Protocol):
    """The ``check=`` of ``run``: makes a fresh judge for each run, over its environment."""

    def open(self, env: Execute, /) -> Judge: ...


@runtime_checkable
class Closeable(Protocol):
    """A component holding resources (a shell, a container) that ``run`` releases."""

    def close(self) -> None: ...
