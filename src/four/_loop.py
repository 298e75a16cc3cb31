"""run() and arun(): one evaluator, ``(G -> V1 -> V2*)* -> emit`` (docs/loop.md), through
two drivers, ``Plain`` and ``Awaited`` (the same with ``await``); ``RunState`` keeps the run."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeAlias, TypedDict, TypeVar, Unpack, cast

from returns.result import Failure, Success

from four import _arguments as arguments
from four._coroutine import to_end
from four._describe import describe
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
    JSON,
    NO_USAGE,
    Action,
    ActionRan,
    Assistant,
    AsyncExecute,
    AsyncInvoke,
    Emit,
    Event,
    Execute,
    ExecutionError,
    Feedback,
    FormatError,
    Invoke,
    Judge,
    Judged,
    Message,
    ModelCalled,
    ModelError,
    ModelErrorKind,
    Observation,
    Parse,
    Rejected,
    Reply,
    RunBegan,
    RunEnded,
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
    unanswered,
)

T = TypeVar("T")
J = TypeVar("J", Outcome, Outcome | Feedback)

Clock: TypeAlias = Callable[[], float]
"""The time of day in seconds, as ``time.time`` gives it: when a run starts and ends."""


class LoopOptions(TypedDict, total=False):
    """The keyword options of ``run``, ``arun`` and ``Attempt.run`` (docs/loop.md):
    ``resume`` an earlier history, ``check`` a ``Verify`` judging a submission, ``watch``
    a ``Watch`` (a supervisor), ``clock`` the time of day in seconds."""

    resume: Sequence[Message]
    check: Verify | None
    watch: Watch | None
    clock: Clock


CUT_OFF = FormatError(
    "Your reply was cut off at the token limit, so nothing in it was executed. "
    "Reply again, shorter."
)
SKIPPED = "Not executed: the run ended at an earlier call of this turn."


@dataclass(frozen=True, slots=True)
class AllRejected(FormatError):
    """Every tool call of the turn was rejected by V1 (each answered with its error)."""


Halt: TypeAlias = Outcome | FormatError | Feedback | None
"""How a step ended: None once its actions ran, else the run's end or what the model is told."""


def run(
    G: Invoke,
    V1: Parse,
    V2: Execute,
    emit: Emit[T],
    system: str = "",
    prompt: str = "",
    max_steps: int = 100,
    max_format_errors: int = 3,
    **options: Unpack[LoopOptions],
) -> T:
    """Run the loop until the agent submits, a component fails, or ``max_steps`` G calls;
    return what ``emit`` returns (docs/loop.md). ``LoopOptions``, each optional:
    ``resume=()``, ``check=None``, ``watch=None``, ``clock=time.time``.

    >>> from four import scripted_invoke, regex_parse, local_env, save_trajectory
    >>> path = run(scripted_invoke(["```bash\\necho hi\\n```", "done"]),
    ...            regex_parse(finish_on_plain_text=True),
    ...            local_env(), save_trajectory("/tmp/four-doc"), prompt="say hi")
    """
    driver = Plain(G, V1, V2)
    state: RunState[T] = start(dict(G=G, V1=V1, V2=V2, emit=emit), system, prompt, max_steps,
                               max_format_errors, options, V2)  # fmt: skip
    return to_end(
        evaluate(state, driver), "run: a component was awaited; use arun for async components"
    )


async def arun(
    G: Invoke | AsyncInvoke,
    V1: Parse,
    V2: Execute | AsyncExecute,
    emit: Emit[T],
    system: str = "",
    prompt: str = "",
    max_steps: int = 100,
    max_format_errors: int = 3,
    **options: Unpack[LoopOptions],
) -> T:
    """``run``, awaited, for async components (a plain G or V2 runs in a worker thread);
    a cancelled task ends the run ``interrupted``, sealed, and the cancellation goes on.

    >>> import asyncio
    >>> from four import scripted_invoke, regex_parse, local_env, save_trajectory
    >>> G = scripted_invoke(["```bash\\necho hi\\n```", "done"])
    >>> path = asyncio.run(arun(G, regex_parse(finish_on_plain_text=True), local_env(),
    ...                         save_trajectory("/tmp/four-doc"), prompt="say hi"))
    """
    from four.execute._interrupt import keyed  # the run's commands, in worker threads too

    with keyed() as key:  # a cancellation kills them
        driver = Awaited(G, V1, V2, key)
        state: RunState[T] = start(dict(G=G, V1=V1, V2=V2, emit=emit), system, prompt,
                                   max_steps, max_format_errors, options,
                                   driver.blocking_env())  # fmt: skip
        return await evaluate(state, driver)


async def evaluate(run: RunState[T], call: Plain) -> T:
    """``(G -> V1 -> V2*)*`` until the run ends (a judge's ``at_start`` shown its start
    first, its ``at_end`` the final state once), then the environment closed and the run
    emitted. ``call`` makes each call (plainly or awaited); ``run`` keeps and decides."""
    crash: BaseException | None = None
    run.hear(RunBegan(run.info))
    try:
        if callable(at_start := getattr(run.judge, "at_start", None)):
            await call.check(at_start, run.history)  # the start its NOs compare with
        while (outcome := run.over()) is None:  # the budget spent, or a watch's stop
            run.steps += 1
            halt: Halt = None
            t = run.now()  # (0 unless a watch listens: then each call is timed)
            reply = await call.G(run.history)  # G
            run.called(reply, t)
            if isinstance(reply, ModelError):
                halt = run.model_failed(reply)
            # V1, unless the reply was cut off at the token limit: never run half a command
            elif isinstance(actions := run.take(reply) or call.V1(reply), Finished | FormatError):
                halt = actions
            else:
                rejected, ran = None, False
                for action in actions:
                    if isinstance(action, Rejected):  # answered with its error; nothing runs
                        run.reply_to(action.call_id, action.error, "rejected")
                        rejected = rejected or action.error
                        continue
                    if (halt := run.stopped()) is not None:
                        break
                    ran, t = True, run.now()
                    seen = await call.V2(action)  # V2
                    run.ran(action, seen, t)
                    if (halt := run.answer(action, seen)) is not None:
                        break
                if rejected is not None and not ran and halt is None:
                    halt = AllRejected(rejected)  # no progress: counts as a format error
            if isinstance(halt, Finished) and run.judge is not None:
                t = run.now()
                judged = await call.check(run.judge, run.history, halt)  # check
                halt = run.judged(judgement_of(judged), t)
            if (outcome := run.next_step(halt)) is not None:
                break
        if callable(at_end := getattr(run.judge, "at_end", None)):
            t = run.now()
            outcome = run.judged(
                last_judgement_of(await call.check(at_end, run.history, outcome)), t
            )
    except BaseException as exc:  # a crash, Ctrl-C or cancellation: saved, then raised
        outcome, crash = ending(exc)
    try:
        await call.close()  # the environment released, however the run ended
    finally:
        run.close_calls()  # every tool call answered
        stats = run.stats()
        try:
            saved = await call.emit(run.sink, run.history, outcome, stats)  # emit
        finally:
            run.hear(RunEnded(outcome, stats))
    if crash is not None:
        raise crash
    return saved


class Plain:
    """``run``'s driver: each component called as it is, its answer typed (or it crashed)."""

    __slots__ = ("_G", "_V1", "_V2")

    def __init__(self, G: Callable[..., object], V1: Parse, V2: Callable[..., object]) -> None:
        self._G, self._V1, self._V2 = G, V1, V2

    async def G(self, history: Sequence[Message]) -> Reply | ModelError:
        match value := await self._call("G", self._G, history):
            case Success(Assistant() as reply) | Failure(ModelError() as reply):
                return reply
        raise wrong_return("G", value, "a Result[Reply, ModelError]")

    def V1(self, reply: Reply) -> Sequence[Action | Rejected] | FormatError | Finished:
        match value := _call("V1", self._V1, reply):
            case Success(list() | tuple() as actions) if all(
                isinstance(a, Action | Rejected) for a in actions
            ):
                return actions
            case Failure(Submitted(output)):
                return Finished(output)
            case Failure(FormatError() as error):
                return error
        raise wrong_return(
            "V1", value, "a Result[Sequence[Action | Rejected], FormatError | Submitted]"
        )

    async def V2(self, action: Action) -> Observation | Submitted | ExecutionError:
        match value := await self._call("V2", self._V2, action):
            case Success(Observation() as seen) | Failure(Submitted() | ExecutionError() as seen):
                return seen
        raise wrong_return("V2", value, "a Result[Observation, Submitted | ExecutionError]")

    async def check(self, judge: Callable[..., object], *args: object) -> object:
        return await self._call("check", judge, *args)

    async def close(self) -> None:
        await self._either(self._V2, "close")  # see Closeable and AsyncCloseable

    async def emit(
        self, sink: Sink[T], history: list[Message], outcome: Outcome, stats: RunStats
    ) -> T:
        return await self._either(sink, "close", history, outcome, stats)  # type: ignore[return-value]

    async def _call(self, component: Component, fn: Callable[..., object], *args: object) -> object:
        return _call(component, fn, *args)

    async def _either(self, owner: object, name: str, *args: object) -> object:
        """``owner``'s method ``name`` called, if it has one; its error raised as it is."""
        return method(*args) if callable(method := getattr(owner, name, None)) else None


class Awaited(Plain):
    """``arun``'s driver: ``Plain`` with ``await``. An async G or V2, an ``aclose`` of V2
    or the sink, is awaited; a plain one, the check and a plain ``close`` run in a worker
    thread (with the run's ``key``: its commands are killed if the run is cancelled)."""

    __slots__ = ("_awaited", "_key")

    def __init__(
        self, G: Callable[..., object], V1: Parse, V2: Callable[..., object], key: Hashable
    ) -> None:
        super().__init__(G, V1, V2)
        self._awaited = frozenset(c for c, fn in (("G", G), ("V2", V2)) if is_async(fn))
        self._key = key

    async def _call(self, component: Component, fn: Callable[..., object], *args: object) -> object:
        try:
            if component in self._awaited:
                return await fn(*args)  # type: ignore[misc]
            return await _threaded(fn, *args)
        except asyncio.CancelledError:
            from four.execute._interrupt import interrupt  # only arun's threads need it

            interrupt(self._key)  # a plain V2's command would run on in its thread
            raise
        except Exception as exc:  # which component failed is part of the outcome
            raise ComponentRaised(component, exc) from exc

    async def _either(self, owner: object, name: str, *args: object) -> object:
        if callable(method := getattr(owner, f"a{name}", None)):
            return await method(*args)
        method = getattr(owner, name, None)
        return await _threaded(method, *args) if callable(method) else None

    def blocking_env(self) -> Execute:
        """V2 as the check sees it: a plain function (the check runs in a worker thread,
        so an async V2 is run on the event loop and waited for)."""
        if "V2" not in self._awaited:
            return self._V2  # type: ignore[return-value]
        async_v2: AsyncExecute = self._V2  # type: ignore[assignment]
        loop = asyncio.get_running_loop()

        def execute(action: Action, /) -> object:
            return asyncio.run_coroutine_threadsafe(async_v2(action), loop).result()

        return execute  # type: ignore[return-value]


def _call(component: Component, fn: Callable[..., object], *args: object) -> object:
    try:
        return fn(*args)
    except Exception as exc:  # which component failed is part of the outcome
        raise ComponentRaised(component, exc) from exc


async def _threaded(fn: Callable[..., object], *args: object) -> object:
    """``fn`` called in a worker thread; what it returns awaited if it is awaitable."""
    result = await asyncio.to_thread(fn, *args)
    return await result if inspect.isawaitable(result) else result


def is_async(fn: object) -> bool:
    """Whether calling ``fn`` makes a coroutine: an ``async def``, or an object whose
    ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  (an object with an async __call__)
    )


@dataclass(slots=True)
class RunState(Generic[T]):
    """Everything one run knows as it goes; the evaluator reads and updates it."""

    history: list[Message]
    sink: Sink[T]
    info: RunInfo
    judge: Judge | None
    watch: Watch | None
    budget: int  # G calls allowed: max_steps, and what feedback admitted
    clock: Clock
    steps: int = 0
    format_errors: int = 0
    usage: Usage = NO_USAGE
    tools: Mapping[str, str] = field(default_factory=dict)  # the last reply's, by call id
    hears: Callable[[Event], object] | None = None  # the watch's ``hear``, if it listens
    on_call: Callable[..., object] | None = None  # given a ModelCalled's fields
    on_action: Callable[..., object] | None = None  # given an ActionRan's fields

    # --- what a listening watch is told (nothing is made for one that does not) ---

    def now(self) -> float:
        return self.clock() if self.hears is not None else 0.0

    def hear(self, event: Event) -> None:
        if self.hears is not None:
            self.hears(event)

    def called(self, reply: Reply | ModelError, started: float) -> None:
        if self.on_call is not None:
            self.on_call(reply, self.history, started, self.clock())

    def ran(
        self, action: Action, seen: Observation | Submitted | ExecutionError, started: float
    ) -> None:
        if self.on_action is not None:
            self.on_action(action, seen, started, self.clock(), len(self.history))

    def judged(self, judgement: J, started: float) -> J:
        if self.hears is not None and self.judge is not None:
            self.hears(Judged(judgement, self.judge.record(), started, self.clock()))
        return judgement

    def add(self, message: Message) -> None:
        self.history.append(message)
        try:
            self.sink.append(message)
        except Exception as exc:  # saving is emit's part of the run
            raise ComponentRaised("emit", exc) from exc

    def take(self, reply: Reply) -> FormatError | None:
        """The model's reply joins the history (its usage counted, its tools noted); one
        cut off at the token limit is not read (``CUT_OFF``)."""
        if reply.usage is not None:
            self.usage += reply.usage
        self.tools = {c.id: c.name for c in reply.tool_calls}
        self.add(reply)
        self.beat()
        return CUT_OFF if reply.truncated else None

    def model_failed(self, error: ModelError) -> Outcome:
        self.usage += error.usage or NO_USAGE  # what a failed call billed still counts
        if error.kind is ModelErrorKind.BUDGET:
            return CostLimitReached(error.message)
        return ModelFailed(str(error))

    def answer(
        self, action: Action, seen: Observation | Submitted | ExecutionError
    ) -> Outcome | None:
        """What goes back to the model for one action (a tool call is always answered);
        the outcome if the action ended the run."""
        self.beat()
        command, call_id = action.command, action.call_id  # recorded: readers never re-parse
        if isinstance(seen, Observation):
            if call_id:
                self.reply_to(call_id, seen.content, "observation", seen.returncode, command)
            else:
                self.add(User(seen.content, "observation", seen.returncode, command))
            return None
        if isinstance(seen, Submitted):
            if call_id:
                self.reply_to(call_id, seen.output, "submission", None, command)
            return Finished(seen.output)
        failed = ExecutionFailed(seen.message)
        if call_id:
            self.reply_to(call_id, failed.text, "error", None, command)
        return self.stopped() or failed  # it failed as the run was being stopped: stopped

    def reply_to(
        self,
        call_id: str,
        text: str,
        kind: ToolResultKind,
        returncode: int | None = None,
        command: str | None = None,
    ) -> None:
        self.add(
            ToolResult(call_id, text, self.tools.get(call_id, "bash"), kind, returncode, command)
        )

    def tell(self, text: str, kind: Literal["feedback", "format_error"]) -> None:
        """Feedback for the model: as each open tool call's result, else as a user turn."""
        pending = unanswered(self.history)
        for call in pending:
            self.add(ToolResult(call.id, text, call.name, kind))
        if not pending:
            self.add(User(text, kind))

    def next_step(self, halt: Halt) -> Outcome | None:
        """After a step: the run's outcome if it ends here, else None (and the model told
        what it needs to hear: the check's feedback, or why its reply was not read)."""
        if halt is None or isinstance(halt, Feedback):
            self.format_errors = 0
            if halt is not None:  # the check said: not yet, go on
                self.budget += halt.steps
                self.tell(halt.text, "feedback")
            return None
        if not isinstance(halt, FormatError):
            return halt
        self.format_errors += 1
        if 0 < self.info.max_format_errors <= self.format_errors:
            return RepeatedFormatError(halt.feedback)
        if not isinstance(halt, AllRejected):  # rejected calls have their answers already
            self.tell(halt.feedback, "format_error")
        return None

    def close_calls(self) -> None:
        """Leave a valid history: every tool call of the last turn answered."""
        for call in unanswered(self.history):
            self.add(ToolResult(call.id, SKIPPED, call.name, "skipped"))

    def beat(self) -> None:
        if self.watch is not None:
            self.watch.beat()

    def over(self) -> Outcome | None:
        """Before a step: the budget of G calls spent, or a watch's stop."""
        return StepsExhausted() if self.steps >= self.budget else self.stopped()

    def stopped(self) -> Outcome | None:
        return self.watch.stopped() if self.watch is not None else None

    def stats(self) -> RunStats:
        extra: dict[str, JSON] = {}
        if self.judge is not None:
            extra["verdicts"] = dict(self.judge.record())
        if callable(noted := getattr(self.watch, "record", None)):  # its own (see Watch)
            extra.update(noted())
        started, ended = self.info.started_at, self.clock()
        return RunStats(self.steps, self.usage, started, ended, self.format_errors, extra)


def start(
    components: Mapping[str, object],
    system: str,
    prompt: str,
    max_steps: int,
    max_format_errors: int,
    options: LoopOptions,
    checked_env: Execute,
) -> RunState[T]:
    """A new run's state: every argument checked first (one clear error before anything
    runs), then its history begun, its record opened (``emit``), its judge made. The
    keyword options' defaults are set here, and said in ``run``'s docstring."""
    resume, check = options.get("resume", ()), options.get("check")
    watch, clock = options.get("watch"), options.get("clock", time.time)
    if unknown := options.keys() - LoopOptions.__optional_keys__:  # untyped callers' typos
        raise TypeError(
            f"run: unexpected keyword argument {min(unknown)!r} (the keyword options: "
            f"{', '.join(LoopOptions.__annotations__)})"
        )
    for name, component in components.items():
        arguments.component("run", name, component, "a function (four.types has its Protocol)")
    arguments.text("run", "system", system, empty=True)
    arguments.text("run", "prompt", prompt, empty=True)
    arguments.count("run", "max_steps", max_steps, minimum=1)
    arguments.count("run", "max_format_errors", max_format_errors)  # 0: no limit
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
    arguments.component("run", "clock", clock, "a function like time.time")

    history: list[Message] = list(resume)
    if not resume:
        history.append(System(system))
    if prompt or not resume:
        history.append(User(prompt, "task"))
    described = {name: describe(c) for name, c in components.items()}
    info = RunInfo(described, max_steps, max_format_errors, clock(), resumed_from=len(resume))
    emit = cast(Emit[T], components["emit"])
    opener = getattr(emit, "open", None)  # a Recorder (not isinstance: a Protocol check is slow)
    sink: Sink[T] = opener(info) if callable(opener) else _PlainSink(emit)
    judge = check.open(checked_env) if check is not None else None
    for message in history:
        sink.append(message)  # before the run: a failure here is raised as it is
    state = RunState(history, sink, info, judge, watch, max_steps, clock)
    if callable(hears := getattr(watch, "hear", None)):  # its own two, else events (see Watch)
        called, ran = getattr(watch, "model_called", None), getattr(watch, "action_ran", None)
        state.hears = hears
        state.on_call = called if callable(called) else lambda *f: hears(ModelCalled(*f))
        state.on_action = ran if callable(ran) else lambda *f: hears(ActionRan(*f))
    return state


@dataclass(frozen=True, slots=True)
class _PlainSink(Sink[T]):
    """A plain ``(messages, outcome) -> T`` emit: nothing to record until the end."""

    emit: Emit[T]

    def append(self, message: Message, /) -> None:
        pass

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> T:
        return self.emit(messages, outcome)


class ComponentRaised(Exception):
    """A component raised ``error``; the run ends ``crashed``, then ``error`` propagates."""

    def __init__(self, component: Component, error: Exception) -> None:
        super().__init__(component, error)
        self.component, self.error = component, error


def wrong_return(component: Component, value: object, expected: str) -> ComponentRaised:
    """A component returned something its arrow does not allow: a ``TypeError`` it raised."""
    said = f"{component} returned {type(value).__name__} {arguments.shown(value, 80)}"
    wrap = "wrap the value in returns.result.Success or Failure"
    return ComponentRaised(component, TypeError(f"{said}, not {expected}: {wrap}"))


def ending(exc: BaseException) -> tuple[Outcome, BaseException]:
    """The outcome of a run that an exception ended, and the exception to raise after it
    is saved: a component's own error, ``crashed``; Ctrl-C, a cancelled task or another
    ``BaseException`` that is no error, ``interrupted``."""
    if isinstance(exc, ComponentRaised):
        return Crashed(exc.component, f"{type(exc.error).__name__}: {exc.error}"), exc.error
    if not isinstance(exc, Exception):
        return Interrupted(type(exc).__name__), exc
    return Crashed("loop", f"{type(exc).__name__}: {exc}"), exc


def judgement_of(value: object) -> Outcome | Feedback:
    """The check's answer, typed."""
    if isinstance(value, Feedback | Outcome):
        return value
    raise wrong_return("check", value, "an Outcome or Feedback")


def last_judgement_of(value: object) -> Outcome:
    """The check's ``at_end`` answer, typed: the run is over, so no feedback."""
    if isinstance(value, Outcome):
        return value
    raise wrong_return("check", value, "an Outcome")
