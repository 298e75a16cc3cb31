"""The loop's rules, written once for both drivers (``run`` and ``arun`` in ``_loop``).

``evaluate`` is a generator: it yields each call of a component (``CallG``, ``CallV1``,
``CallV2``, ``CallCheck``, ``CallLastJudgement``), the driver makes the call (plainly, or awaited) and sends
back what the component returned, and the generator's return value is the outcome. So
the order of the calls, what answers every tool call, when format errors count and when
the run ends are decided here and nowhere else; the drivers only call and record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeAlias, TypeVar, cast, get_args

from returns.result import Failure, Success

from four._describe import describe
from four._history import unanswered
from four._outcomes import (
    Component,
    CostLimitReached,
    Crashed,
    ExecutionFailed,
    Finished,
    Interrupted,
    ModelFailed,
    Outcome,
    RepeatedFormatError,
    StepsExhausted,
)
from four._types import (
    NO_USAGE,
    Action,
    Assistant,
    Emit,
    Execute,
    ExecutionError,
    Feedback,
    FormatError,
    Judge,
    Message,
    ModelError,
    ModelErrorKind,
    Observation,
    Recorder,
    Rejected,
    Reply,
    RunInfo,
    RunStats,
    Sink,
    Submitted,
    System,
    ToolResult,
    ToolResultKind,
    Usage,
    User,
    Verify,
    Watch,
)

T = TypeVar("T")

CUT_OFF = FormatError(
    "Your reply was cut off at the token limit, so nothing in it was executed. "
    "Reply again, shorter."
)
SKIPPED = "Not executed: the run ended at an earlier call of this turn."


# --- what the rules ask the driver to call ---------------------------------------------


@dataclass(frozen=True, slots=True)
class CallG:
    history: Sequence[Message]


@dataclass(frozen=True, slots=True)
class CallV1:
    reply: Reply


@dataclass(frozen=True, slots=True)
class CallV2:
    action: Action


@dataclass(frozen=True, slots=True)
class CallCheck:
    judge: Judge
    history: Sequence[Message]
    claim: Finished


@dataclass(frozen=True, slots=True)
class CallLastJudgement:
    """The judge's ``at_end``, for a run that ended ``claim`` (the drivers call it as
    they call a ``CallCheck``: ``judge(history, claim)``)."""

    judge: Callable[[Sequence[Message], Outcome], object]
    history: Sequence[Message]
    claim: Outcome


FeedbackKind: TypeAlias = Literal["feedback", "format_error"]
"""Kinds of feedback the loop gives (both a ``UserKind`` and a ``ToolResultKind``)."""

Call: TypeAlias = CallG | CallV1 | CallV2 | CallCheck | CallLastJudgement
Rules: TypeAlias = Generator[Call, object, Outcome]
"""``evaluate``: yields calls, is sent what each returned, returns the outcome."""


# --- what stops a turn ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllRejected:
    """Every tool call of the turn was rejected by V1 (each is answered with its error):
    no progress, so it counts as a format error."""

    feedback: str


TurnStop: TypeAlias = Outcome | FormatError | Feedback | AllRejected
"""Why a turn stopped before its actions all ran: the run ends (an ``Outcome``), the
model is told its reply could not be read, or the check's verdict goes back to it."""


# --- failures of the components themselves ---------------------------------------------


class ComponentRaised(Exception):
    """A component raised ``error``; the run ends ``crashed``, then ``error`` propagates."""

    def __init__(self, component: Component, error: Exception) -> None:
        super().__init__(component, error)
        self.component, self.error = component, error


class WrongReturn(TypeError):
    """A component returned something its arrow does not allow."""

    def __init__(self, component: Component, value: object, expected: str) -> None:
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        super().__init__(
            f"{component} returned {type(value).__name__} {shown}, not {expected}: "
            f"wrap the value in returns.result.Success or Failure"
        )
        self.component = component


def ending(exc: BaseException) -> tuple[Outcome, BaseException]:
    """The outcome of a run that an exception ended, and the exception to raise after it
    is saved: a component's own error, ``crashed``; Ctrl-C, a cancelled task or another
    ``BaseException`` that is no error, ``interrupted``."""
    if isinstance(exc, ComponentRaised):
        return Crashed(exc.component, f"{type(exc.error).__name__}: {exc.error}"), exc.error
    if isinstance(exc, WrongReturn):
        return Crashed(exc.component, f"TypeError: {exc}"), exc
    if not isinstance(exc, Exception):
        return Interrupted(type(exc).__name__), exc
    return Crashed("loop", f"{type(exc).__name__}: {exc}"), exc


# --- one run's state -------------------------------------------------------------------


@dataclass(slots=True)
class RunState(Generic[T]):
    """Everything one run knows as it goes; the rules read and update it."""

    history: list[Message]
    sink: Sink[T]
    info: RunInfo
    judge: Judge | None
    watch: Watch | None
    budget: int
    max_format_errors: int
    steps: int = 0
    format_errors: int = 0
    usage: Usage = NO_USAGE
    tools: Mapping[str, str] = field(default_factory=dict)  # the last reply's, by call id

    def add(self, message: Message) -> None:
        self.history.append(message)
        try:
            self.sink.append(message)
        except Exception as exc:  # saving is emit's part of the run
            raise ComponentRaised("emit", exc) from exc

    def take(self, reply: Reply) -> None:
        """The model's reply joins the history (its usage counted, its tools noted)."""
        if reply.usage is not None:
            self.usage += reply.usage
        self.tools = {c.id: c.name for c in reply.tool_calls}
        self.add(reply)
        self.beat()

    def model_failed(self, error: ModelError) -> Outcome:
        self.usage += error.usage or NO_USAGE  # what a failed call billed still counts
        if error.kind is ModelErrorKind.BUDGET:
            return CostLimitReached(error.message)
        return ModelFailed(str(error))

    def answer(self, action: Action, seen: Observation | Submitted | ExecutionError) -> None:
        """What goes back to the model for one action (a tool call is always answered)."""
        command = action.command  # recorded, so readers never parse the reply again
        if isinstance(seen, Observation):
            if action.call_id:
                self.reply_to(action.call_id, seen.content, "observation", seen.returncode, command)
            else:
                self.add(User(seen.content, "observation", seen.returncode, command))
        elif action.call_id:
            if isinstance(seen, Submitted):
                self.reply_to(action.call_id, seen.output, "submission", None, command)
            else:
                self.reply_to(
                    action.call_id, ExecutionFailed(seen.message).text, "error", None, command
                )

    def reply_to(
        self,
        call_id: str,
        text: str,
        kind: ToolResultKind,
        returncode: int | None = None,
        command: str | None = None,
    ) -> None:
        name = self.tools.get(call_id, "bash")
        self.add(ToolResult(call_id, text, name, kind, returncode, command))

    def tell(self, text: str, kind: FeedbackKind) -> None:
        """Feedback for the model: as each open tool call's result, else as a user turn."""
        pending = unanswered(self.history)
        for call in pending:
            self.add(ToolResult(call.id, text, call.name, kind))
        if not pending:
            self.add(User(text, kind))

    def close_calls(self) -> None:
        """Leave a valid history: every tool call of the last turn answered."""
        for call in unanswered(self.history):
            self.add(ToolResult(call.id, SKIPPED, call.name, "skipped"))

    def beat(self) -> None:
        if self.watch is not None:
            self.watch.beat()

    def stopped(self) -> Outcome | None:
        return self.watch.stopped() if self.watch is not None else None

    def stats(self) -> RunStats:
        extra = {"verdicts": dict(self.judge.record())} if self.judge is not None else {}
        return RunStats(
            self.steps, self.usage, self.info.started_at, time.time(), self.format_errors, extra
        )


# --- the rules --------------------------------------------------------------------------


def evaluate(run: RunState[T]) -> Rules:
    """``(G -> V1 -> V2*)*`` until the agent submits, something fails, or the budget of
    G calls is spent. Feedback (format errors, the check's verdicts) goes back to the
    model; ``max_format_errors`` unreadable turns in a row end the run. Then a judge
    with ``at_end`` (``four.checks``'s) may judge the final state once: it returns the
    outcome, changed only when its last judgement applies and says YES."""
    outcome = yield from _steps(run)
    at_end = getattr(run.judge, "at_end", None)
    if callable(at_end):
        outcome = _last_judgement((yield CallLastJudgement(at_end, run.history, outcome)))
    return outcome


def _steps(run: RunState[T]) -> Rules:
    """The steps of ``evaluate``, up to the run's own end."""
    while run.steps < run.budget:
        if (stop := run.stopped()) is not None:
            return stop
        run.steps += 1
        halt = yield from _turn(run)
        if halt is None:  # the turn's actions ran
            run.format_errors = 0
            continue
        if isinstance(halt, Finished) and run.judge is not None:
            halt = _judgement((yield CallCheck(run.judge, run.history, halt)))
        if isinstance(halt, Feedback):  # the check said: not yet, go on
            run.budget += halt.steps
            run.format_errors = 0
            run.tell(halt.text, "feedback")
        elif isinstance(halt, FormatError | AllRejected):
            run.format_errors += 1
            if 0 < run.max_format_errors <= run.format_errors:
                return RepeatedFormatError(halt.feedback)
            if isinstance(halt, FormatError):  # rejected calls have their answers already
                run.tell(halt.feedback, "format_error")
        else:
            return halt
    return StepsExhausted()


def _turn(run: RunState[T]) -> Generator[Call, object, TurnStop | None]:
    """G, then V1, then V2 for each action: None once the actions ran, else what
    stopped the turn."""
    reply = _reply((yield CallG(run.history)))
    if isinstance(reply, ModelError):
        return run.model_failed(reply)
    run.take(reply)
    if reply.truncated:  # never run half a command
        return CUT_OFF
    parsed = _actions((yield CallV1(reply)))
    if isinstance(parsed, Submitted):
        return Finished(parsed.output)
    if isinstance(parsed, FormatError):
        return parsed
    ran, rejected = False, None
    for action in parsed:
        if isinstance(action, Rejected):
            run.reply_to(action.call_id, action.error, "rejected")
            rejected = rejected or action.error
            continue
        if (stop := run.stopped()) is not None:
            return stop
        ran = True
        seen = _observation((yield CallV2(action)))
        run.beat()
        run.answer(action, seen)
        if isinstance(seen, Submitted):
            return Finished(seen.output)
        if isinstance(seen, ExecutionError):  # failed as the run was being stopped: stopped
            return run.stopped() or ExecutionFailed(seen.message)
    return AllRejected(rejected) if rejected is not None and not ran else None


# --- what a component may return (anything else ends the run crashed) -------------------

_JUDGEMENTS: tuple[type, ...] = (Feedback, *get_args(Outcome))


def _reply(value: object) -> Reply | ModelError:
    if isinstance(value, Success):
        if isinstance(reply := value.unwrap(), Assistant):
            return reply
    elif isinstance(value, Failure) and isinstance(error := value.failure(), ModelError):
        return error
    raise WrongReturn("G", value, "a Result[Reply, ModelError]")


def _actions(value: object) -> Sequence[Action | Rejected] | FormatError | Submitted:
    if isinstance(value, Success):
        actions = value.unwrap()
        if isinstance(actions, list | tuple) and all(
            isinstance(a, Action | Rejected) for a in actions
        ):
            return actions
    elif isinstance(value, Failure) and isinstance(
        error := value.failure(), FormatError | Submitted
    ):
        return error
    raise WrongReturn("V1", value, "a Result[Sequence[Action | Rejected], FormatError | Submitted]")


def _observation(value: object) -> Observation | Submitted | ExecutionError:
    if isinstance(value, Success):
        if isinstance(seen := value.unwrap(), Observation):
            return seen
    elif isinstance(value, Failure) and isinstance(
        error := value.failure(), Submitted | ExecutionError
    ):
        return error
    raise WrongReturn("V2", value, "a Result[Observation, Submitted | ExecutionError]")


def _judgement(value: object) -> Outcome | Feedback:
    if isinstance(value, _JUDGEMENTS):
        return cast("Outcome | Feedback", value)
    raise WrongReturn("check", value, "an Outcome or Feedback")


def _last_judgement(value: object) -> Outcome:
    if isinstance(value, _JUDGEMENTS[1:]):
        return cast("Outcome", value)
    raise WrongReturn("check", value, "an Outcome")


# --- starting a run -----------------------------------------------------------------------


def start(
    components: Mapping[str, object],
    emit: Emit[T],
    system: str,
    prompt: str,
    max_steps: int,
    max_format_errors: int,
    resume: Sequence[Message],
    check: Verify | None,
    checked_env: Execute,
    watch: Watch | None,
) -> RunState[T]:
    """A new run's state: its history begun, its record opened (``emit``), its judge made.
    Every argument is checked first, so a mistake is one clear error before anything runs."""
    _check_arguments(components, system, prompt, max_steps, max_format_errors, resume, check, watch)
    history: list[Message] = list(resume)
    if not resume:
        history.append(System(system))
    if prompt or not resume:
        history.append(User(prompt, "task"))
    info = RunInfo(
        {name: describe(c) for name, c in components.items()},
        max_steps,
        max_format_errors,
        time.time(),
        resumed_from=len(resume),
    )
    # getattr, not isinstance(emit, Recorder): a runtime Protocol check is slow.
    opener = getattr(emit, "open", None)
    sink: Sink[T] = cast(Recorder[T], emit).open(info) if callable(opener) else _Plain(emit)
    judge = check.open(checked_env) if check is not None else None
    state = RunState(history, sink, info, judge, watch, max_steps, max_format_errors)
    for message in history:
        sink.append(message)  # before the run: a failure here is raised as it is
    return state


class _Plain(Sink[T]):
    """A plain ``(messages, outcome) -> T`` emit: nothing to record until the end."""

    __slots__ = ("_emit",)

    def __init__(self, emit: Emit[T]) -> None:
        self._emit = emit

    def append(self, message: Message, /) -> None:
        pass

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> T:
        return self._emit(messages, outcome)


def _check_arguments(
    components: Mapping[str, object],
    system: object,
    prompt: object,
    max_steps: object,
    max_format_errors: object,
    resume: object,
    check: object,
    watch: object,
) -> None:
    for name, component in components.items():
        if not callable(component):
            raise TypeError(
                f"run: {name} must be a function (see four.types for its Protocol); "
                f"got {component!r}"
            )
    for name, text in (("system", system), ("prompt", prompt)):
        if not isinstance(text, str):
            raise TypeError(f"run: {name} must be a str; got {text!r}")
    if type(max_steps) is not int or max_steps < 1:
        raise ValueError(
            f"run: max_steps must be a whole number of G calls >= 1; got {max_steps!r}"
        )
    if type(max_format_errors) is not int or max_format_errors < 0:
        raise ValueError(
            f"run: max_format_errors must be a whole number >= 0 (0: no limit); "
            f"got {max_format_errors!r}"
        )
    if isinstance(resume, str | bytes) or not isinstance(resume, Sequence):
        raise TypeError(
            f"run: resume must be a sequence of messages, e.g. "
            f"load_trajectory(path).messages; got {resume!r:.80}"
        )
    for message in resume:
        if not isinstance(message, System | User | Assistant | ToolResult):
            raise TypeError(f"run: resume holds {message!r:.80}, which is not a Message")
    if check is not None and not callable(getattr(check, "open", None)):
        raise TypeError(
            f"run: check must be a Verify, e.g. verify(command_check('pytest -q')); got {check!r}"
        )
    if watch is not None and not (
        callable(getattr(watch, "beat", None)) and callable(getattr(watch, "stopped", None))
    ):
        raise TypeError(f"run: watch must have beat() and stopped(); got {watch!r}")
