"""cycle_breaking_invoke: a model that repeats itself is never sent the same context again.

Over real HTTP against the loopback OpenAI-protocol server, which records what it
received: the temperature, the seed and the messages of every request.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from hypothesis import given
from returns.result import Success

from four import (
    Assistant,
    Message,
    System,
    ToolCall,
    ToolResult,
    User,
    arun,
    load_trajectory,
    run,
    save_trajectory,
    scripted_invoke,
)
from four.execute import EXIT_SIGNAL, local_env, note_repeats
from four.invoke import (
    CycleBreakingInvoke,
    LitellmInvoke,
    alitellm_invoke,
    cycle_breaking_invoke,
    litellm_invoke,
    litellm_toolcall_invoke,
)
from four.invoke._budget import AsyncWrapped
from four.invoke._convert import to_chat
from four.invoke._cycles import plan, replayed
from four.parse import regex_parse
from four.types import Sampling
from tests._server import CHAT, JSON, LoopbackServer, anthropic, call, chat, openai_history_problems
from tests.invoke._support import histories

LS = "Let me look at the files.\n```bash\nls\n```"
CAT = "```bash\ncat notes.txt\n```"
DONE = f"Done.\n{EXIT_SIGNAL}"


def model(server: LoopbackServer, temperature: float | None = None) -> LitellmInvoke:
    if temperature is None:  # the provider's own
        return litellm_invoke("openai/test-model", api_base=server.url, api_key="k")
    return litellm_invoke(
        "openai/test-model", api_base=server.url, api_key="k", temperature=temperature
    )


def count(body: dict[str, JSON]) -> int:
    """How many messages a request sent."""
    return len(cast(list[JSON], body["messages"]))


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha\n")
    return work


def sent(body: dict[str, JSON]) -> list[tuple[object, object]]:
    messages = cast(list[dict[str, JSON]], body["messages"])
    return [(m["role"], m["content"]) for m in messages]


def test_a_cycle_is_broken_by_resampling_seen_in_the_request_the_server_received(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.push(chat(LS), chat(LS), chat(CAT), chat(DONE))
    G = cycle_breaking_invoke(
        litellm_invoke("openai/test-model", api_base=server.url, api_key="k", temperature=0)
    )
    V2 = note_repeats(local_env(cwd=str(workspace(tmp_path))))
    path = run(G, regex_parse(), V2, save_trajectory(tmp_path / "runs"), "sys", "task")

    first, second, third, fourth = server.bodies(CHAT)
    assert (first["temperature"], second["temperature"]) == (0, 0)  # no cycle yet: as it was
    assert "seed" not in first and "seed" not in second
    assert third["temperature"] == 0.7 and isinstance(third["seed"], int)  # resampled
    # ... and the repeated turn was sent once: the request is one turn shorter.
    assert count(second) == 4 and count(third) == 4
    assert sent(third)[:3] == sent(second)[:3]
    assert "<warning>The same command gave the same output 2 times" in str(sent(third)[3][1])
    assert fourth["temperature"] == 0 and "seed" not in fourth  # the cycle is behind
    assert count(fourth) == 6  # still without the repeated turn
    assert all(openai_history_problems(b["messages"]) == [] for b in server.bodies(CHAT))  # type: ignore[arg-type]

    trajectory = load_trajectory(path)
    assert str(trajectory.outcome) == "exit:task_complete"
    replies = [m for m in trajectory.messages if isinstance(m, Assistant)]
    assert [r.content for r in replies] == [LS, LS, CAT, DONE]  # the record keeps every turn
    assert replies[0].cycle_break is None and replies[1].cycle_break is None
    change = replies[2].cycle_break
    assert change is not None and change.repeats == 2 and change.dropped == (2, 3)
    assert change.sampling == Sampling(0.7, third["seed"])
    assert "the same reply, answered alike, came 2 times in a row" in change.reason
    later = replies[3].cycle_break
    assert later is not None and later.dropped == (2, 3) and later.sampling is None


def test_a_reply_that_repeats_the_cycle_is_drawn_again_with_the_next_seed(
    server: LoopbackServer,
) -> None:
    server.push(chat(LS, usage=(10, 5)), chat(CAT, usage=(20, 3)))
    G = cycle_breaking_invoke(model(server, temperature=0))
    turn: list[Message] = [Assistant(LS), User("notes.txt", "observation", 0, "ls")]
    reply = G([System("sys"), User("task", "task"), *turn, *turn]).unwrap()

    first, second = server.bodies(CHAT)
    assert (first["temperature"], second["temperature"]) == (0.7, 1.0)
    assert second["seed"] == cast(int, first["seed"]) + 1
    assert reply.content == CAT
    usage = reply.usage  # the discarded draw is billed with the reply
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (30, 8)
    assert usage.calls == 2
    assert reply.cycle_break is not None and reply.cycle_break.discarded == 1
    assert reply.cycle_break.sampling == Sampling(1.0, cast(int, second["seed"]))


def test_the_same_command_with_the_same_output_is_a_cycle_whatever_the_thought(
    server: LoopbackServer,
) -> None:
    server.push(chat(CAT))
    G = cycle_breaking_invoke(model(server))  # the provider's own temperature: not changed
    history: list[Message] = [System("s"), User("task", "task")]
    for thought in ("Look.", "Look again.", "Once more."):
        history += [
            Assistant(f"{thought}\n```bash\nls\n```"),
            User("a.txt", "observation", 0, "ls"),
        ]
    reply = G(history).unwrap()
    (body,) = server.bodies(CHAT)
    assert "temperature" not in body and isinstance(body["seed"], int)
    assert [m[1] for m in sent(body)][2:] == ["Once more.\n```bash\nls\n```", "a.txt"]
    assert reply.cycle_break is not None
    assert reply.cycle_break.reason == "the same command gave the same output 3 times in a row"


WC = "```bash\nwc -l notes.txt\n```"


def test_a_cycle_of_two_commands_is_broken_seen_in_the_requests_the_server_received(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """`ls`, `cat`, `ls`, `cat`, each with the same output: no command repeats the one
    before it, yet the model goes round. The next call leaves the first round out and is
    resampled; once the cycle is behind, the round stays out and the call is as it was."""
    server.push(chat(LS), chat(CAT), chat(LS), chat(CAT), chat(WC), chat(DONE))
    G = cycle_breaking_invoke(model(server, temperature=0))
    V2 = local_env(cwd=str(workspace(tmp_path)))
    path = run(G, regex_parse(), V2, save_trajectory(tmp_path / "runs"), "sys", "task")

    bodies = server.bodies(CHAT)
    assert [(b["temperature"], "seed" in b) for b in bodies] == [
        (0, False), (0, False), (0, False), (0, False), (0.7, True), (0, False)
    ]  # fmt: skip
    assert [count(b) for b in bodies] == [2, 4, 6, 8, 6, 8]  # a round of two turns left out
    assert sent(bodies[4]) == sent(bodies[2])  # the first left out, the second sent
    assert all(openai_history_problems(b["messages"]) == [] for b in bodies)  # type: ignore[arg-type]

    trajectory = load_trajectory(path)
    assert str(trajectory.outcome) == "exit:task_complete"
    replies = [m for m in trajectory.messages if isinstance(m, Assistant)]
    assert [r.content for r in replies] == [LS, CAT, LS, CAT, WC, DONE]  # every turn kept
    assert all(r.cycle_break is None for r in replies[:4])
    change = replies[4].cycle_break
    assert change is not None and change.reason == "the same 2 turns came 2 times in a row"
    assert change.repeats == 2 and change.dropped == (2, 3, 4, 5)
    assert change.sampling == Sampling(0.7, cast(int, bodies[4]["seed"]))
    later = replies[5].cycle_break
    assert later is not None and later.dropped == (2, 3, 4, 5) and later.sampling is None


@pytest.mark.parametrize("again", [LS, CAT], ids=["its first reply", "its second reply"])
def test_a_reply_that_would_go_round_the_cycle_again_is_drawn_again(
    server: LoopbackServer, again: str
) -> None:
    """Either reply of the block would go on with the cycle: each is drawn again."""
    server.push(chat(again), chat(WC))
    G = cycle_breaking_invoke(model(server, temperature=0))
    ls: list[Message] = [Assistant(LS), User("notes.txt", "observation", 0, "ls")]
    cat: list[Message] = [Assistant(CAT), User("alpha", "observation", 0, "cat notes.txt")]
    reply = G([System("s"), User("task", "task"), *ls, *cat, *ls, *cat]).unwrap()
    first, second = server.bodies(CHAT)
    assert (first["temperature"], second["temperature"]) == (0.7, 1.0)
    assert reply.content == WC
    assert reply.cycle_break is not None and reply.cycle_break.discarded == 1


def test_commands_that_alternate_with_new_output_are_no_cycle() -> None:
    """`cat`, then a command, then `cat` again showing something new: the model is
    working (the command between comes out the same each time)."""
    step: list[Message] = [Assistant(WC), User("1", "observation", 0, "wc -l notes.txt")]
    history: list[Message] = [User("task", "task")]
    for text in ("alpha", "beta", "gamma"):
        history += [Assistant(CAT), User(text, "observation", 0, "cat notes.txt"), *step]
    assert plan(history) is None


def test_a_cycle_of_up_to_four_turns_is_seen_and_no_longer() -> None:
    def commands(*names: str) -> list[Message]:
        out: list[Message] = []
        for name in names:
            out += [Assistant(f"```bash\n{name}\n```"), User("same", "observation", 0, name)]
        return out

    four = commands("a", "b", "c", "d")
    chosen = plan([User("task", "task"), *four, *four])
    assert chosen is not None and chosen.reason == "the same 4 turns came 2 times in a row"
    five = commands("a", "b", "c", "d", "e")
    assert plan([User("task", "task"), *five, *five]) is None


def test_the_changes_are_a_function_of_the_history(tmp_path: Path) -> None:
    """Temperature-0 reproducibility: the same history gives the same changes, in this
    process and in another (the seed is no salted hash)."""
    turn: list[Message] = [Assistant(LS), User("notes.txt", "observation", 0, "ls")]
    history: list[Message] = [System("s"), User("task", "task"), *turn, *turn, *turn]
    first, again = plan(history), plan(list(history))
    assert first is not None and first == again
    code = (
        "from four import Assistant, System, User\n"
        "from four.invoke._cycles import plan\n"
        f"turn = [Assistant({LS!r}), User('notes.txt', 'observation', 0, 'ls')]\n"
        "print(plan([System('s'), User('task', 'task'), *turn, *turn, *turn]).seed)\n"
    )
    seeds = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": salt},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for salt in ("1", "2")
    }
    assert seeds == {str(first.seed)}
    with LoopbackServer() as one, LoopbackServer() as two:
        for server in (one, two):
            server.push(chat(CAT))
            cycle_breaking_invoke(model(server, temperature=0))(history)
        assert one.bodies(CHAT) == two.bodies(CHAT)


def test_a_history_with_no_repeat_is_sent_as_it_is(server: LoopbackServer) -> None:
    server.push(chat(CAT))
    history: list[Message] = [System("s"), User("task", "task"), Assistant(LS)]
    history.append(User("notes.txt", "observation", 0, "ls"))
    reply = cycle_breaking_invoke(model(server, temperature=0))(history).unwrap()
    (body,) = server.bodies(CHAT)
    assert body["temperature"] == 0 and "seed" not in body and count(body) == 4
    assert reply.cycle_break is None


def test_the_same_reply_with_another_answer_is_no_cycle() -> None:
    """A SEARCH/REPLACE sent twice: applied, then not found. Both answers are kept."""
    edit = "a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```"
    history: list[Message] = [User("task", "task"), Assistant(edit), User("applied", "observation")]
    history += [Assistant(edit), User("No file was changed: not found", "observation")]
    assert plan(history) is None


def test_repeated_tool_call_turns_are_left_out_whole(server: LoopbackServer) -> None:
    server.push(chat("", [call(command="cat notes.txt")]))
    G = cycle_breaking_invoke(
        litellm_toolcall_invoke("openai/test-model", api_base=server.url, api_key="k")
    )
    history: list[Message] = [System("s"), User("task", "task")]
    for n in range(3):  # the same call, a new id each time
        history += [
            Assistant("", (ToolCall(f"c{n}", "bash", '{"command": "ls"}'),)),
            ToolResult(f"c{n}", "notes.txt", command="ls"),
        ]
    G(history).unwrap()
    (body,) = server.bodies(CHAT)
    messages = cast(list[JSON], body["messages"])
    assert openai_history_problems(messages) == [] and len(messages) == 4
    assert "c2" in str(messages[2]) and "c0" not in str(messages)


@given(histories())
def test_what_is_sent_is_always_a_valid_history(history: list[Message]) -> None:
    chosen = plan(history)
    messages = history if chosen is None else chosen.sent
    assert openai_history_problems(cast(list[JSON], to_chat(messages))) == []
    if chosen is not None:  # whole turns left out, the head kept
        assert list(messages[:2]) == history[:2]
        assert all(not isinstance(history[i], System) for i in chosen.dropped)


def test_a_model_that_cannot_be_resampled_only_loses_the_repeats() -> None:
    G = cycle_breaking_invoke(scripted_invoke([CAT]))
    turn: list[Message] = [Assistant(LS), User("notes.txt", "observation", 0, "ls")]
    reply = G([User("task", "task"), *turn, *turn]).unwrap()
    assert reply.cycle_break is not None and reply.cycle_break.sampling is None
    assert reply.cycle_break.dropped == (1, 2)


def test_anthropic_is_sent_a_temperature_but_no_seed(server: LoopbackServer) -> None:
    server.push(anthropic(CAT))
    G = cycle_breaking_invoke(
        litellm_invoke("anthropic/claude-test", api_base=server.root, api_key="k", temperature=0)
    )
    turn: list[Message] = [Assistant(LS), User("notes.txt", "observation", 0, "ls")]
    reply = G([System("s"), User("task", "task"), *turn, *turn]).unwrap()
    (body,) = server.bodies("/v1/messages")
    assert body["temperature"] == 0.7 and "seed" not in body
    assert reply.cycle_break is not None
    assert reply.cycle_break.sampling == Sampling(0.7, None)  # what was sent, no more


def test_awaited_under_arun(server: LoopbackServer, tmp_path: Path) -> None:
    from four.cli._batch import awaited_invoke

    server.push(chat(LS), chat(LS), chat(CAT), chat(DONE))
    plain = cycle_breaking_invoke(model(server, temperature=0))
    G = awaited_invoke(plain)
    assert isinstance(G, AsyncWrapped) and isinstance(G.wrapper, CycleBreakingInvoke)
    V2 = note_repeats(local_env(cwd=str(workspace(tmp_path))))
    path = asyncio.run(arun(G, regex_parse(), V2, save_trajectory(tmp_path / "runs"), "s", "t"))
    third = server.bodies(CHAT)[2]
    assert third["temperature"] == 0.7 and count(third) == 4
    replies = [m for m in load_trajectory(path).messages if isinstance(m, Assistant)]
    assert replies[2].cycle_break is not None and replies[2].cycle_break.repeats == 2
    assert alitellm_invoke("openai/m").sampled(Sampling(0.5, 1)).sampling == Sampling(0.5, 1)


def test_four_run_breaks_cycles_by_default(server: LoopbackServer, tmp_path: Path) -> None:
    from four.cli import main

    work = workspace(tmp_path)
    server.push(chat(LS), chat(LS), chat(CAT), chat(DONE))
    argv = ["run", "task", "--model", "test-model", "--api-base", server.url]
    assert main([*argv, "-o", str(tmp_path / "runs"), "--cwd", str(work), "-q"]) == 0
    third = server.bodies(CHAT)[2]
    assert isinstance(third["seed"], int) and count(third) == 4


@pytest.mark.parametrize("bad", [(), (0.0,), (3.0,), "0.7", (True,)])
def test_bad_temperatures_are_refused_at_construction(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="temperatures"):
        cycle_breaking_invoke(scripted_invoke([]), bad)  # type: ignore[arg-type]


def test_a_failed_redraw_keeps_what_the_discarded_draws_cost(server: LoopbackServer) -> None:
    from tests._server import error

    server.push(chat(LS, usage=(10, 5)), error(400, "bad request", "invalid_request_error"))
    G = cycle_breaking_invoke(model(server, temperature=0))
    turn: list[Message] = [Assistant(LS), User("notes.txt", "observation", 0, "ls")]
    result = G([System("s"), User("task", "task"), *turn, *turn])
    assert not isinstance(result, Success)
    usage = result.failure().usage
    assert usage is not None and usage.prompt_tokens >= 10


# --- after a NO: work the check rejected is not replayed ---------------------------------

WRONG = "```bash\necho 5 > answer.txt\n```"
RIGHT = "```bash\necho 4 > answer.txt\n```"


@pytest.mark.parametrize(
    "again",
    [
        # Told NO, it writes the same wrong answer (its own reply at temperature 0).
        pytest.param(WRONG, id="the rejected work replayed"),
        # Told NO, it submits again at once: nothing ran since, the check would judge
        # the same state.
        pytest.param(DONE, id="a bare resubmission"),
    ],
)
def test_a_reply_after_a_no_that_would_meet_it_again_is_drawn_again_seen_in_the_requests(
    server: LoopbackServer, tmp_path: Path, again: str
) -> None:
    from four.checks import command_check, verify

    # The model writes a wrong answer and submits; told NO, its own next reply (``again``)
    # is drawn again, sampled: right.
    server.push(chat(WRONG), chat(DONE), chat(again), chat(RIGHT), chat(DONE))
    G = cycle_breaking_invoke(model(server, temperature=0))
    check = verify(command_check("grep -qx 4 answer.txt"), retries_per_reason=1)
    work = workspace(tmp_path)
    path = run(G, regex_parse(), local_env(cwd=str(work)), save_trajectory(tmp_path / "runs"),
               "sys", "2 + 2 into answer.txt", 6, check=check)  # fmt: skip
    assert str(load_trajectory(path).outcome) == "accepted"
    assert (work / "answer.txt").read_text() == "4\n"

    bodies = server.bodies(CHAT)
    assert [(b["temperature"], "seed" in b) for b in bodies] == [
        (0, False), (0, False), (0, False), (0.7, True), (0, False)
    ]  # fmt: skip
    assert bodies[3]["messages"] == bodies[2]["messages"]  # the same call, drawn again
    replies = [m for m in load_trajectory(path).messages if isinstance(m, Assistant)]
    assert [r.content for r in replies] == [WRONG, DONE, RIGHT, DONE]
    change = replies[2].cycle_break
    assert change is not None and change.discarded == 1 and change.dropped == ()
    assert change.reason == "the reply replayed work the check rejected (turns 1, 2)"
    assert change.sampling == Sampling(0.7, cast(int, bodies[3]["seed"]))
    assert replies[3].cycle_break is None  # the replay is behind


def test_a_new_reply_after_a_no_is_the_model_s_own_with_no_note(server: LoopbackServer) -> None:
    server.push(chat(RIGHT))
    history: list[Message] = [System("s"), User("task", "task"), Assistant(WRONG)]
    history += [User("", "observation", 0, "echo 5 > answer.txt"), Assistant(DONE)]
    history.append(User("The check failed: answer.txt", "feedback"))
    reply = cycle_breaking_invoke(model(server, temperature=0))(history).unwrap()
    (body,) = server.bodies(CHAT)
    assert body["temperature"] == 0 and "seed" not in body and count(body) == len(history)
    assert reply.content == RIGHT and reply.cycle_break is None


def test_a_replay_is_followed_step_by_step_and_ends_where_the_work_differs() -> None:
    ls: list[Message] = [Assistant(LS), User("notes.txt", "observation", 0, "ls")]
    submit: list[Message] = [Assistant(DONE), User("NO: the check failed", "feedback")]
    task: list[Message] = [User("task", "task")]
    # Right after the NO: the work's first step, or the same submission at once.
    assert replayed([*task, *ls, *submit]) == ((plan_key(LS), 0), (plan_key(DONE), 1))
    assert replayed([*task, *ls, *submit, *ls]) == ((plan_key(DONE), 1),)
    other: list[Message] = [Assistant(CAT), User("alpha", "observation", 0, "cat notes.txt")]
    assert replayed([*task, *ls, *submit, *other]) == ()
    assert replayed([*task, *ls]) == ()  # no NO yet: nothing rejected


def test_every_rejected_work_is_kept_from_a_replay() -> None:
    """Told NO twice, for work that began `ls`, then `cat`: after the second NO, either
    first step would start a replay."""
    ls: list[Message] = [Assistant(LS), User("notes.txt", "observation", 0, "ls")]
    cat: list[Message] = [Assistant(CAT), User("alpha", "observation", 0, "cat notes.txt")]
    submit: list[Message] = [Assistant(DONE), User("NO: the check failed", "feedback")]
    history: list[Message] = [User("task", "task"), *ls, *submit, *cat, *submit]
    assert replayed(history) == ((plan_key(LS), 0), (plan_key(DONE), 1), (plan_key(CAT), 2))
    G = cycle_breaking_invoke(scripted_invoke([CAT, CAT, "```bash\nwc -l notes.txt\n```"]))
    chosen = G.choose(history, True)
    assert chosen is not None
    assert chosen.replays == {plan_key(LS), plan_key(DONE), plan_key(CAT)}
    assert chosen.replay == "the reply replayed work the check rejected (turns 1, 2, 3)"


def plan_key(text: str) -> tuple[object, ...]:
    return (text.strip(), ())
