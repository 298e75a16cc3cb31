"""A user's own components, typed only with ``four.types``: mypy --strict must accept
them with no returns plugin (tests/test_types.py checks it)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Unpack

from returns.result import Failure, Result, Success

from four import arun, run
from four.types import (
    Action,
    Assistant,
    AsyncExecute,
    AsyncInvoke,
    AsyncSink,
    Emit,
    Execute,
    ExecutionError,
    FormatError,
    Invoke,
    LoopOptions,
    Message,
    ModelError,
    Observation,
    Outcome,
    Parse,
    Recorder,
    Rejected,
    Reply,
    RunInfo,
    RunStats,
    Submitted,
)


def my_model(messages: Sequence[Message]) -> Result[Reply, ModelError]:
    return Success(Assistant(f"echo {len(messages)}"))


async def my_async_model(messages: Sequence[Message]) -> Result[Reply, ModelError]:
    return Success(Assistant("done"))


def my_parser(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    if not reply.content:
        return Failure(FormatError("say something"))
    return Success([Action(reply.content)])


class EchoEnv:
    def __call__(self, action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return Success(Observation(action.command, returncode=0))

    def close(self) -> None:
        pass


class AsyncEchoEnv:
    async def __call__(self, action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return Success(Observation(action.command, returncode=0))

    async def aclose(self) -> None:
        pass


def my_emit(messages: Sequence[Message], outcome: Outcome) -> Path:
    return Path(f"{outcome.text}.txt")


class CountingSink:
    """A sink ``arun`` seals on its event loop (``aclose``); ``run`` calls ``close``."""

    def __init__(self) -> None:
        self.seen = 0

    def append(self, message: Message, /) -> None:
        self.seen += 1

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> int:
        return self.seen

    async def aclose(
        self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /
    ) -> int:
        return self.seen


class CountingRecorder:
    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> int:
        return len(messages)

    def open(self, info: RunInfo, /) -> AsyncSink[int]:
        return CountingSink()


G: Invoke = my_model
aG: AsyncInvoke = my_async_model
V1: Parse = my_parser
V2: Execute = EchoEnv()
aV2: AsyncExecute = AsyncEchoEnv()
emit: Emit[Path] = my_emit
counted: Recorder[int] = CountingRecorder()


def runs() -> Path:
    return run(G, V1, V2, emit, prompt="count", max_steps=3)


def runs_positionally() -> tuple[Path, Path]:
    return run(G, V1, V2, emit, "system", "task"), run(G, V1, V2, emit, "system", "task", 10, 0)


def runs_with_every_keyword(history: Sequence[Message]) -> Path:
    return run(G, V1, V2, emit, max_steps=3, resume=history, check=None, watch=None,
               clock=time.time)  # fmt: skip


def my_run(prompt: str, **options: Unpack[LoopOptions]) -> Path:
    """A wrapper of ``run`` that passes its keyword options on, typed."""
    return run(G, V1, V2, emit, "", prompt, **options)


async def aruns() -> tuple[Path, Path, int]:
    first = await arun(aG, V1, aV2, emit, prompt="count")
    second = await arun(G, V1, V2, emit, prompt="count")  # plain components work too
    messages = await arun(aG, V1, aV2, counted, prompt="count")
    return first, second, messages
