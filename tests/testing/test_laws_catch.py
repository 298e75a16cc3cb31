"""Each law catches a component that breaks it, with a small counterexample."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from returns.result import Failure, Result, Success

from four import (
    Accepted,
    Action,
    Assistant,
    ExecutionError,
    Finished,
    FormatError,
    Message,
    ModelError,
    Observation,
    Outcome,
    Rejected,
    Reply,
    Submitted,
    local_env,
    regex_parse,
    scripted_invoke,
)
from four.testing import (
    LawBroken,
    check_emit,
    check_execute,
    check_invoke,
    check_loop,
    check_parse,
    check_verify,
)
from four.types import JSON, Execute, Feedback, Judge, RunInfo, RunStats


def _small(exc: pytest.ExceptionInfo[LawBroken]) -> str:
    notes = "\n".join(getattr(exc.value, "__notes__", []))
    assert "Falsifying example" in notes or "Failing test case" in notes
    assert len(notes) < 2000, notes  # shrunk, not the first random case
    return notes


def test_check_parse_catches_a_parser_that_raises_on_empty_text() -> None:
    def parser(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        if not reply.content:
            raise ValueError("empty reply")
        return regex_parse()(reply)

    with pytest.raises(LawBroken, match="V1 raised ValueError: empty reply") as caught:
        check_parse(parser, seed=1)
    assert "content=''" in _small(caught)  # the smallest reply that breaks it


def test_check_parse_catches_a_parser_that_drops_a_tool_call() -> None:
    def parser(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        return Success([Action("ls", c.id) for c in reply.tool_calls[:1]])

    with pytest.raises(LawBroken, match="were answered as"):
        check_parse(parser, seed=1)


def test_check_parse_catches_a_parser_that_takes_prose_for_a_submission() -> None:
    def parser(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        return Failure(Submitted(reply.content))

    with pytest.raises(LawBroken, match="without the exit signal became a submission"):
        check_parse(parser, seed=1)


class LeakyEnv:
    """A V2 whose timed-out command's shell is never killed."""

    def __init__(self) -> None:
        self.env = local_env(timeout=1)
        self.leaked: list[subprocess.Popen[bytes]] = []

    def __call__(self, action: Action) -> Result[Observation, Submitted | ExecutionError]:
        if action.command.startswith("sleep 600"):
            self.leaked.append(subprocess.Popen(["bash", "-c", "sleep 600"]))
            return Success(Observation("timed out", 124, timed_out=True))
        return self.env(action)


def test_check_execute_catches_a_v2_that_leaks_its_shell_after_a_timeout() -> None:
    made: list[LeakyEnv] = []

    def make() -> LeakyEnv:
        made.append(LeakyEnv())
        return made[-1]

    with pytest.raises(
        LawBroken, match=r"V2 after a timeout left processes running: \['sleep 600'\]"
    ):
        check_execute(make, max_examples=3)
    for leaked in (p for env in made for p in env.leaked):
        assert leaked.wait(timeout=10) == -9  # the law killed what it found


def test_check_execute_catches_a_v2_that_raises() -> None:
    def env(action: Action) -> Result[Observation, Submitted | ExecutionError]:
        if "exit" in action.command:
            raise OSError("cannot run exit")
        return Success(Observation("ok", 0))

    with pytest.raises(LawBroken, match="V2 raised OSError") as caught:
        check_execute(lambda: env, timeout_action=None, seed=1)
    _small(caught)


def test_check_invoke_catches_a_g_that_changes_the_history() -> None:
    def G(messages: Sequence[Message]) -> Result[Reply, ModelError]:
        list.append(messages, Assistant("mine"))  # type: ignore[arg-type]
        return Success(Assistant("ls"))

    with pytest.raises(LawBroken, match="G changed the history"):
        check_invoke(G, seed=1)


class TwiceRecorder:
    """A recorder whose sink writes every message twice."""

    def __call__(self, messages: Sequence[Message], outcome: Outcome) -> list[Message]:
        return list(messages)

    def open(self, info: RunInfo) -> TwiceSink:
        return TwiceSink()


class TwiceSink:
    def __init__(self) -> None:
        self.kept: list[Message] = []

    def append(self, message: Message) -> None:
        self.kept += [message, message]

    def close(
        self, messages: Sequence[Message], outcome: Outcome, stats: RunStats
    ) -> list[Message]:
        return self.kept


def test_check_emit_catches_an_emit_that_writes_twice() -> None:
    with pytest.raises(LawBroken, match="is not the run's history") as caught:
        check_emit(TwiceRecorder, load=lambda kept: kept, seed=1)
    _small(caught)


class MaybeForever:
    """A check's judge that answers every submission 'maybe, look again', unbounded."""

    def open(self, env: object) -> Judge:
        return MaybeJudge()


class MaybeJudge:
    def __call__(self, history: Sequence[Message], claim: object) -> Feedback:
        return Feedback("MAYBE: gather more evidence and submit again")

    def record(self) -> Mapping[str, JSON]:
        return {}


def test_check_verify_catches_a_check_that_loops_on_maybe() -> None:
    with pytest.raises(LawBroken, match=r"the judge was asked \d+ times \(bound 3\)"):
        check_verify(MaybeForever(), bound=3, audited=False, seed=1)
    with pytest.raises(LawBroken, match="does not audit"):
        check_verify(MaybeForever(), seed=1)


class AcceptsAtEnd:
    """four's verified judge, with a last judgement that accepts without judging."""

    def open(self, env: Execute) -> Judge:
        from four import verify
        from four.quaternary import no

        return _AcceptsAtEnd(verify(lambda claim: no("not yet")).open(env))


class _AcceptsAtEnd:
    def __init__(self, judge: Judge) -> None:
        self.judge = judge

    def __call__(self, history: Sequence[Message], claim: Finished) -> Outcome | Feedback:
        return self.judge(history, claim)

    def at_end(self, history: Sequence[Message], outcome: Outcome) -> Outcome:
        return Accepted("")  # no receipt says so

    def record(self) -> Mapping[str, JSON]:
        return self.judge.record()


def test_check_verify_runs_the_last_judgement_and_catches_an_unrecorded_accept() -> None:
    with pytest.raises(LawBroken, match="does not audit"):
        check_verify(AcceptsAtEnd(), seed=1)


def test_check_loop_catches_a_composition_whose_history_is_invalid(tmp_path: Path) -> None:
    from four import save_trajectory
    from four.types import ToolCall

    def G() -> object:
        return scripted_invoke(
            [Assistant("", (ToolCall("c1", "bash", "{}"), ToolCall("c2", "bash", "{}")))] * 20
        )

    def parser(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        return Success([Action("true", reply.tool_calls[0].id)])  # c2 is never answered

    with pytest.raises(LawBroken, match="not one a provider accepts"):
        check_loop(G, parser, lambda: local_env(), lambda: save_trajectory(tmp_path), seed=1)  # type: ignore[arg-type]
