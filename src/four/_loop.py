"""run() and arun(): the evaluator, ``(G -> V1 -> V2*)* -> emit``, written once.

``evaluate`` is the loop: one coroutine that calls G, V1, V2, the check and emit, in
that order, through a driver. ``run``'s driver (``Plain``) calls each component as it
is, so the coroutine never waits and runs to its end in one step; ``arun``'s
(``Awaited``) is the same with ``await``: it awaits an async G or V2 and runs a plain
one in a worker thread. Every ending (the agent submits, a component fails, the budget
is spent, a crash, Ctrl-C, a cancelled task) leaves the loop the same way, and the
trajectory is sealed in one place.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TypeVar

from four._coroutine import to_end
from four._outcomes import Finished, Outcome
from four._rules import (
    Actions,
    AllRejected,
    Clock,
    ComponentRaised,
    Halt,
    RunState,
    actions_of,
    ending,
    judgement_of,
    last_judgement_of,
    observation_of,
    reply_of,
    start,
)
from four._types import (
    Action,
    AsyncExecute,
    AsyncInvoke,
    Emit,
    Execute,
    ExecutionError,
    FormatError,
    Invoke,
    Message,
    ModelError,
    Observation,
    Parse,
    Rejected,
    Reply,
    RunStats,
    Sink,
    Submitted,
    Verify,
    Watch,
)

T = TypeVar("T")


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
    clock: Clock = time.time,
) -> T:
    """Run the loop until the agent submits, a component fails, or ``max_steps`` G calls;
    return what ``emit`` returns (the arguments: docs/loop.md).

    >>> from four import scripted_invoke, regex_parse, local_env, save_trajectory
    >>> path = run(scripted_invoke(["```bash\\necho hi\\n```", "done"]),
    ...            regex_parse(finish_on_plain_text=True),
    ...            local_env(), save_trajectory("/tmp/four-doc"), prompt="say hi")
    """
    driver = Plain(G, V1, V2)
    state: RunState[T] = start(driver.components(emit), system, prompt, max_steps,
                               max_format_errors, resume, check, watch, clock, V2)  # fmt: skip
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
    *,
    resume: Sequence[Message] = (),
    check: Verify | None = None,
    watch: Watch | None = None,
    clock: Clock = time.time,
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
        state: RunState[T] = start(driver.components(emit), system, prompt, max_steps,
                                   max_format_errors, resume, check, watch, clock,
                                   driver.blocking_env())  # fmt: skip
        return await evaluate(state, driver)


async def evaluate(run: RunState[T], call: Plain) -> T:
    """``(G -> V1 -> V2*)*`` until the agent submits, something fails, or the budget of
    G calls is spent (a judge with ``at_start`` is shown the start first); then a judge
    with ``at_end`` (``four.checks``'s) may judge the final state once; then the
    environment is closed and the run emitted. ``call`` makes each call (plainly or
    awaited); ``run`` keeps the history and decides (``_rules``)."""
    crash: BaseException | None = None
    run.began()
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
            run.ended(outcome, stats)
    if crash is not None:
        raise crash
    return saved


class Plain:
    """``run``'s driver: each component called as it is, its answer typed (``_rules``)."""

    __slots__ = ("_G", "_V1", "_V2")

    def __init__(self, G: Callable[..., object], V1: Parse, V2: Callable[..., object]) -> None:
        self._G, self._V1, self._V2 = G, V1, V2

    def components(self, emit: object) -> dict[str, object]:
        return {"G": self._G, "V1": self._V1, "V2": self._V2, "emit": emit}

    async def G(self, history: Sequence[Message]) -> Reply | ModelError:
        return reply_of(await self._call("G", self._G, history))

    def V1(self, reply: Reply) -> Actions | FormatError | Finished:
        return actions_of(_call("V1", self._V1, reply))

    async def V2(self, action: Action) -> Observation | Submitted | ExecutionError:
        return observation_of(await self._call("V2", self._V2, action))

    async def check(self, judge: Callable[..., object], *args: object) -> object:
        return await self._call("check", judge, *args)

    async def _call(self, component: str, fn: Callable[..., object], *args: object) -> object:
        return _call(component, fn, *args)

    async def close(self) -> None:
        _close(self._V2)

    async def emit(
        self, sink: Sink[T], history: list[Message], outcome: Outcome, stats: RunStats
    ) -> T:
        return sink.close(history, outcome, stats)


class Awaited(Plain):
    """``arun``'s driver: ``Plain`` with ``await``. An async G or V2 is awaited; a plain
    one, the check and the seal's waits on a disk run in a worker thread (which has the
    run's ``key``, so its commands are killed if the run is cancelled meanwhile)."""

    __slots__ = ("_awaited", "_key")

    def __init__(
        self, G: Callable[..., object], V1: Parse, V2: Callable[..., object], key: Hashable
    ) -> None:
        super().__init__(G, V1, V2)
        self._awaited = frozenset(c for c, fn in (("G", G), ("V2", V2)) if is_async(fn))
        self._key = key

    async def close(self) -> None:
        if callable(aclose := getattr(self._V2, "aclose", None)):  # see AsyncCloseable
            await aclose()
        elif callable(getattr(self._V2, "close", None)):
            await asyncio.to_thread(_close, self._V2)

    async def emit(
        self, sink: Sink[T], history: list[Message], outcome: Outcome, stats: RunStats
    ) -> T:
        """The sink's ``aclose`` awaited (see ``AsyncSink``), else its ``close`` in a
        worker thread; its error is raised as it is, as ``run`` raises it."""
        if callable(aclose := getattr(sink, "aclose", None)):
            sealed: Awaitable[T] = aclose(history, outcome, stats)
            return await sealed
        saved: object = await asyncio.to_thread(sink.close, history, outcome, stats)
        if inspect.isawaitable(saved):
            saved = await saved
        return saved  # type: ignore[return-value]

    async def _call(self, component: str, fn: Callable[..., object], *args: object) -> object:
        try:
            if component in self._awaited:
                return await fn(*args)  # type: ignore[misc]
            result = await asyncio.to_thread(fn, *args)
            return await result if inspect.isawaitable(result) else result
        except asyncio.CancelledError:
            from four.execute._interrupt import interrupt  # only arun's threads need it

            interrupt(self._key)  # a plain V2's command would run on in its thread
            raise
        except Exception as exc:  # which component failed is part of the outcome
            raise ComponentRaised(component, exc) from exc  # type: ignore[arg-type]

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


def _call(component: str, fn: Callable[..., object], *args: object) -> object:
    try:
        return fn(*args)
    except Exception as exc:  # which component failed is part of the outcome
        raise ComponentRaised(component, exc) from exc  # type: ignore[arg-type]


def is_async(fn: object) -> bool:
    """Whether calling ``fn`` makes a coroutine: an ``async def``, or an object whose
    ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  (an object with an async __call__)
    )


def _close(V2: object) -> None:
    if callable(close := getattr(V2, "close", None)):  # see Closeable
        close()
