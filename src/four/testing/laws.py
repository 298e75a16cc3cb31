"""Laws a component of the loop must obey, each property-tested with Hypothesis.

One call per arrow: it returns when the component obeys its law for every example
Hypothesis draws, and raises ``LawBroken`` with Hypothesis' minimal counterexample (in
the exception's notes) when it does not. From pytest::

    from four.testing import check_execute, check_parse

    def test_my_parser():
        check_parse(my_parser)

    def test_my_env():
        check_execute(lambda: my_env(timeout=1))

Every law takes ``max_examples``, ``deadline`` (None: no per-example deadline) and
``seed`` (a fixed seed makes the run repeatable).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from four._checked import checked
from four._grammar import Constrained
from four._outcomes import Finished, Outcome
from four._types import (
    EXIT_SIGNAL,
    JSON,
    Action,
    Assistant,
    AsyncExecute,
    AsyncInvoke,
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
    Rejected,
    Reply,
    Submitted,
    ToolResult,
    User,
    Verify,
    unanswered,
)
from four.testing import strategies as fs

T = TypeVar("T")

__all__ = [
    "LawBroken",
    "acheck_execute",
    "acheck_invoke",
    "acheck_loop",
    "check_emit",
    "check_execute",
    "check_grammar",
    "check_invoke",
    "check_loop",
    "check_parse",
    "check_verify",
    "valid_history",
]


SLEEPER = Action("sleep 600")
"""The default action of the timeout law: longer than any test environment's timeout."""


class LawBroken(AssertionError):
    """A component broke its law; Hypothesis' smallest example is in the notes."""


def _law(
    test: Callable[..., None],
    strategies: Sequence[st.SearchStrategy[object]],
    max_examples: int,
    deadline: float | None,
    seed: int | None,
) -> None:
    run = given(*strategies)(test)
    run = settings(
        max_examples=max_examples,
        deadline=None if deadline is None else deadline * 1000,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )(run)
    if seed is not None:
        run = hypothesis_seed(seed)(run)
    run()


@checked
def valid_history(history: Sequence[Message]) -> str | None:
    """What makes ``history`` one a provider would refuse, or None: every tool call
    answered once by the next messages, no result without its call.

    >>> from four import System, User
    >>> valid_history([System("s"), User("task")]) is None
    True
    """
    open_calls: dict[str, str] = {}
    for i, message in enumerate(history):
        if isinstance(message, Assistant):
            if open_calls:
                return f"message {i}: a reply while tool calls {sorted(open_calls)} are unanswered"
            open_calls = {c.id: c.name for c in message.tool_calls}
            if len(open_calls) != len(message.tool_calls):
                return f"message {i}: two tool calls share an id"
        elif isinstance(message, ToolResult):
            if message.tool_call_id not in open_calls:
                return f"message {i}: a result for {message.tool_call_id!r}, which is not open"
            del open_calls[message.tool_call_id]
        elif isinstance(message, User) and open_calls:
            return f"message {i}: a user turn while tool calls {sorted(open_calls)} are open"
    return None


# --- V1 -------------------------------------------------------------------------------


@checked
def check_parse(
    V1: Parse,
    *,
    exit_signal: str | None = EXIT_SIGNAL,
    plain_text_submits: bool = False,
    max_examples: int = 200,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """V1 is total (never raises, for any reply), returns only actions and rejections
    (``Success``) or a format error or a submission (``Failure``), answers every tool
    call of the reply exactly once (and none in a text reply), and never turns an
    unreadable reply into a submission: a reply is one only when a line of it is
    ``exit_signal`` (or, with ``plain_text_submits``, when it has no tool call).

    >>> from four import regex_parse
    >>> check_parse(regex_parse(), max_examples=20)
    """

    def law(reply: Assistant) -> None:
        try:
            result = V1(reply)
        except Exception as exc:
            raise LawBroken(f"V1 raised {type(exc).__name__}: {exc}") from exc
        if isinstance(result, Success):
            actions = result.unwrap()
            if not isinstance(actions, list | tuple) or not all(
                isinstance(a, Action | Rejected) for a in actions
            ):
                raise LawBroken(f"V1 returned Success of {actions!r:.200}, not actions")
            answered = sorted(a.call_id for a in actions if a.call_id is not None)
            called = sorted(c.id for c in reply.tool_calls)
            if answered != called:
                raise LawBroken(f"tool calls {called} were answered as {answered}")
        elif isinstance(result, Failure):
            error = result.failure()
            if not isinstance(error, FormatError | Submitted):
                raise LawBroken(f"V1 returned Failure of {error!r:.200}")
            if isinstance(error, Submitted) and not _submits(
                reply, exit_signal, plain_text_submits
            ):
                raise LawBroken("a reply without the exit signal became a submission")
        else:
            raise LawBroken(f"V1 returned {result!r:.200}, not a Result")

    _law(law, [fs.replies()], max_examples, deadline, seed)


@checked
def check_grammar(
    V1: Constrained,
    *,
    max_examples: int = 200,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """Every reply V1's grammar allows (``V1.grammar()``, see ``four.types.Constrained``)
    parses: to actions, or a submission, never a format error; so a model decoded under
    it makes no format error.

    >>> from four import regex_parse
    >>> check_grammar(regex_parse(), max_examples=20)
    """
    grammar = V1.grammar()
    parse: Parse = V1  # type: ignore[assignment]  # a Constrained V1 is a Parse too

    def law(text: str) -> None:
        try:
            result = parse(Assistant(text))
        except Exception as exc:
            raise LawBroken(f"V1 raised {type(exc).__name__}: {exc}") from exc
        if isinstance(result, Failure) and isinstance(error := result.failure(), FormatError):
            raise LawBroken(
                f"the grammar allows {text!r:.300}, which V1 reads as a format error: "
                f"{error.feedback:.300}"
            )

    _law(law, [fs.grammar_texts(grammar)], max_examples, deadline, seed)


def _submits(reply: Reply, exit_signal: str | None, plain_text_submits: bool) -> bool:
    if exit_signal is None or (plain_text_submits and not reply.tool_calls):
        return True
    return any(line.strip() == exit_signal for line in reply.content.splitlines())


# --- V2 -------------------------------------------------------------------------------


@checked
def check_execute(
    make_env: Callable[[], Execute],
    *,
    timeout_action: Action | None = SLEEPER,
    patience: float = 60.0,
    max_examples: int = 25,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """V2, fresh from ``make_env()`` for each example, never raises for any action,
    returns an ``Observation`` or a typed end (``Submitted``, ``ExecutionError``),
    closes cleanly (``close()`` if it has one), and leaves no process of this one
    alive after closing. Then, once: ``timeout_action`` (make the environment with a
    short timeout) returns within ``patience`` seconds, and the environment still runs
    a command after it.

    >>> from four import local_env
    >>> check_execute(lambda: local_env(timeout=1), max_examples=3)
    """

    def law(actions: list[Action]) -> None:
        env = make_env()
        with _no_leaks("V2"):
            try:
                for action in actions:
                    _observed(_guarded("V2", env, action), action)
            finally:
                _closed(env)

    _law(law, [st.lists(fs.actions(), min_size=1, max_size=4)], max_examples, deadline, seed)
    if timeout_action is not None:
        env = make_env()
        with _no_leaks("V2 after a timeout"):
            try:
                _observed(_within(patience, env, timeout_action), timeout_action)
                after = _within(patience, env, Action("echo still-here"))
                if not isinstance(after, Success) or "still-here" not in after.unwrap().content:
                    raise LawBroken(f"after a timeout, V2 returned {after!r:.200}")
            finally:
                _closed(env)


def _guarded(component: str, fn: Callable[[T], object], value: T) -> object:
    try:
        return fn(value)
    except Exception as exc:
        raise LawBroken(f"{component} raised {type(exc).__name__}: {exc}") from exc


def _observed(result: object, action: Action) -> None:
    if isinstance(result, Success):
        if not isinstance(result.unwrap(), Observation):
            raise LawBroken(f"V2 returned Success of {result.unwrap()!r:.200} for {action}")
    elif isinstance(result, Failure):
        if not isinstance(result.failure(), Submitted | ExecutionError):
            raise LawBroken(f"V2 returned Failure of {result.failure()!r:.200} for {action}")
    else:
        raise LawBroken(f"V2 returned {result!r:.200} for {action}, not a Result")


def _within(patience: float, env: Execute, action: Action) -> object:
    box: list[object] = []
    worker = threading.Thread(target=lambda: box.append(_guarded("V2", env, action)), daemon=True)
    worker.start()
    worker.join(patience)
    if not box:
        raise LawBroken(f"V2 did not return within {patience:g} s for {action}")
    return box[0]


def _closed(env: object) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:
            raise LawBroken(f"close() raised {type(exc).__name__}: {exc}") from exc


@contextlib.contextmanager
def _no_leaks(what: str, grace: float = 2.0) -> Iterator[None]:
    """Processes descended from this one that the block started must be gone (within
    ``grace`` seconds) when it ends; any left are reported, then killed."""
    before = _descendants()
    yield None
    deadline = time.monotonic() + grace
    while (left := _descendants() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    if left:
        commands = sorted(_cmdline(pid) for pid in left)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        raise LawBroken(f"{what} left processes running: {commands}")


def _descendants() -> set[int]:
    """This process's living descendants (Linux: read from /proc; elsewhere none)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return set()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] in (b"Z", b"X"):  # a zombie is dead
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    found: set[int] = set()
    todo = [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return str(pid)


# --- G --------------------------------------------------------------------------------


@checked
def check_invoke(
    G: Invoke,
    *,
    max_examples: int = 50,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """G returns a ``Result`` (a reply, or a ``ModelError``) for any valid history, and
    never changes the history it was given.

    >>> from four import scripted_invoke
    >>> check_invoke(scripted_invoke(["ls"] * 1000), max_examples=10)
    """

    def law(drawn: list[Message]) -> None:
        history = copy.deepcopy(drawn)  # G gets its own copy: Hypothesis keeps the drawn one
        _replied(_guarded("G", G, history))
        if history != drawn:
            raise LawBroken("G changed the history it was given")

    _law(law, [fs.histories()], max_examples, deadline, seed)


def _replied(result: object) -> None:
    if isinstance(result, Success):
        if not isinstance(result.unwrap(), Assistant):
            raise LawBroken(f"G returned Success of {result.unwrap()!r:.200}, not a reply")
    elif isinstance(result, Failure):
        if not isinstance(result.failure(), ModelError):
            raise LawBroken(f"G returned Failure of {result.failure()!r:.200}")
    else:
        raise LawBroken(f"G returned {result!r:.200}, not a Result")


# --- emit -----------------------------------------------------------------------------

_SCENES = st.lists(
    st.sampled_from(["ls", "ls", "ls", "DONE", "BAD", "ERROR", "ENV", "CRASH", "STOP"]),
    min_size=1,
    max_size=8,
)


@checked
def check_emit(
    make_emit: Callable[[], Emit[T]],
    *,
    load: Callable[[T], Sequence[Message] | None] | None = None,
    max_examples: int = 50,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """emit, fresh from ``make_emit()`` for each run, is called once per run (its sink
    closed once, for a recorder), survives every outcome (finished, model error, format
    errors, a broken environment, a crash, Ctrl-C), and what it returns holds exactly
    the run's history: ``load(value)`` gives the messages back (by default a returned
    path is read with ``load_trajectory``; ``load`` returning None skips the check).

    >>> from four import save_trajectory
    >>> import tempfile
    >>> check_emit(lambda: save_trajectory(tempfile.mkdtemp()), max_examples=5)
    """
    read = load if load is not None else _load_path

    def law(scene: list[str], max_steps: int) -> None:
        from four import run

        counted = _CountingEmit(make_emit())
        value: object = None
        with contextlib.suppress(_Crash, KeyboardInterrupt):
            value = run(
                _scene_model(scene), _scene_parse, _scene_env, counted, "s", "task", max_steps
            )
        if counted.closes != 1:
            raise LawBroken(f"emit was called {counted.closes} times in one run")
        if counted.value is not None:
            value = counted.value
        loaded = read(value)  # type: ignore[arg-type]
        if loaded is not None and list(loaded) != counted.messages:
            raise LawBroken(
                f"what emit kept ({len(loaded)} messages) is not the run's history "
                f"({len(counted.messages)} messages)"
            )

    _law(law, [_SCENES, st.integers(1, 10)], max_examples, deadline, seed)


def _load_path(value: object) -> Sequence[Message] | None:
    if isinstance(value, str | os.PathLike) and Path(value).suffix == ".json":
        from four.trajectory import load_trajectory

        return load_trajectory(value).messages
    return None


class _Crash(Exception):
    pass


def _scene_model(scene: list[str]) -> Invoke:
    turns = iter(scene)

    def G(messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        turn = next(turns, "DONE")
        if turn == "ERROR":
            return Failure(ModelError(ModelErrorKind.SERVER, "503 from the test"))
        if turn == "CRASH":
            raise _Crash("G crashed on purpose")
        if turn == "STOP":
            raise KeyboardInterrupt
        return Success(Assistant(turn))

    return G


def _scene_parse(reply: Reply, /) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    if reply.content == "DONE":
        return Failure(Submitted("the output"))
    if reply.content == "BAD":
        return Failure(FormatError("write a command"))
    return Success([Action(reply.content)])


def _scene_env(action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
    if action.command == "ENV":
        return Failure(ExecutionError("the environment broke"))
    return Success(Observation(f"ran {action.command}", 0))


class _CountingEmit:
    """An emit around the user's: counts how often the run ends into it."""

    def __init__(self, emit: object) -> None:
        self.emit = emit
        self.closes = 0
        self.messages: list[Message] = []
        self.value: object = None

    def __call__(self, messages: Sequence[Message], outcome: Outcome, /) -> object:
        self.closes += 1
        self.messages = list(messages)
        self.value = self.emit(messages, outcome)  # type: ignore[operator]
        return self.value

    def open(self, info: object, /) -> object:
        opener = getattr(self.emit, "open", None)
        if not callable(opener):
            return _PlainSink(self)
        return _CountingSink(self, opener(info))


class _PlainSink:
    def __init__(self, owner: _CountingEmit) -> None:
        self.owner = owner

    def append(self, message: Message, /) -> None:
        pass

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: object, /) -> object:
        return self.owner(messages, outcome)


class _CountingSink:
    def __init__(self, owner: _CountingEmit, sink: object) -> None:
        self.owner, self.sink = owner, sink

    def append(self, message: Message, /) -> None:
        self.sink.append(message)  # type: ignore[attr-defined]

    def close(self, messages: Sequence[Message], outcome: Outcome, stats: object, /) -> object:
        self.owner.closes += 1
        self.owner.messages = list(messages)
        self.owner.value = self.sink.close(messages, outcome, stats)  # type: ignore[attr-defined]
        return self.owner.value


# --- the check ------------------------------------------------------------------------


@checked
def check_verify(
    check: Verify,
    *,
    make_env: Callable[[], Execute] | None = None,
    bound: int | None = None,
    audited: bool = True,
    max_examples: int = 30,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """For any run of submissions, the judge ``check`` makes is asked at most its bound
    of times, and (``audited``) every trajectory it leaves audits valid, with as many
    evaluations as the judge was asked and at most ``initial_rank + 1`` of them. A
    judge's ``at_end`` (the last judgement of a run that ended without a submission) is
    called as the loop calls it, and counts as one more ask.
    ``bound`` is a fixed bound for a judge that keeps no receipts (then pass
    ``audited=False``). ``make_env`` is the environment the agent and the check share
    (by default an in-memory one that echoes commands).

    >>> from four import verify
    >>> from four.quaternary import yes
    >>> check_verify(verify(lambda claim: yes()), max_examples=5)
    """
    if not audited and bound is None:
        raise ValueError("check_verify: a judge without receipts needs a bound=")

    def law(scene: list[str], max_steps: int) -> None:
        from four import audit, run, save_trajectory

        counting = _CountingVerify(check)
        env = make_env() if make_env is not None else _scene_env
        with tempfile.TemporaryDirectory() as folder:
            script = [t if t in ("ls", "DONE") else "DONE" for t in scene]
            path = run(
                _scene_model(script), _scene_parse, env, save_trajectory(folder), "s", "task",
                max_steps, check=counting,
            )  # fmt: skip
            asked = counting.calls + counting.at_end_calls
            if bound is not None and asked > bound:
                raise LawBroken(f"the judge was asked {asked} times (bound {bound})")
            if audited:
                result = audit(path)
                if not result.valid:
                    raise LawBroken(f"the trajectory does not audit: {result.errors}")
                judged = counting.calls + counting.judged_at_end
                if result.evaluations != judged:
                    raise LawBroken(f"{judged} judgements, {result.evaluations} receipts of them")
                if result.evaluations > result.initial_rank + 1:
                    raise LawBroken(
                        f"{result.evaluations} evaluations, over initial_rank + 1 = "
                        f"{result.initial_rank + 1}"
                    )

    scenes = st.lists(st.sampled_from(["DONE", "DONE", "ls"]), min_size=1, max_size=20)
    _law(law, [scenes, st.integers(1, 30)], max_examples, deadline, seed)


class _CountingVerify:
    def __init__(self, check: Verify) -> None:
        self.check = check
        self.calls = 0
        self.at_end_calls = 0
        self.judged_at_end = 0  # last judgements the judge's record says it made

    def open(self, env: Execute, /) -> Judge:
        return _CountingJudge(self, self.check.open(env))


class _CountingJudge:
    def __init__(self, owner: _CountingVerify, judge: Judge) -> None:
        self.owner, self.judge = owner, judge

    def __call__(self, history: Sequence[Message], claim: Finished, /) -> Outcome | Feedback:
        self.owner.calls += 1
        return self.judge(history, claim)

    def at_end(self, history: Sequence[Message], outcome: Outcome, /) -> Outcome:
        """The judge's own ``at_end`` (the loop asks for it by name), counted."""
        at_end = getattr(self.judge, "at_end", None)
        if not callable(at_end):
            return outcome  # as the loop does for a judge without one
        self.owner.at_end_calls += 1
        ended: Outcome = at_end(history, outcome)
        return ended

    def record(self) -> Mapping[str, JSON]:
        record = self.judge.record()
        self.owner.judged_at_end = 1 if "judged_at_end" in record else 0
        return record


# --- the composition ------------------------------------------------------------------


@checked
def check_loop(
    make_G: Callable[[], Invoke],
    V1: Parse,
    make_env: Callable[[], Execute],
    make_emit: Callable[[], Emit[T]],
    *,
    max_examples: int = 20,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """The composition ``run(G, V1, V2, emit)`` (each made fresh per example) ends
    within ``max_steps`` calls of G, leaves a history a provider accepts, and what emit
    returns loads back as that history (for a returned trajectory path).

    >>> from four import local_env, regex_parse, save_trajectory, scripted_invoke
    >>> import tempfile
    >>> check_loop(lambda: scripted_invoke(["```bash\\nls\\n```"] * 50), regex_parse(),
    ...            local_env, lambda: save_trajectory(tempfile.mkdtemp()), max_examples=3)
    """

    def law(max_steps: int, prompt: str) -> None:
        from four import run

        G = _CountingInvoke(make_G())
        emit = _CountingEmit(make_emit())
        value = run(G, V1, make_env(), emit, "s", prompt, max_steps)
        _after_loop(G.calls, max_steps, emit, emit.value if emit.value is not None else value)

    _law(law, [st.integers(1, 12), fs.texts(80)], max_examples, deadline, seed)


def _after_loop(calls: int, max_steps: int, emit: _CountingEmit, value: object) -> None:
    if calls > max_steps:
        raise LawBroken(f"G was called {calls} times with max_steps={max_steps}")
    problem = valid_history(emit.messages)
    if problem is not None or unanswered(emit.messages):
        raise LawBroken(f"the history is not one a provider accepts: {problem or 'open calls'}")
    loaded = _load_path(value)
    if loaded is not None and list(loaded) != emit.messages:
        raise LawBroken("the saved trajectory does not load back as the run's history")


class _CountingInvoke:
    def __init__(self, G: Invoke) -> None:
        self.G, self.calls = G, 0

    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        self.calls += 1
        return self.G(messages)


# --- async twins ------------------------------------------------------------------------


@checked
def acheck_invoke(
    G: AsyncInvoke,
    *,
    max_examples: int = 50,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """``check_invoke`` for an async G (each example awaited on a fresh event loop)."""

    async def asked(history: list[Message]) -> object:
        try:
            return await G(history)
        finally:
            await _aclosed(G)  # what G opened on this example's event loop (litellm's clients)

    def law(drawn: list[Message]) -> None:
        history = copy.deepcopy(drawn)
        _replied(_awaited("G", asked(history)))
        if history != drawn:
            raise LawBroken("G changed the history it was given")

    _law(law, [fs.histories()], max_examples, deadline, seed)


@checked
def acheck_execute(
    make_env: Callable[[], AsyncExecute],
    *,
    timeout_action: Action | None = SLEEPER,
    patience: float = 60.0,
    max_examples: int = 25,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """``check_execute`` for an async V2 (closed with ``aclose()``), and one law more:
    cancelling the task awaiting an action leaves no process of it alive."""

    async def actions_then_close(env: AsyncExecute, actions: Sequence[Action]) -> None:
        try:
            for action in actions:
                _observed(await env(action), action)
        finally:
            await _aclosed(env)

    def law(actions: list[Action]) -> None:
        with _no_leaks("V2"):
            _awaited("V2", actions_then_close(make_env(), actions))

    _law(law, [st.lists(fs.actions(), min_size=1, max_size=4)], max_examples, deadline, seed)
    if timeout_action is None:
        return

    async def timeout_then_more(env: AsyncExecute) -> None:
        try:
            _observed(await asyncio.wait_for(env(timeout_action), patience), timeout_action)
            after = await asyncio.wait_for(env(Action("echo still-here")), patience)
            if not isinstance(after, Success) or "still-here" not in after.unwrap().content:
                raise LawBroken(f"after a timeout, V2 returned {after!r:.200}")
        finally:
            await _aclosed(env)

    async def cancelled(env: AsyncExecute) -> None:
        task = asyncio.ensure_future(env(timeout_action))
        await asyncio.sleep(0.5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await _aclosed(env)

    with _no_leaks("V2 after a timeout"):
        _awaited("V2", timeout_then_more(make_env()))
    with _no_leaks("V2 whose task was cancelled"):
        _awaited("V2", cancelled(make_env()))


@checked
def acheck_loop(
    make_G: Callable[[], AsyncInvoke | Invoke],
    V1: Parse,
    make_env: Callable[[], AsyncExecute | Execute],
    make_emit: Callable[[], Emit[T]],
    *,
    max_examples: int = 20,
    deadline: float | None = None,
    seed: int | None = None,
) -> None:
    """``check_loop`` for ``arun``."""

    def law(max_steps: int, prompt: str) -> None:
        from four import arun

        inner = make_G()
        calls = 0

        async def G(messages: Sequence[Message], /) -> object:
            nonlocal calls
            calls += 1
            result = inner(messages)
            return await result if isinstance(result, Awaitable) else result

        async def loop() -> object:
            try:
                return await arun(G, V1, make_env(), emit, "s", prompt, max_steps)  # type: ignore[arg-type]
            finally:
                await _aclosed(inner)  # what G opened on this example's event loop

        emit = _CountingEmit(make_emit())
        value = _awaited("the loop", loop())
        _after_loop(calls, max_steps, emit, emit.value if emit.value is not None else value)

    _law(law, [st.integers(1, 12), fs.texts(80)], max_examples, deadline, seed)


def _awaited(component: str, work: Awaitable[T]) -> T:
    async def main() -> T:
        return await work

    try:
        return asyncio.run(main())
    except LawBroken:
        raise
    except Exception as exc:
        raise LawBroken(f"{component} raised {type(exc).__name__}: {exc}") from exc


async def _aclosed(env: object) -> None:
    aclose = getattr(env, "aclose", None)
    try:
        if callable(aclose):
            await aclose()
        else:
            _closed(env)
    except LawBroken:
        raise
    except Exception as exc:
        raise LawBroken(f"aclose() raised {type(exc).__name__}: {exc}") from exc
