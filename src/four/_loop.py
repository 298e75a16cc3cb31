"""run(): the evaluator. (G -> V1 -> V2*)* -> emit, and nothing else."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias, TypeVar, cast

from returns.result import Failure, Result, Success

from four._describe import describe
from four._history import unanswered
from four._outcomes import (
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
    Emit,
    Execute,
    ExecutionError,
    Feedback,
    FormatError,
    Invoke,
    Judge,
    Message,
    ModelError,
    ModelErrorKind,
    Observation,
    Parse,
    Recorder,
    Rejected,
    Reply,
    RunInfo,
    RunStats,
    Sink,
    Submitted,
    System,
    ToolResult,
    Usage,
    User,
    Verify,
    Watch,
)

T = TypeVar("T")
_Add: TypeAlias = Callable[[Message], None]
Halt: TypeAlias = Outcome | FormatError | Feedback
"""Why a turn stopped early: the run ends (an Outcome) or the model gets feedback."""

CUT_OFF = FormatError(
    "Your reply was cut off at the token limit, so nothing in it was executed. "
    "Reply again, shorter."
)
_SKIPPED = "Not executed: the run ended at an earlier call of this turn."


def run(
    G: Invoke,
    V1: Parse,
    V2: Execute,
    emit: Emit[T],
    system: str = "",
    prompt: str = "",
    max_steps: int = 100,
    max_format_errors: int = 3,
    *,
    resume: Sequence[Message] = (),
    check: Verify | None = None,
    watch: Watch | None = None,
) -> T:
    """Run the loop until the agent submits, a component fails, or ``max_steps`` G calls.

    Returns what ``emit`` returns. ``resume`` continues an earlier history (then
    ``prompt``, if given, is appended as a new user turn). A format error goes back
    to the model as a user message (or as the result of each tool call of that
    turn), and a turn whose every tool call was rejected counts as one (each call
    is answered with its error). ``max_format_errors`` in a row end the run (0
    disables the cap). An exception or Ctrl-C in any component is recorded as the
    outcome and emitted before it propagates. An environment with ``close()`` is
    closed at the end.

    With ``check`` (see ``four.checks``), a submission is not the end: the check judges
    it, and the run ends ``accepted``, ``held`` or ``blocked``, or goes on with the
    check's feedback; the verdicts' receipts are stored in the trajectory. With
    ``watch``, a supervisor hears of every model call and command that finishes and can
    stop the run (``stalled``, ``time_limit_reached``, ...) before the next one.

    >>> from four import scripted_invoke, regex_parse, local_env, save_trajectory
    >>> path = run(scripted_invoke(["```bash\\necho hi\\n```", "done"]), regex_parse(),
    ...            local_env(), save_trajectory("/tmp/four-doc"), prompt="say hi")
    """
    history: list[Message] = list(resume)
    if not resume:
        history.append(System(system))
    if prompt or not resume:
        history.append(User(prompt, "task"))
    info = RunInfo(
        {"G": describe(G), "V1": describe(V1), "V2": describe(V2), "emit": describe(emit)},
        max_steps,
        max_format_errors,
        time.time(),
        resumed_from=len(resume),
    )
    # getattr, not isinstance(emit, Recorder): runtime Protocol checks cost ~20 us each.
    opener = getattr(emit, "open", None)
    sink: Sink[T] = cast(Recorder[T], emit).open(info) if callable(opener) else _Plain(emit)
    for message in history:
        sink.append(message)
    usage, steps, format_errors, where = NO_USAGE, 0, 0, "G"
    budget, judge = max_steps, check.open(V2) if check is not None else None
    guard = watch if watch is not None else _UNWATCHED
    tools: dict[str, str] = {}  # the last reply's tool names, by call id

    def add(message: Message) -> None:
        history.append(message)
        sink.append(message)

    def invoke() -> Result[Reply, Halt]:
        nonlocal steps, where
        where, steps = "G", steps + 1
        return G(history).map(received).alt(model_failed)

    def received(reply: Reply) -> Reply:
        nonlocal usage, tools
        usage += reply.usage or NO_USAGE
        tools = {call.id: call.name for call in reply.tool_calls} if reply.tool_calls else {}
        add(reply)
        guard.beat()
        return reply

    def model_failed(error: ModelError) -> Halt:
        nonlocal usage
        usage += error.usage or NO_USAGE
        if error.kind is ModelErrorKind.BUDGET:
            return CostLimitReached(error.message)
        return ModelFailed(str(error))

    def parse(reply: Reply) -> Result[Sequence[Action | Rejected], Halt]:
        nonlocal where
        where = "V1"
        if reply.truncated:  # never run half a command
            return Failure(CUT_OFF)
        return V1(reply).alt(submitted_or_feedback)

    def execute(actions: Sequence[Action | Rejected]) -> Result[str | None, Halt]:
        """Run the turn's actions. Success(None) once any ran; else the first rejection
        (each rejected call is answered, and the turn counts as a format error)."""
        nonlocal where
        where, ran, refused = "V2", False, None
        for action in actions:
            if isinstance(action, Rejected):
                tool = tools.get(action.call_id, "bash")
                add(ToolResult(action.call_id, action.error, tool, "rejected"))
                refused = refused or action.error
                continue
            ran = True
            if (stop := guard.stopped()) is not None:
                return Failure(stop)
            result = V2(action).alt(submitted_or_failed)
            guard.beat()
            if (answer := _answer(action, result, tools)) is not None:
                add(answer)
            if isinstance(result, Failure):
                return Failure(result.failure())
        return Success(None if ran else refused)

    outcome: Outcome = StepsExhausted()
    try:
        while steps < budget:
            if (stop := guard.stopped()) is not None:
                outcome = stop
                break
            turn = invoke().bind(parse).bind(execute)
            refused = turn.value_or(None)
            if isinstance(turn, Success):
                if refused is None:
                    format_errors = 0
                    continue
                halt: Halt = FormatError(refused)  # every call rejected: no progress
            else:
                halt = turn.failure()
            if isinstance(halt, Finished) and judge is not None:
                where = "check"
                halt = judge(history, halt)
            if isinstance(halt, Feedback):
                budget, format_errors = budget + halt.steps, 0
                _feedback(history, halt.text, add, "feedback")
                continue
            if not isinstance(halt, FormatError):
                outcome = halt
                break
            format_errors += 1
            if 0 < max_format_errors <= format_errors:
                outcome = RepeatedFormatError(halt.feedback)
                break
            if refused is None:  # rejected calls already have their answers
                _feedback(history, halt.feedback, add, "format_error")
    except BaseException as exc:
        outcome = (
            Interrupted(type(exc).__name__)
            if isinstance(exc, KeyboardInterrupt)
            else Crashed(where, f"{type(exc).__name__}: {exc}")
        )
        try:
            _finish(history, add, V2)
        finally:  # saved even when closing the environment fails too
            sink.close(history, outcome, _stats(steps, usage, info, format_errors, judge))
        raise
    _finish(history, add, V2)
    return sink.close(history, outcome, _stats(steps, usage, info, format_errors, judge))


def _stats(
    steps: int, usage: Usage, info: RunInfo, format_errors: int, judge: Judge | None
) -> RunStats:
    extra = {"verdicts": dict(judge.record())} if judge is not None else {}
    return RunStats(steps, usage, info.started_at, time.time(), format_errors, extra)


def submitted_or_feedback(error: FormatError | Submitted) -> Halt:
    return Finished(error.output) if isinstance(error, Submitted) else error


def submitted_or_failed(error: Submitted | ExecutionError) -> Finished | ExecutionFailed:
    if isinstance(error, Submitted):
        return Finished(error.output)
    return ExecutionFailed(error.message)


def _answer(
    action: Action,
    result: Result[Observation, Finished | ExecutionFailed],
    tools: Mapping[str, str],
) -> Message | None:
    """What goes back to the model for one action (a tool call is always answered)."""
    if isinstance(result, Success):
        seen = result.unwrap()
        if action.call_id:
            name = tools.get(action.call_id, "bash")
            return ToolResult(action.call_id, seen.content, name, "observation", seen.returncode)
        return User(seen.content, "observation", seen.returncode)
    if not action.call_id:
        return None
    end = result.failure()
    if isinstance(end, Finished):
        return ToolResult(
            action.call_id, end.output, tools.get(action.call_id, "bash"), "submission"
        )
    return ToolResult(action.call_id, end.text, tools.get(action.call_id, "bash"), "error")


def _feedback(history: list[Message], text: str, add: _Add, kind: str) -> None:
    """Show the model feedback: as each open tool call's result, else as a user turn."""
    pending = unanswered(history)
    for call in pending:
        add(ToolResult(call.id, text, call.name, kind))
    if not pending:
        add(User(text, kind))


def _finish(history: list[Message], add: _Add, V2: Execute) -> None:
    """Leave a valid history (every tool call answered), then release the environment."""
    try:
        for call in unanswered(history):
            add(ToolResult(call.id, _SKIPPED, call.name, "skipped"))
    finally:
        close = getattr(V2, "close", None)  # see Closeable
        if callable(close):
            close()


class _Unwatched:
    __slots__ = ()

    def beat(self) -> None:
        pass

    def stopped(self) -> Outcome | None:
        return None


_UNWATCHED = _Unwatched()


class _Plain(Sink[T]):
    """A plain ``(messages, outcome) -> T`` emit: nothing to record until the end."""

    __slots__ = ("_emit",)

    def __init__(self, emit: Emit[T]) -> None:
        self._emit = emit

    def append(self, message: Message, /) -> None:
        pass

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> T:
        return self._emit(messages, outcome)
