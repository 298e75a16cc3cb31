"""One attempt of a search, as ``make`` sees it: its number, workspace, sampling, the
steps it may take, and the wrappers that tie its run to the search (the budget, the
trajectory's link, the stop of a looping attempt)."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeVar, Unpack, cast, overload

from returns.result import Result, Success

from four._checked import Checked
from four._outcomes import Outcome, Stopped, TimeLimitReached
from four._types import (
    Action,
    AsyncCloseable,
    AsyncExecute,
    AsyncInvoke,
    Closeable,
    Emit,
    Execute,
    ExecutionError,
    Invoke,
    Observation,
    Parse,
    Recorder,
    Submitted,
    Watch,
)
from four.execute._repeats import unwarned
from four.invoke._budget import AsyncMetered, Metered
from four.invoke._cycles import MAX_PERIOD
from four.search._budget import Spend
from four.search._link import AttemptLink, Linked

if TYPE_CHECKING:
    from four._loop import LoopOptions

T = TypeVar("T")


class SamplingArgs(TypedDict):
    """How an attempt's G samples: ``local_invoke(**a.sampling)``."""

    temperature: float
    seed: int


LOOPING = "looping"
"""The start of a looping attempt's ``Stopped`` reason."""


@dataclass(slots=True)
class Attempt(Checked):
    """One attempt at ``task``: what ``make`` builds its run from.

    ``link`` says which (``index`` of ``of``) and how it samples (``seed``,
    ``temperature``); ``workspace`` is its own copy of the starting workspace (None when
    the search copies none: a sandbox's fresh folder, a container); ``sampling`` is what
    its G must sample with, as keyword arguments (``local_invoke(**a.sampling)``,
    ``litellm_invoke(model, **a.sampling)``);
    ``steps_left`` the model calls the search's budget still allows (None: no limit);
    ``recap`` what the attempts before it did and how they ended (with the search's
    ``recap=True``; "" for the first), which ``prompt`` appends to the task.

    ``run`` (or ``arun``) calls ``four.run`` with the search's wrappers in place: use it,
    or wrap by hand: ``invoke(G)`` counts G's calls against the budget, ``env(V2)`` ends
    a looping attempt, ``emit(recorder)`` links the trajectory to its group, ``watch``
    stops the run when the search says so, ``limit(max_steps)`` bounds its steps.

    >>> def make(a: Attempt):  # doctest: +SKIP
    ...     return a.run(local_invoke(**a.sampling), regex_parse(), local_env(cwd=a.cwd),
    ...                  save_trajectory("runs"), max_steps=10, check=verify(command_check("pytest -q")))
    """

    link: AttemptLink
    task: str
    workspace: Path | None
    spend: Spend
    loop_repeats: int = 3
    outer: Watch | None = None
    stop: Callable[[], Outcome | None] | None = field(default=None, repr=False)
    looping: str | None = None
    linked: Linked[object] | None = field(default=None, repr=False)
    recap: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def index(self) -> int:
        return self.link.index

    @property
    def cwd(self) -> str | None:
        """``workspace`` as the environments take it (``local_env(cwd=a.cwd)``)."""
        return None if self.workspace is None else str(self.workspace)

    @property
    def sampling(self) -> SamplingArgs:
        """``temperature`` and ``seed``, as keyword arguments for a G's constructor."""
        return SamplingArgs(temperature=self.link.temperature, seed=self.link.seed)

    def prompt(self, task: str | None = None) -> str:
        """``task`` (the search's by default), then the ``recap`` of the attempts before
        this one, if any: the prompt ``run`` gives the model."""
        task = self.task if task is None else task
        return f"{task}\n\n{self.recap}" if self.recap else task

    @property
    def steps_left(self) -> int | None:
        return self.spend.steps_left()

    def limit(self, max_steps: int) -> int:
        """``max_steps``, or fewer if the search's budget allows fewer (at least 1: a
        run whose budget is spent ends at its first call, ``cost_limit_reached``)."""
        left = self.steps_left
        return max_steps if left is None else max(1, min(max_steps, left))

    # --- the wrappers ---------------------------------------------------------------

    @overload
    def invoke(self, G: Invoke) -> Invoke: ...
    @overload
    def invoke(self, G: AsyncInvoke) -> AsyncInvoke: ...
    def invoke(self, G: Invoke | AsyncInvoke) -> Invoke | AsyncInvoke:
        """G whose calls count against the search's budget (refused once it is spent)."""
        if _awaits(G):
            return AsyncMetered(cast(AsyncInvoke, G), self.spend)
        return Metered(cast(Invoke, G), self.spend)

    @overload
    def env(self, V2: Execute) -> Execute: ...
    @overload
    def env(self, V2: AsyncExecute) -> AsyncExecute: ...
    def env(self, V2: Execute | AsyncExecute) -> Execute | AsyncExecute:
        """V2 that notes when the same command gives the same output ``loop_repeats``
        times in a row, or the same block of up to ``MAX_PERIOD`` commands does: the
        attempt is looping, and ``watch`` ends it ``stopped``."""
        if _awaits(V2):
            return _AsyncLoops(cast(AsyncExecute, V2), self)
        return _Loops(cast(Execute, V2), self)

    def emit(self, recorder: Recorder[T] | Emit[T]) -> Recorder[T]:
        """The recorder, its run's head carrying the attempt's link (see ``AttemptLink``)."""
        linked = Linked(recorder, self.link)
        self.linked = cast(Linked[object], linked)
        return linked

    @property
    def watch(self) -> Watch:
        """Stops the run when the search's time is spent, when it loops, when another
        attempt was accepted, or when the search's own ``watch`` says so."""
        return _AttemptWatch(self)

    def watching(self, other: Watch | None) -> Watch:
        """``watch``, asking ``other`` first (the caller's own supervisor)."""
        return _AttemptWatch(self, other)

    # --- the run, wrapped -------------------------------------------------------------

    def run(
        self,
        G: Invoke,
        V1: Parse,
        V2: Execute,
        emit: Recorder[T] | Emit[T],
        system: str = "",
        prompt: str | None = None,
        max_steps: int = 100,
        max_format_errors: int = 3,
        **options: Unpack[LoopOptions],
    ) -> T:
        """``four.run`` for this attempt: ``prompt(prompt)`` as the prompt (the task, or
        ``prompt`` if given, and the recap), ``limit(max_steps)`` steps, the budget, the
        link, the loop stop and the search's watch (asked after ``watch``) in place."""
        from four._loop import run

        return run(self.invoke(G), V1, self.env(V2), self.emit(emit), system,
                   self.prompt(prompt), self.limit(max_steps), max_format_errors,
                   **self._options(options))  # fmt: skip

    async def arun(
        self,
        G: Invoke | AsyncInvoke,
        V1: Parse,
        V2: Execute | AsyncExecute,
        emit: Recorder[T] | Emit[T],
        system: str = "",
        prompt: str | None = None,
        max_steps: int = 100,
        max_format_errors: int = 3,
        **options: Unpack[LoopOptions],
    ) -> T:
        """``four.arun`` for this attempt, as ``run``."""
        from four._loop import arun

        return await arun(self.invoke(G), V1, self.env(V2), self.emit(emit), system,
                          self.prompt(prompt), self.limit(max_steps), max_format_errors,
                          **self._options(options))  # fmt: skip

    def _options(self, options: LoopOptions) -> LoopOptions:
        return options | {"watch": self.watching(options.get("watch"))}

    # --- what the wrappers tell it ------------------------------------------------------

    def stopped(self) -> Outcome | None:
        if self.stop is not None and (outcome := self.stop()) is not None:
            return outcome
        if (why := self.spend.out_of_time()) is not None:
            return TimeLimitReached(why)
        if self.looping is not None:
            return Stopped(self.looping)
        return None


def _awaits(fn: object) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


@dataclass(slots=True)
class _AttemptWatch:
    attempt: Attempt
    other: Watch | None = None

    def beat(self) -> None:
        if self.other is not None:
            self.other.beat()
        if self.attempt.outer is not None:
            self.attempt.outer.beat()

    def stopped(self) -> Outcome | None:
        for watch in (self.other, self.attempt.outer):
            if watch is not None and (outcome := watch.stopped()) is not None:
                return outcome
        return self.attempt.stopped()


@dataclass(slots=True)
class _Repeats:
    """The last (command, output) pairs seen: enough to see a block of up to
    ``MAX_PERIOD`` of them come round ``loop_repeats`` times in a row."""

    seen: list[tuple[str, str]] = field(default_factory=list)

    def note(
        self,
        attempt: Attempt,
        action: Action,
        result: Result[Observation, Submitted | ExecutionError],
    ) -> None:
        rounds = attempt.loop_repeats
        if not isinstance(result, Success) or rounds < 1:
            return
        # The output without note_repeats' warning, whose count changes every time.
        self.seen.append((action.command.strip(), unwarned(result.unwrap().content)))
        del self.seen[: -MAX_PERIOD * rounds]
        for period in range(1, MAX_PERIOD + 1):
            tail = self.seen[-period * rounds :]
            if len(tail) == period * rounds and tail == tail[:period] * rounds:
                attempt.looping = f"{LOOPING}: {_went_round(tail[:period], rounds)}"
                return


def _went_round(block: list[tuple[str, str]], rounds: int) -> str:
    shown = "; ".join(command for command, _ in block)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    if len(block) == 1:
        return f"the same command and output {rounds} times in a row ({shown})"
    return f"the same {len(block)} commands and outputs {rounds} times in a row ({shown})"


@dataclass(slots=True)
class _Loops:
    inner: Execute
    attempt: Attempt
    seen: _Repeats = field(default_factory=_Repeats)

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        result = self.inner(action)
        self.seen.note(self.attempt, action, result)
        return result

    def close(self) -> None:
        if isinstance(self.inner, Closeable):
            self.inner.close()

    def __getattr__(self, name: str) -> object:  # the environment's settings (cwd, ...)
        if name in ("inner", "attempt", "seen"):
            raise AttributeError(name)
        return getattr(self.inner, name)


@dataclass(slots=True)
class _AsyncLoops:
    inner: AsyncExecute
    attempt: Attempt
    seen: _Repeats = field(default_factory=_Repeats)

    async def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        result = await self.inner(action)
        self.seen.note(self.attempt, action, result)
        return result

    async def aclose(self) -> None:
        if isinstance(self.inner, AsyncCloseable):
            await self.inner.aclose()
        elif isinstance(self.inner, Closeable):
            self.inner.close()

    def __getattr__(self, name: str) -> object:
        if name in ("inner", "attempt", "seen"):
            raise AttributeError(name)
        return getattr(self.inner, name)


MakeAttempt = Callable[[Attempt], T]
AsyncMakeAttempt = Callable[[Attempt], Awaitable[T]]
