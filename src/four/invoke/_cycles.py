"""cycle_breaking_invoke: a G that never sends a model caught in a cycle the same context
again (why and how: docs/components.md, "The invokes' settings")."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeAlias, TypeVar, runtime_checkable

from returns.result import Result, Success

from four import _arguments as check
from four._checked import checked
from four._coroutine import to_end
from four._types import (
    NO_USAGE,
    Assistant,
    AsyncInvoke,
    Checked,
    CycleBreak,
    Invoke,
    Message,
    ModelError,
    Reply,
    Sampling,
    ToolResult,
    User,
)
from four.execute._repeats import unwarned
from four.invoke._budget import add_usage

DEFAULT_TEMPERATURES: tuple[float, ...] = (0.7, 1.0, 1.3)
"""The temperature of a resampled call: the first when a turn has repeated once, the next
for each further repeat or redraw, the last from then on."""

MAX_PERIOD = 4
"""The longest cycle looked for, in turns: a block of 2 to 4 turns that comes again, each
turn repeating the one a block before it (the same reply answered alike, or the same
commands with the same output)."""

_Key: TypeAlias = tuple[object, ...]
G_co = TypeVar("G_co", covariant=True)
G_ = TypeVar("G_")


@dataclass(frozen=True, slots=True)
class _Turn:
    """An assistant reply and the messages that answer it, ``history[start:end]``."""

    start: int
    end: int
    reply: _Key  # the text and the tool calls (names and arguments: ids differ every time)
    answers: tuple[tuple[str, str], ...]  # (kind, text) of each answer, the warning left out
    ran: _Key  # (command, output, status) of each command it ran; () if none ran


def _key(reply: Assistant) -> _Key:
    return (reply.content.strip(), tuple((c.name, c.arguments) for c in reply.tool_calls))


def _turns(history: Sequence[Message]) -> list[_Turn]:
    replies = [(i, m) for i, m in enumerate(history) if isinstance(m, Assistant)]
    turns = []
    for n, (start, reply) in enumerate(replies):
        end = replies[n + 1][0] if n + 1 < len(replies) else len(history)
        answers = [m for m in history[start + 1 : end] if isinstance(m, User | ToolResult)]
        turns.append(
            _Turn(
                start,
                end,
                _key(reply),
                tuple((m.kind, unwarned(m.content)) for m in answers),
                tuple(
                    (m.command, unwarned(m.content), m.returncode)
                    for m in answers
                    if m.kind == "observation"
                ),
            )
        )
    return turns


def _same(a: _Turn, b: _Turn) -> bool:
    """Whether ``b`` repeats ``a``: the same reply answered alike, or the same commands
    with the same output."""
    return (a.reply == b.reply and a.answers == b.answers) or (bool(a.ran) and a.ran == b.ran)


@dataclass(frozen=True, slots=True)
class Plan:
    """What one call sends, given the history (see ``plan``)."""

    sent: Sequence[Message]
    dropped: tuple[int, ...]
    repeats: int  # rounds of the cycle the history ends with: turns or blocks (1: none)
    looping: _Key | None  # the reply repeated at the end of the history
    reason: str
    seed: int
    replay: str | None = None  # why ``replays`` are steps of rejected work replayed
    replays: frozenset[_Key] = frozenset()  # replies drawn again, as ``looping`` is

    def record(self, sampling: Sampling | None, discarded: int) -> CycleBreak:
        reason = self.replay if self.replay is not None and discarded else self.reason
        return CycleBreak(reason, self.repeats, self.dropped, sampling, discarded)

    def first_as_is(self, draw: int) -> bool:
        """Whether draw ``draw`` is the model's own (a replay plan's first draw)."""
        return self.replay is not None and draw == 0


def plan(history: Sequence[Message]) -> Plan | None:
    """What to send instead of ``history``, or None to send it as it is: a pure function
    of the history (so a run stays reproducible).

    >>> from four import Assistant, User
    >>> def turn(thought): return [Assistant(thought + "```bash\\nls\\n```"),
    ...                            User("a.txt", "observation", 0, "ls")]
    >>> p = plan([User("task", "task"), *turn("Look."), *turn("Again.")])
    >>> p.dropped, p.repeats, p.reason
    ((1, 2), 2, 'the same command gave the same output 2 times in a row')
    """
    runs: list[list[_Turn]] = []
    for turn in _turns(history):
        if runs and _same(runs[-1][-1], turn):
            runs[-1].append(turn)
        else:
            runs.append([turn])
    tail = runs[-1] if runs else []
    cycle = _cycle(runs) if len(tail) < 2 else None
    left_out = {i for run in runs for turn in run[:-1] for i in range(turn.start, turn.end)}
    left_out |= {i for n in _rounds(runs) for turn in runs[n] for i in range(turn.start, turn.end)}
    if not left_out:
        return None
    dropped = tuple(sorted(left_out))
    sent = [m for i, m in enumerate(history) if i not in left_out]
    if cycle is not None:
        period, rounds = cycle
        block = [run[-1].reply for run in runs[-period:]]
        seed = _seed((block, rounds, len(history)))
        why = f"the same {period} turns came {rounds} times in a row"
        # At temperature 0 the next reply is the block's first again; any of its replies
        # would go round once more.
        return Plan(sent, dropped, rounds, block[0], why, seed, replays=frozenset(block[1:]))
    if len(tail) < 2:
        return Plan(sent, dropped, 1, None, "earlier repeated turns are sent once", 0)
    last = tail[-1]
    alike = all(t.reply == last.reply for t in tail)
    what = (
        "the same reply, answered alike, came" if alike else "the same command gave the same output"
    )
    seed = _seed((last.reply, len(tail), len(history)))
    return Plan(sent, dropped, len(tail), last.reply, f"{what} {len(tail)} times in a row", seed)


def _rounds(runs: Sequence[Sequence[_Turn]]) -> set[int]:
    """The runs to leave out so that each cycle is sent once: every round of a block of 2
    to ``MAX_PERIOD`` runs that the same block followed at once (read from the start)."""
    kept: list[int] = []  # numbers of the runs sent
    lasts: list[_Turn] = []  # their last turns
    left: set[int] = set()
    for n, run in enumerate(runs):
        kept.append(n)
        lasts.append(run[-1])
        for period in range(2, MAX_PERIOD + 1):
            if _again(lasts, period, 1):
                left.update(kept[-2 * period : -period])
                del kept[-2 * period : -period], lasts[-2 * period : -period]
                break
    return left


def _cycle(runs: Sequence[Sequence[_Turn]]) -> tuple[int, int] | None:
    """The period and rounds of the cycle the history ends with: the shortest block of
    2 to ``MAX_PERIOD`` runs of turns that comes at least twice in a row, each turn
    repeating the one a period before it; None if it ends with none.

    >>> a, b = (_Turn(0, 0, (c,), (), ((c, "same", 0),)) for c in ("ls", "cat a"))
    >>> _cycle([[a], [b], [a], [b], [a], [b]]), _cycle([[b], [a], [b]])
    ((2, 3), None)
    """
    lasts = [run[-1] for run in runs]
    for period in range(2, MAX_PERIOD + 1):
        rounds = 1
        while _again(lasts, period, rounds):
            rounds += 1
        if rounds >= 2:
            return period, rounds
    return None


def _again(turns: Sequence[_Turn], period: int, back: int) -> bool:
    """Whether the last ``period`` turns repeat, turn for turn, the block ``back`` blocks
    before them."""
    return len(turns) >= period * (back + 1) and all(
        _same(turns[-1 - i - period * back], turns[-1 - i]) for i in range(period)
    )


def _seed(value: object) -> int:
    """A seed drawn from ``value``'s text: the same history, the same seed."""
    digest = hashlib.sha256(repr(value).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def replayed(history: Sequence[Message]) -> tuple[tuple[_Key, int], ...]:
    """The replies that would go on replaying work the check rejected, each with the
    number of its turn (0 is the first reply); () if the history replays none.

    The turns up to each NO (the check's feedback) are rejected work. If the turns since
    the last NO repeat such work from its start, each the same reply answered alike, its
    next reply is one to draw again: at temperature 0 it would lead to the same NO. Right
    after a NO, a submission the check answered before is one too: nothing has run since,
    so the check would judge the same state again.

    >>> from four import Assistant, User
    >>> wrong = [Assistant("```bash\\necho 5 > a.txt\\n```"), User("", "observation", 0, "echo")]
    >>> submit = [Assistant("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"), User("NO: a.txt", "feedback")]
    >>> [(key[0][:10], turn) for key, turn in replayed([User("task", "task"), *wrong, *submit])]
    [('```bash\\nec', 0), ('COMPLETE_T', 1)]
    >>> [turn for _, turn in replayed([User("task", "task"), *wrong, *submit, *wrong])]
    [1]
    """
    turns = _turns(history)
    ends = [i for i, turn in enumerate(turns) if any(a[0] == "feedback" for a in turn.answers)]
    if not ends:
        return ()
    since = turns[ends[-1] + 1 :]
    found: dict[_Key, int] = {}
    for start, end in zip([0, *(e + 1 for e in ends[:-1])], ends, strict=True):
        work = turns[start : end + 1]
        done = work[: len(since)]
        if len(since) < len(work) and all(_same(a, b) for a, b in zip(done, since, strict=True)):
            found.setdefault(work[len(since)].reply, start + len(since))
    if not since:
        for end in ends:
            found.setdefault(turns[end].reply, end)
    return tuple(sorted(found.items(), key=lambda item: item[1]))


def _replay_plan(history: Sequence[Message], chosen: Plan | None) -> Plan | None:
    """``chosen`` (or a plan that changes nothing) that also draws again a reply that
    replays rejected work; None if the history replays none."""
    found = replayed(history)
    if not found:
        return None
    keys = frozenset(key for key, _ in found)
    numbers = ", ".join(str(turn + 1) for _, turn in found)
    why = f"the reply replayed work the check rejected (turn{'s' if len(found) > 1 else ''} {numbers})"
    seed = _seed((sorted(map(repr, keys)), len(history)))
    base = chosen or Plan(history, (), 1, None, "", 0)
    return replace(base, repeats=1, looping=found[0][0], seed=seed, replay=why, replays=keys)


@runtime_checkable
class _Resampled(Protocol[G_co]):
    """A G that can be resampled (``Sampled``, or its async twin), giving a G of its kind."""

    @property
    def sampling(self) -> Sampling: ...

    def sampled(self, sampling: Sampling, /) -> G_co: ...


Drawn: TypeAlias = Result[Reply, ModelError]


@dataclass(frozen=True, slots=True)
class CycleBreakingInvoke(Checked):
    """G over ``G`` that breaks cycles (see ``cycle_breaking_invoke``)."""

    G: Invoke
    temperatures: tuple[float, ...] = DEFAULT_TEMPERATURES
    redraws: int = 2

    def sampling(self, base: Sampling, plan: Plan, draw: int) -> Sampling:
        """The ``draw``-th sampling (0: the first) of a call that ``plan`` resamples: never
        below the model's own temperature, which stays the provider's if unknown. A
        replay's draws after its first (the model's own) start at the first temperature."""
        first = draw - 1 if plan.replay is not None else plan.repeats - 2 + draw
        index = min(max(0, first), len(self.temperatures) - 1)
        temperature = base.temperature
        if temperature is not None:
            temperature = max(temperature, self.temperatures[index])
        return Sampling(temperature, (plan.seed + draw) & 0x7FFFFFFF)

    def choose(self, messages: Sequence[Message], sampled: bool) -> Plan | None:
        """The plan of a call: repeated turns left out, a cycle resampled, a replay of
        rejected work drawn again (for a G that can be ``sampled``)."""
        chosen = plan(messages)
        if sampled and (chosen is None or chosen.looping is None):
            return _replay_plan(messages, chosen) or chosen
        return chosen

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        return to_end(_broken(self, self.G, messages, _called), "a plain G waited")

    async def around(
        self, G: AsyncInvoke, messages: Sequence[Message], /
    ) -> Result[Reply, ModelError]:
        return await _broken(self, G, messages, _awaited)


async def _called(G: Invoke, messages: Sequence[Message]) -> Drawn:
    return G(messages)


async def _awaited(G: AsyncInvoke, messages: Sequence[Message]) -> Drawn:
    return await G(messages)


async def _broken(
    breaker: CycleBreakingInvoke,
    G: G_,
    messages: Sequence[Message],
    call: Callable[[G_, Sequence[Message]], Awaitable[Drawn]],
) -> Drawn:
    """One call under ``breaker``'s rules, written once: ``call`` calls a G plainly or
    awaited."""
    sampled: _Resampled[G_] | None = G if isinstance(G, _Resampled) else None
    chosen = breaker.choose(messages, sampled is not None)
    if chosen is None:
        return await call(G, messages)
    if chosen.looping is None or sampled is None:
        return _noted(await call(G, chosen.sent), chosen.record(None, 0))
    billed, draw, repeated = NO_USAGE, 0, {chosen.looping, *chosen.replays}
    while True:
        drawn_by = G
        if not chosen.first_as_is(draw):
            drawn_by = sampled.sampled(breaker.sampling(sampled.sampling, chosen, draw))
        drawn = await call(drawn_by, chosen.sent)
        again = isinstance(drawn, Success) and _key(drawn.unwrap()) in repeated
        if again and draw < breaker.redraws:  # the reply repeats the cycle: draw again
            billed, draw = billed + (drawn.unwrap().usage or NO_USAGE), draw + 1
            continue
        if billed.calls:  # what the draws thrown away cost
            drawn = add_usage(drawn, billed)
        if not chosen.first_as_is(draw):
            sampling = getattr(drawn_by, "sampling", None)
            used = sampling if isinstance(sampling, Sampling) else None
            return _noted(drawn, chosen.record(used, draw))
        # the model's own first reply replays nothing: noted only if turns were left out
        return _noted(drawn, chosen.record(None, 0)) if chosen.dropped else drawn


def _noted(drawn: Drawn, change: CycleBreak) -> Drawn:
    if isinstance(drawn, Success):
        return Success(replace(drawn.unwrap(), cycle_break=change))
    return drawn


def cycle_breaking_invoke(
    G: Invoke, temperatures: Sequence[float] = DEFAULT_TEMPERATURES, redraws: int = 2
) -> CycleBreakingInvoke:
    """G that never sends a model caught in a cycle the same context again: repeated
    turns sent once, the call resampled from the history (docs/components.md).

    >>> from four import scripted_invoke, Assistant, User
    >>> turn = [Assistant("```bash\\nls\\n```"), User("a.txt", "observation", 0, "ls")]
    >>> G = cycle_breaking_invoke(scripted_invoke(["```bash\\ncat a.txt\\n```"]))
    >>> G([User("task", "task"), *turn, *turn]).unwrap().cycle_break.dropped
    (1, 2)
    """
    where = "cycle_breaking_invoke"
    check.component(where, "G", G, "a G (a function: history -> Result[Reply, ModelError])")
    if isinstance(temperatures, str) or not isinstance(temperatures, Sequence):
        raise TypeError(
            f"{where}: temperatures must be a sequence of numbers; got {temperatures!r}"
        )
    chosen = tuple(temperatures)
    if not chosen or not all(
        isinstance(t, int | float) and not isinstance(t, bool) and 0 < t <= 2 for t in chosen
    ):
        raise ValueError(
            f"{where}: temperatures must be numbers above 0 and at most 2; got {temperatures!r}"
        )
    check.count(where, "redraws", redraws, minimum=0)
    return CycleBreakingInvoke(G, tuple(float(t) for t in chosen), redraws)
