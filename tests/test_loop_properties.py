"""Properties of run() and arun() over arbitrary behaviour of G, V1 and V2."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from four import (
    Action,
    Assistant,
    ExecutionError,
    FormatError,
    Message,
    ModelError,
    ModelErrorKind,
    Observation,
    Outcome,
    Rejected,
    Submitted,
    ToolCall,
    arun,
    run,
)
from tests.test_loop import paired


class Boom(Exception):
    pass


# One model turn: how many tool calls (0 = text), and what G, V1 and each V2 call do.
G_DO = st.sampled_from(["reply", "reply", "reply", "error", "raise", "interrupt", "cut"])
V1_DO = st.sampled_from(["actions", "actions", "actions", "format", "submit", "raise"])
V2_DO = st.sampled_from(["ok", "ok", "ok", "ok", "submit", "fail", "raise", "reject"])


@dataclass(frozen=True)
class Turn:
    g: str
    v1: str
    calls: int
    v2: tuple[str, ...]


TURNS = st.builds(
    Turn, G_DO, V1_DO, st.integers(0, 3), st.lists(V2_DO, min_size=3, max_size=3).map(tuple)
)


class Script:
    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = turns
        self.g_calls = 0
        self.current: Turn | None = None
        self.emits: list[Outcome] = []
        self.emitted: list[Message] = []

    def G(self, messages: Sequence[Message]) -> Result[Assistant, ModelError]:
        turn = self.turns[self.g_calls % len(self.turns)]
        self.g_calls += 1
        self.current = turn
        if turn.g == "error":
            return Failure(ModelError(ModelErrorKind.SERVER, "503"))
        if turn.g == "raise":
            raise Boom
        if turn.g == "interrupt":
            raise KeyboardInterrupt
        calls = tuple(ToolCall(f"c{self.g_calls}_{i}", "bash", str(i)) for i in range(turn.calls))
        return Success(
            Assistant("text", calls, finish_reason="length" if turn.g == "cut" else "stop")
        )

    def V1(self, reply: Assistant) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        assert self.current is not None
        if self.current.v1 == "format":
            return Failure(FormatError("bad"))
        if self.current.v1 == "submit":
            return Failure(Submitted("done"))
        if self.current.v1 == "raise":
            raise Boom
        if not reply.tool_calls:
            return Success([Action("0")])
        return Success(
            [
                Rejected(c.id, "no") if self.current.v2[i] == "reject" else Action(str(i), c.id)
                for i, c in enumerate(reply.tool_calls)
            ]
        )

    def V2(self, action: Action) -> Result[Observation, Submitted | ExecutionError]:
        assert self.current is not None
        do = self.current.v2[int(action.command)]
        if do == "submit":
            return Failure(Submitted("out"))
        if do == "fail":
            return Failure(ExecutionError("gone"))
        if do == "raise":
            raise Boom
        return Success(Observation("ok", 0))

    def emit(self, messages: Sequence[Message], outcome: Outcome) -> list[Message]:
        self.emits.append(outcome)
        self.emitted = list(messages)
        return self.emitted


@given(st.lists(TURNS, min_size=1, max_size=8), st.integers(1, 12), st.integers(0, 4))
def test_bounded_calls_one_emit_and_paired_history(
    turns: list[Turn], max_steps: int, max_format_errors: int
) -> None:
    script = Script(turns)
    with contextlib.suppress(Boom, KeyboardInterrupt):
        run(script.G, script.V1, script.V2, script.emit, "s", "p", max_steps, max_format_errors)
    assert script.g_calls <= max_steps
    assert len(script.emits) == 1
    assert paired(script.emitted)


class AsyncScript(Script):
    """The same behaviour, with G and V2 as coroutines (as alitellm_invoke, alocal_env)."""

    async def aG(self, messages: Sequence[Message]) -> Result[Assistant, ModelError]:
        await asyncio.sleep(0)
        return self.G(messages)

    async def aV2(self, action: Action) -> Result[Observation, Submitted | ExecutionError]:
        await asyncio.sleep(0)
        return self.V2(action)


def _ending(exc: BaseException | None) -> str | None:
    return None if exc is None else type(exc).__name__


@given(
    st.lists(TURNS, min_size=1, max_size=8),
    st.integers(1, 12),
    st.integers(0, 4),
    st.booleans(),
)
def test_run_and_arun_give_the_same_history_and_outcome(
    turns: list[Turn], max_steps: int, max_format_errors: int, coroutines: bool
) -> None:
    plain = Script(turns)
    raised: BaseException | None = None
    try:
        run(plain.G, plain.V1, plain.V2, plain.emit, "s", "p", max_steps, max_format_errors)
    except (Boom, KeyboardInterrupt) as exc:
        raised = exc

    awaited = AsyncScript(turns)
    G, V2 = (awaited.aG, awaited.aV2) if coroutines else (awaited.G, awaited.V2)
    araised: BaseException | None = None
    try:
        asyncio.run(arun(G, awaited.V1, V2, awaited.emit, "s", "p", max_steps, max_format_errors))
    except (Boom, KeyboardInterrupt) as exc:
        araised = exc

    assert awaited.emits == plain.emits
    assert awaited.emitted == plain.emitted
    assert awaited.g_calls == plain.g_calls
    assert _ending(araised) == _ending(raised)
