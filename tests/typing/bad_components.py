"""A user's wrong components: mypy --strict (no returns plugin) must report every `# E`
line (tests/test_types.py checks it). Excluded from the project's own mypy run."""

from __future__ import annotations

import time
from collections.abc import Sequence

from returns.result import Result, Success

from four import arun, run
from four.search import Attempt
from four.types import (
    Action,
    Assistant,
    AsyncExecute,
    AsyncSink,
    Emit,
    Execute,
    ExecutionError,
    FormatError,
    Invoke,
    Message,
    ModelError,
    Observation,
    Outcome,
    Parse,
    Rejected,
    Reply,
    RunStats,
    Submitted,
)


def returns_text(messages: Sequence[Message]) -> str:
    return "ls"


def takes_a_string(command: str) -> Result[Observation, Submitted | ExecutionError]:
    return Success(Observation(command))


def wrong_error(messages: Sequence[Message]) -> Result[Reply, str]:
    return Success(Assistant("ls"))


def parses_text(reply: str) -> Result[Sequence[Action], str]:
    return Success([Action(reply)])


async def async_env(action: Action) -> Result[Observation, Submitted | ExecutionError]:
    return Success(Observation(action.command))


def emit(messages: Sequence[Message], outcome: Outcome) -> int:
    return 1


class SyncOnlySink:
    """``aclose`` that is not a coroutine: no ``AsyncSink``."""

    def append(self, message: Message, /) -> None:
        pass

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> int:
        return 0

    def aclose(self, messages: Sequence[Message], outcome: Outcome, stats: RunStats, /) -> int:
        return 0


G1: Invoke = returns_text  # E
G2: Invoke = wrong_error  # E
V1: Parse = parses_text  # E
V2: Execute = takes_a_string  # E
V2_async_as_sync: Execute = async_env  # E
aV2: AsyncExecute = takes_a_string  # E
emit_str: Emit[str] = emit  # E
sink: AsyncSink[int] = SyncOnlySink()  # E


def runs_with_an_async_env() -> object:
    return run(wrong_error, parses_text, async_env, emit)  # E


async def aruns_with_wrong_parser() -> object:
    return await arun(wrong_error, parses_text, async_env, emit)  # E


# Right components, a wrong call: the loop's settings are typed as well as its arrows.
def model(messages: Sequence[Message]) -> Result[Reply, ModelError]:
    return Success(Assistant("ls"))


async def async_model(messages: Sequence[Message]) -> Result[Reply, ModelError]:
    return Success(Assistant("ls"))


def parse(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    return Success([Action(reply.content)])


def env(action: Action) -> Result[Observation, Submitted | ExecutionError]:
    return Success(Observation(action.command))


def runs_an_async_model() -> object:
    return run(async_model, parse, env, emit)  # E


def runs_with_an_unknown_keyword() -> object:
    return run(model, parse, env, emit, max_step=10)  # E


def runs_with_a_wrong_keyword() -> object:
    return run(model, parse, env, emit, watch="stop")  # E


def runs_with_a_wrong_positional_setting() -> object:
    return run(model, parse, env, emit, "system", "task", "10")  # E


def runs_with_a_wrong_clock() -> object:
    return run(model, parse, env, emit, clock=time.ctime)  # E


async def aruns_with_an_unknown_keyword() -> object:
    return await arun(async_model, parse, env, emit, clocks=time.time)  # E


def attempt_runs_with_an_unknown_keyword(a: Attempt) -> object:
    return a.run(model, parse, env, emit, max_step=3)  # E


def attempt_runs_an_async_model(a: Attempt) -> object:
    return a.run(async_model, parse, env, emit)  # E
