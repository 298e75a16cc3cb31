"""The evaluator: every way a run ends, history validity, feedback, resume, crashes."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from returns.result import Failure, Success

from four import (
    Assistant,
    Crashed,
    ExecutionFailed,
    Finished,
    Interrupted,
    Message,
    ModelError,
    ModelErrorKind,
    ModelFailed,
    Outcome,
    RepeatedFormatError,
    Stalled,
    StepsExhausted,
    System,
    ToolCall,
    ToolResult,
    User,
    load_trajectory,
    run,
    save_trajectory,
    scripted_invoke,
)
from four._outcomes import CostLimitReached
from four._types import (
    Action,
    ActionRan,
    Event,
    ExecutionError,
    ModelCalled,
    Observation,
    Reply,
    Submitted,
    Usage,
)
from four.trajectory import UsageRecord
from tests._doubles import FakeEnv, line_parse


def keep(messages: Sequence[Message], outcome: Outcome) -> tuple[list[Message], Outcome]:
    return list(messages), outcome


def test_finishes_when_environment_submits_and_keeps_final_output() -> None:
    env = FakeEnv()
    history, outcome = run(
        scripted_invoke(["$ ls", "$ submit the answer"]),
        line_parse,
        env,
        keep,
        system="sys",
        prompt="task",
    )
    assert outcome == Finished("the answer")
    assert outcome.text == "exit:task_complete"
    assert env.seen == ["ls", "submit the answer"]
    assert history[:2] == [System("sys"), User("task", "task")]
    assert history[3] == User("ran ls", "observation", 0)


def test_parser_submission_ends_the_run() -> None:
    _, outcome = run(scripted_invoke(["DONE result"]), line_parse, FakeEnv(), keep, "s", "p")
    assert outcome == Finished("result")


def test_model_error_outcome_text() -> None:
    G = scripted_invoke([ModelError(ModelErrorKind.AUTHENTICATION, "bad key", status=401)])
    _, outcome = run(G, line_parse, FakeEnv(), keep, "s", "p")
    assert outcome == ModelFailed("authentication: bad key")
    assert outcome.text == "model_error: authentication: bad key"


def test_budget_error_is_its_own_outcome() -> None:
    G = scripted_invoke([ModelError(ModelErrorKind.BUDGET, "cost 2.00 > 1.00")])
    _, outcome = run(G, line_parse, FakeEnv(), keep, "s", "p")
    assert outcome == CostLimitReached("cost 2.00 > 1.00")


def test_steps_exhausted_counts_every_G_call() -> None:
    calls: list[int] = []

    def G(messages: Sequence[Message]) -> Success[Assistant]:
        calls.append(len(messages))
        return Success(Assistant("no commands here"))

    _, outcome = run(G, line_parse, FakeEnv(), keep, "s", "p", max_steps=5, max_format_errors=0)
    assert outcome == StepsExhausted() and outcome.text == "max_steps_reached"
    assert len(calls) == 5


def test_format_error_is_fed_back_then_repeated_error_ends_run() -> None:
    history, outcome = run(
        scripted_invoke(["hello", "still prose", "more prose"]),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
    )
    assert isinstance(outcome, RepeatedFormatError)
    assert outcome.text.startswith("repeated_format_error: Format error: write commands")
    feedback = [m for m in history if isinstance(m, User) and m.content.startswith("Format error")]
    assert len(feedback) == 2  # the third error ends the run instead of being shown


def test_format_error_counter_resets_after_a_good_turn() -> None:
    _, outcome = run(
        scripted_invoke(["x", "y", "$ ok", "x", "y", "DONE z"]),
        line_parse,
        FakeEnv(),
        keep,
        "s",
        "p",
    )
    assert outcome == Finished("z")


def test_truncated_reply_is_feedback_not_execution() -> None:
    env = FakeEnv()
    history, outcome = run(
        scripted_invoke([Assistant("$ rm -rf /tm", finish_reason="length"), "DONE ok"]),
        line_parse,
        env,
        keep,
        "s",
        "p",
    )
    assert env.seen == [] and outcome == Finished("ok")
    assert any(isinstance(m, User) and "cut off" in m.content for m in history)


def test_execution_error_ends_run() -> None:
    _, outcome = run(scripted_invoke(["$ die"]), line_parse, FakeEnv(), keep, "s", "p")
    assert outcome == ExecutionFailed("container gone")
    assert outcome.text == "execution_error: container gone"


def call(i: int, name: str = "bash", arguments: str = "ls") -> ToolCall:
    return ToolCall(f"call_{i}", name, arguments)


def paired(history: Sequence[Message]) -> bool:
    """Every tool call is answered exactly once, right after its turn."""
    open_ids: list[str] = []
    for m in history:
        if isinstance(m, Assistant):
            if open_ids:
                return False
            open_ids = [c.id for c in m.tool_calls]
        elif isinstance(m, ToolResult):
            if m.tool_call_id not in open_ids:
                return False
            open_ids.remove(m.tool_call_id)
        elif open_ids:
            return False
    return not open_ids


def test_tool_calls_are_each_answered_by_id_including_rejected_and_skipped() -> None:
    turn1 = Assistant("", (call(1), call(2, "python", "{}"), call(3, arguments="echo")))
    turn2 = Assistant("", (call(4, arguments="submit all done"), call(5)))
    env = FakeEnv()
    history, outcome = run(scripted_invoke([turn1, turn2]), line_parse, env, keep, "s", "p")
    assert outcome == Finished("all done")
    assert paired(history)
    results = {m.tool_call_id: m.content for m in history if isinstance(m, ToolResult)}
    assert results["call_2"] == "unknown tool"
    names = {m.tool_call_id: m.name for m in history if isinstance(m, ToolResult)}
    assert names["call_2"] == "python" and names["call_1"] == "bash"
    assert results["call_4"] == "all done"
    assert "Not executed" in results["call_5"]
    assert env.seen == ["ls", "echo", "submit all done"]


def test_format_error_on_a_tool_call_turn_answers_each_call() -> None:
    def fail_parse(reply: Assistant) -> Failure[object]:
        return Failure(line_parse(Assistant("prose")).failure())

    turn = Assistant("", (call(1), call(2)))
    history, _ = run(scripted_invoke([turn]), fail_parse, FakeEnv(), keep, "s", "p")  # type: ignore[arg-type]
    assert paired(history)
    assert [m.tool_call_id for m in history if isinstance(m, ToolResult)] == ["call_1", "call_2"]


@pytest.mark.parametrize(
    ("script", "component"),
    [(["$ raise"], "V2"), (["boom"], "V1")],
)
def test_exception_in_a_component_is_emitted_then_propagates(
    tmp_path: Path, script: list[str], component: str
) -> None:
    def V1(reply: Assistant):  # type: ignore[no-untyped-def]
        if reply.content == "boom":
            raise ValueError("parser bug")
        return line_parse(reply)

    env = FakeEnv()
    with pytest.raises((RuntimeError, ValueError)):
        run(scripted_invoke(script), V1, env, save_trajectory(tmp_path), "s", "p")
    (saved,) = tmp_path.glob("*.json")
    data = json.loads(saved.read_text())
    assert data["outcome"].startswith(f"crashed: {component}: ")
    assert env.closed == 1


def test_exception_in_G_is_recorded_as_G() -> None:
    def G(messages: Sequence[Message]) -> Success[Assistant]:
        raise ConnectionError("socket closed")

    seen: list[Outcome] = []

    def emit(messages: Sequence[Message], outcome: Outcome) -> None:
        seen.append(outcome)

    with pytest.raises(ConnectionError):
        run(G, line_parse, FakeEnv(), emit, "s", "p")
    assert seen == [Crashed("G", "ConnectionError: socket closed")]


def test_ctrl_c_saves_trajectory_and_propagates(tmp_path: Path) -> None:
    env = FakeEnv()
    with pytest.raises(KeyboardInterrupt):
        run(
            scripted_invoke(["$ ls", "$ interrupt"]),
            line_parse,
            env,
            save_trajectory(tmp_path),
            "s",
            "p",
        )
    trajectory = load_trajectory(next(tmp_path.glob("*.json")))
    assert trajectory.outcome == Interrupted().text == "interrupted: KeyboardInterrupt"
    assert User("ran ls", "observation", 0) in trajectory.messages
    assert env.closed == 1


def test_environment_closed_once_on_normal_end() -> None:
    env = FakeEnv()
    run(scripted_invoke(["DONE"]), line_parse, env, keep, "s", "p")
    assert env.closed == 1


def test_resume_continues_an_earlier_history(tmp_path: Path) -> None:
    first = run(
        scripted_invoke(["$ one"]),
        line_parse,
        FakeEnv(),
        save_trajectory(tmp_path),
        "s",
        "p",
        max_steps=1,
    )
    earlier = load_trajectory(first)
    assert earlier.outcome == "max_steps_reached"
    history, outcome = run(
        scripted_invoke(["$ two", "DONE fine"]),
        line_parse,
        FakeEnv(),
        keep,
        prompt="carry on",
        resume=earlier.messages,
    )
    assert outcome == Finished("fine")
    assert history[: len(earlier.messages)] == list(earlier.messages)
    assert history[len(earlier.messages)] == User("carry on", "task")
    assert sum(isinstance(m, System) for m in history) == 1


def test_usage_is_accumulated_into_the_trajectory(tmp_path: Path) -> None:
    replies = [
        Assistant("$ a", usage=Usage(10, 2, 0.5)),
        Assistant("DONE", usage=Usage(5, 1, None)),
    ]
    path = run(scripted_invoke(replies), line_parse, FakeEnv(), save_trajectory(tmp_path), "s", "p")
    stats = load_trajectory(path).stats
    assert stats.usage == UsageRecord(15, 3, 0.5, 2, 1)
    assert stats.steps == 2


def test_default_trajectory_folder_is_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    G = scripted_invoke(["```bash\nfind /tmp -name '*.py' | head -3\n```", "Done."])
    path = run(
        G=G,
        V1=line_parse,
        V2=FakeEnv(),
        emit=save_trajectory(),
        system="You are a helpful assistant that executes bash commands.",
        prompt="Find all Python files in /tmp and count lines in each",
        max_steps=50,
    )
    assert path.parent == tmp_path / "trajectories"


class CountingWatch:
    """Stops the run (as stalled) once it has heard ``limit`` beats."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.beats = 0

    def beat(self) -> None:
        self.beats += 1

    def stopped(self) -> Outcome | None:
        return Stalled("no progress for 5s") if self.beats >= self.limit else None


def test_a_watch_can_stop_the_run_between_actions() -> None:
    turn = Assistant("", (call(1), call(2), call(3)))
    env = FakeEnv()
    history, outcome = run(
        scripted_invoke([turn]), line_parse, env, keep, "s", "p", watch=CountingWatch(3)
    )
    assert outcome == Stalled("no progress for 5s")
    assert outcome.text == "stalled: no progress for 5s"
    assert env.seen == ["ls", "ls"]  # beats: reply, action 1, action 2 -> stop before action 3
    assert paired(history)


def test_a_watch_is_asked_before_each_model_call() -> None:
    G = scripted_invoke(["$ a", "$ b", "$ c"])
    _, outcome = run(G, line_parse, FakeEnv(), keep, "s", "p", watch=CountingWatch(4))
    assert outcome == Stalled("no progress for 5s") and G.position == 2


def test_turns_of_only_rejected_calls_count_as_format_errors() -> None:
    bad = Assistant("", (call(1, "python", "{}"), call(2, "python", "{}")))
    good = Assistant("", (call(3),))
    # A good turn in between resets the count; three bad turns in a row end the run.
    script = [bad, bad, good, bad, bad, bad, good]
    history, outcome = run(scripted_invoke(script), line_parse, FakeEnv(), keep, "s", "p")
    assert outcome == RepeatedFormatError("unknown tool")
    assert outcome.text == "repeated_format_error: unknown tool"
    assert paired(history)
    # Each rejected call has its one answer, and no extra feedback turn is added.
    assert not [m for m in history if isinstance(m, User) and m.kind == "format_error"]
    assert sum(isinstance(m, Assistant) for m in history) == 6


def test_a_turn_with_one_good_call_among_rejected_ones_is_progress() -> None:
    mixed = Assistant("", (call(1, "python", "{}"), call(2)))
    history, outcome = run(
        scripted_invoke([mixed] * 4), line_parse, FakeEnv(), keep, "s", "p", max_steps=4
    )
    assert outcome == StepsExhausted() and paired(history)


class Ticks:
    """A clock that moves 1.5 s each time it is read: the run's own times, without sleeps."""

    def __init__(self, start: float) -> None:
        self.now, self.reads = start, 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += 1.5
        return self.now


def test_the_run_reads_the_clock_it_is_given_when_it_starts_and_ends(tmp_path: Path) -> None:
    clock = Ticks(1_000_000.0)
    G = scripted_invoke(["$ ls", "DONE"])
    path = run(G, line_parse, FakeEnv(), save_trajectory(tmp_path), "s", "p", clock=clock)
    stats = load_trajectory(path).stats
    assert clock.reads == 2
    assert (stats.started_at, stats.ended_at) == (1_000_001.5, 1_000_003.0)
    assert stats.wall_time == 1.5


def test_a_clock_that_is_not_a_function_is_refused_before_anything_runs() -> None:
    env = FakeEnv()
    with pytest.raises(TypeError, match=r"clock=3\.0 is not a function like time\.time"):
        run(scripted_invoke(["$ ls"]), line_parse, env, keep, "s", "p", clock=3.0)  # type: ignore[arg-type]
    assert env.seen == []


class Listener:
    """A watch that hears: notes each model call and action as the loop tells it."""

    def __init__(self) -> None:
        self.heard: list[str] = []
        self.steps: list[tuple[object, ...]] = []

    def beat(self) -> None:
        pass

    def stopped(self) -> Outcome | None:
        return None

    def hear(self, event: Event) -> None:
        self.heard.append(type(event).__name__)
        if isinstance(event, ModelCalled):
            self.steps.append(("call", event.reply, len(event.history), event.started, event.ended))
        elif isinstance(event, ActionRan):
            self.steps.append(
                ("action", event.action, event.result, event.started, event.ended, event.position)
            )


class FieldListener(Listener):
    """A watch told of model calls and actions by their fields, not as events."""

    def model_called(
        self, reply: Reply | ModelError, history: Sequence[Message], started: float, ended: float
    ) -> None:
        self.steps.append(("call", reply, len(history), started, ended))

    def action_ran(
        self,
        action: Action,
        result: Observation | Submitted | ExecutionError,
        started: float,
        ended: float,
        position: int,
    ) -> None:
        self.steps.append(("action", action, result, started, ended, position))


def test_a_watch_with_model_called_and_action_ran_is_told_their_fields_not_events() -> None:
    told: list[list[tuple[object, ...]]] = []
    for watch in (Listener(), FieldListener()):
        G = scripted_invoke(["$ a", "$ b", "DONE ok"])
        ticks = itertools.count().__next__  # the same times for both
        run(G, line_parse, FakeEnv(), keep, "s", "p", watch=watch, clock=ticks)
        told.append(watch.steps)
        if isinstance(watch, FieldListener):
            assert watch.heard == ["RunBegan", "RunEnded"]  # no event made for a step
        else:
            assert watch.heard.count("ModelCalled") == 3
    events, fields = told
    assert [s[0] for s in fields] == ["call", "action", "call", "action", "call"]
    assert fields == events  # the same replies, actions, times and positions
