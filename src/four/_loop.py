"""run() and arun(): the evaluator, (G -> V1 -> V2*)* -> emit, plainly and awaited.

Both drive the same rules (``_rules.evaluate``): the rules say which component to call
next, the driver calls it and hands back what it returned. Every ending (the agent
submits, a component fails, the budget is spent, a crash, Ctrl-C, a cancelled task)
leaves the driver's loop the same way, and the trajectory is sealed in one place.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TypeVar

from four._outcomes import Outcome
from four._rules import CallG, CallV1, CallV2, ComponentRaised, Rules, ending, evaluate, start
from four._types import (
    Action,
    AsyncExecute,
    AsyncInvoke,
    Emit,
    Execute,
    Invoke,
    Message,
    Parse,
    RunStats,
    Sink,
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
    >>> path = run(scripted_invoke(["```bash\\necho hi\\n```", "done"]),
    ...            regex_parse(finish_on_plain_text=True),
    ...            local_env(), save_trajectory("/tmp/four-doc"), prompt="say hi")
    """
    components = {"G": G, "V1": V1, "V2": V2, "emit": emit}
    state = start(components, emit, system, prompt, max_steps, max_format_errors, resume,
                  check, V2, watch)  # fmt: skip
    rules: Rules = evaluate(state)
    crash: BaseException | None = None
    try:
        call = next(rules)
        while True:
            if isinstance(call, CallG):
                answer = _call("G", G, call.history)
            elif isinstance(call, CallV1):
                answer = _call("V1", V1, call.reply)
            elif isinstance(call, CallV2):
                answer = _call("V2", V2, call.action)
            else:
                answer = _call("check", call.judge, call.history, call.claim)
            call = rules.send(answer)
    except StopIteration as done:
        outcome: Outcome = done.value
    except BaseException as exc:  # a crash or Ctrl-C: recorded and saved, then raised
        outcome, crash = ending(exc)
    try:
        _close(V2)  # the environment released, however the run ended
    finally:
        state.close_calls()  # every tool call answered
        saved = state.sink.close(state.history, outcome, state.stats())  # emit
    if crash is not None:
        raise crash
    return saved


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
) -> T:
    """``run``, awaited: the same rules, outcomes and trajectory, for async components.

    G and V2 may be async (``alitellm_invoke``, ``alocal_env``...) or plain; a plain
    one runs in a worker thread, off the event loop (so does the check, and the seal's
    waits on a disk). V1 is called on the loop: a parser is quick and does no I/O.
    Cancelling the task (or Ctrl-C under ``asyncio.run``) ends the run ``interrupted``:
    its commands are killed, its trajectory sealed, and the cancellation goes on.

    >>> import asyncio
    >>> from four import scripted_invoke, regex_parse, local_env, save_trajectory
    >>> G = scripted_invoke(["```bash\\necho hi\\n```", "done"])
    >>> path = asyncio.run(arun(G, regex_parse(finish_on_plain_text=True), local_env(),
    ...                         save_trajectory("/tmp/four-doc"), prompt="say hi"))
    """
    from four.execute._interrupt import keyed  # the run's commands, in worker threads too

    with keyed() as key:  # a cancellation kills them
        return await _arun(key, G, V1, V2, emit, system, prompt, max_steps, max_format_errors,
                           resume, check, watch)  # fmt: skip


async def _arun(
    key: Hashable,
    G: Invoke | AsyncInvoke,
    V1: Parse,
    V2: Execute | AsyncExecute,
    emit: Emit[T],
    system: str,
    prompt: str,
    max_steps: int,
    max_format_errors: int,
    resume: Sequence[Message],
    check: Verify | None,
    watch: Watch | None,
) -> T:
    components = {"G": G, "V1": V1, "V2": V2, "emit": emit}
    state = start(components, emit, system, prompt, max_steps, max_format_errors, resume,
                  check, _blocking(V2, asyncio.get_running_loop()), watch)  # fmt: skip
    rules: Rules = evaluate(state)
    crash: BaseException | None = None
    G_awaits, V2_awaits = _is_async(G), _is_async(V2)  # else: run in a worker thread
    try:
        call = next(rules)
        while True:
            if isinstance(call, CallG):
                answer = await _acall(key, "G", G, G_awaits, call.history)
            elif isinstance(call, CallV1):
                answer = _call("V1", V1, call.reply)
            elif isinstance(call, CallV2):
                answer = await _acall(key, "V2", V2, V2_awaits, call.action)
            else:
                answer = await _acall(key, "check", call.judge, False, call.history, call.claim)
            call = rules.send(answer)
    except StopIteration as done:
        outcome: Outcome = done.value
    except BaseException as exc:  # a crash, Ctrl-C or cancellation: saved, then raised
        outcome, crash = ending(exc)
    try:
        await _aclose(V2)
    finally:
        state.close_calls()
        saved = await _aseal(state.sink, state.history, outcome, state.stats())  # emit
    if crash is not None:
        raise crash
    return saved


def _call(component: str, fn: Callable[..., object], *args: object) -> object:
    try:
        return fn(*args)
    except Exception as exc:  # which component failed is part of the outcome
        raise ComponentRaised(component, exc) from exc  # type: ignore[arg-type]


async def _acall(
    key: Hashable, component: str, fn: Callable[..., object], awaits: bool, *args: object
) -> object:
    """Await ``fn``, or run it in a worker thread if it is plain (the thread has the
    run's key, so its commands are killed if the run is cancelled meanwhile)."""
    try:
        if awaits:
            return await fn(*args)  # type: ignore[misc]
        result = await asyncio.to_thread(fn, *args)
        return await result if inspect.isawaitable(result) else result
    except asyncio.CancelledError:
        from four.execute._interrupt import interrupt  # only arun's threads need it

        interrupt(key)  # a plain V2's command would run on in its thread
        raise
    except Exception as exc:
        raise ComponentRaised(component, exc) from exc  # type: ignore[arg-type]


async def _aseal(sink: Sink[T], history: list[Message], outcome: Outcome, stats: RunStats) -> T:
    """The sink's ``aclose`` awaited (see ``AsyncSink``), else its ``close`` in a worker
    thread; its error is raised as it is, as ``run`` raises it."""
    aclose = getattr(sink, "aclose", None)
    if callable(aclose):
        done: Awaitable[T] = aclose(history, outcome, stats)
        return await done
    saved: object = await asyncio.to_thread(sink.close, history, outcome, stats)
    if inspect.isawaitable(saved):
        saved = await saved
    return saved  # type: ignore[return-value]


def _is_async(fn: object) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  (an object with an async __call__)
    )


def _blocking(V2: Execute | AsyncExecute, loop: asyncio.AbstractEventLoop) -> Execute:
    """V2 as the check sees it: a plain function (the check runs in a worker thread, so
    an async V2 is run on the event loop and waited for)."""
    if not _is_async(V2):
        return V2  # type: ignore[return-value]
    async_v2: AsyncExecute = V2  # type: ignore[assignment]

    def execute(action: Action, /) -> object:
        return asyncio.run_coroutine_threadsafe(async_v2(action), loop).result()

    return execute  # type: ignore[return-value]


def _close(V2: object) -> None:
    close = getattr(V2, "close", None)  # see Closeable
    if callable(close):
        close()


async def _aclose(V2: object) -> None:
    aclose = getattr(V2, "aclose", None)  # see AsyncCloseable
    if callable(aclose):
        done: Awaitable[object] = aclose()
        await done
    elif callable(getattr(V2, "close", None)):
        await asyncio.to_thread(_close, V2)
