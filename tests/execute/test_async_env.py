"""alocal_env and ashell_env against real bash: what local_env and shell_env do, awaited."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Sequence

import pytest
from returns.result import Failure, Success

from four import Action, Finished, Message, Outcome, Submitted, arun, scripted_invoke
from four.execute import (
    EXIT_SIGNAL,
    AsyncShellEnv,
    alocal_env,
    ashell_env,
    local_env,
    shell_env,
)
from four.parse import regex_parse
from tests.execute.test_containment import escapes, gone

SAME = [
    "echo hi",
    "exit 3",
    "printf 'no newline'",
    "[[ a == a ]] && echo bash",
    "cat; echo stdin $?",
    "printf '\\xff\\xfe ok\\n'",
    "seq 1 5000",
    "echo err >&2; echo out",
    "echo $$",  # the first process of its own namespace
    f"echo {EXIT_SIGNAL}; echo the answer",
]


def _text(result: object) -> object:
    if isinstance(result, Success):
        observation = result.unwrap()
        return (observation.content, observation.returncode, observation.timed_out)
    assert isinstance(result, Failure)
    return result.failure()


async def _all(env: object, commands: Sequence[str]) -> list[object]:
    assert callable(env)
    return [_text(await env(Action(command))) for command in commands]


def test_alocal_env_answers_as_local_env() -> None:
    sync = local_env(max_output=300)
    expected = [_text(sync(Action(command))) for command in SAME]
    assert asyncio.run(_all(alocal_env(max_output=300), SAME)) == expected
    assert expected[-1] == Submitted("the answer")


def test_ashell_env_answers_as_shell_env() -> None:
    with shell_env(max_output=300) as sync:
        expected = [_text(sync(Action(command))) for command in SAME[:-1]]

    async def main() -> list[object]:
        async with ashell_env(max_output=300) as env:
            return await _all(env, SAME[:-1])

    assert asyncio.run(main()) == expected


def test_ashell_env_keeps_state_and_restarts_after_a_timeout() -> None:
    async def main() -> list[str]:
        async with ashell_env(timeout=1.0) as env:
            seen = []
            for command in ("cd /tmp; export FOUR_A=1", "sleep 5", "echo $PWD $FOUR_A", "exit 4"):
                seen.append((await env(Action(command))).unwrap().content)
            seen.append((await env(Action("echo back"))).unwrap().content)
            assert env.restarts == 2
            return seen

    seen = asyncio.run(main())
    assert "<returncode>124</returncode>" in seen[1] and "restarted" in seen[1]
    assert "/tmp 1" in seen[2]
    assert "<returncode>4</returncode>" in seen[3] and "exited with code 4" in seen[3]
    assert "back" in seen[4]


@pytest.mark.parametrize("kind", ["local", "shell"])
def test_a_timeout_kills_everything_the_command_started(kind: str) -> None:
    token = f"four-{secrets.token_hex(6)}"

    async def main() -> object:
        env = alocal_env(timeout=2.0) if kind == "local" else ashell_env(timeout=2.0)
        try:
            return _text(await env(Action(escapes(token) + "sleep 30")))
        finally:
            if isinstance(env, AsyncShellEnv):
                await env.aclose()

    result = asyncio.run(main())
    assert isinstance(result, tuple) and result[1:] == (124, True)
    assert gone(f"{token}-") == []


@pytest.mark.parametrize("kind", ["local", "shell"])
def test_cancelling_the_awaiting_task_kills_the_command(kind: str) -> None:
    token = f"four-{secrets.token_hex(6)}"

    async def main() -> None:
        env = alocal_env(timeout=60) if kind == "local" else ashell_env(timeout=60)
        command = escapes(token) + 'bash -c "exec -a $t-inflight sleep 60"'
        task = asyncio.ensure_future(env(Action(command)))
        for _ in range(200):  # until all six are running
            await asyncio.sleep(0.05)
            if len(gone(f"{token}-", within=0)) == 6:
                break
        assert len(gone(f"{token}-", within=0)) == 6
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        if isinstance(env, AsyncShellEnv):
            assert (await env(Action("echo again"))).unwrap().returncode == 0
            await env.aclose()

    asyncio.run(main())
    assert gone(f"{token}-") == []


@pytest.mark.parametrize("kind", ["local", "shell"])
def test_a_supervisors_interrupt_from_another_thread_kills_the_awaited_command(kind: str) -> None:
    """As for local_env and shell_env: four.batch's time limit and Ctrl-C reach it."""
    import threading

    from four.execute._interrupt import interrupt, interruptible

    token = f"four-{secrets.token_hex(6)}"

    async def main() -> int | None:
        env = alocal_env(timeout=60) if kind == "local" else ashell_env(timeout=60)
        with interruptible(token):
            killer = threading.Timer(0.5, interrupt, (token,))
            killer.start()
            try:
                ran = await env(Action(escapes(token) + 'bash -c "exec -a $t-x sleep 60"'))
            finally:
                killer.cancel()
                if isinstance(env, AsyncShellEnv):
                    await env.aclose()
        return ran.unwrap().returncode

    started = time.monotonic()
    code = asyncio.run(main())
    assert time.monotonic() - started < 20 and code != 0
    assert gone(f"{token}-") == []


def test_aclose_ends_background_processes() -> None:
    token = f"four-{secrets.token_hex(6)}"

    async def main() -> None:
        async with ashell_env() as env:
            await env(Action(escapes(token)))
            for _ in range(100):  # until all five run (the last may still be starting)
                if len(gone(f"{token}-", within=0)) == 5:
                    break
                await asyncio.sleep(0.05)
            assert len(gone(f"{token}-", within=0)) == 5

    asyncio.run(main())
    assert gone(f"{token}-") == []


def test_arun_runs_with_an_async_environment() -> None:
    def keep(messages: Sequence[Message], outcome: Outcome) -> tuple[list[Message], Outcome]:
        return list(messages), outcome

    G = scripted_invoke(
        ["```bash\necho from-arun\n```", f"```bash\necho {EXIT_SIGNAL}; echo 42\n```"]
    )
    messages, outcome = asyncio.run(arun(G, regex_parse(), alocal_env(), keep, prompt="go"))
    assert "from-arun" in str(messages[3].content)
    assert outcome == Finished("42")


def test_the_async_environments_have_the_shapes_arun_takes() -> None:
    from four.types import AsyncCloseable, AsyncExecute

    local: AsyncExecute = alocal_env()
    shell: AsyncExecute = ashell_env()
    closeable: AsyncCloseable = ashell_env()
    assert isinstance(closeable, AsyncCloseable) and callable(local) and callable(shell)
