"""docker_env: container lifecycle (removed however the run ends) and in-container kills."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

import pytest
from returns.result import Failure, Result, Success

from four import (
    Action,
    Assistant,
    ExecutionError,
    ExecutionFailed,
    Finished,
    FormatError,
    Message,
    Outcome,
    Rejected,
    Submitted,
    run,
    scripted_invoke,
)
from four.execute import EXIT_SIGNAL
from four.execute._docker import LABEL, docker_env
from four.parse import regex_parse
from tests.execute.conftest import TEST_IMAGE, docker_problem, need


@pytest.fixture(autouse=True)
def _docker() -> None:
    need(docker_problem())


def containers(name: str | None = None) -> list[str]:
    """Containers (running or not) made by this process, or with this name."""
    flt = f"name=^{name}$" if name else f"label={LABEL}={os.getpid()}"
    done = subprocess.run(
        ["docker", "ps", "-a", "--format", "{{.Names}}", "--filter", flt],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.split()


def keep(messages: Sequence[Message], outcome: Outcome) -> tuple[list[Message], Outcome]:
    return list(messages), outcome


def test_with_block_starts_and_removes_the_container() -> None:
    with docker_env(TEST_IMAGE) as env:
        name = env.container
        assert name is not None and containers(name)
        assert env(Action("echo hi")).unwrap().content.endswith("hi\n</output>")
    assert containers(name) == []


def test_no_network_by_default() -> None:
    with docker_env(TEST_IMAGE) as env:
        content = env(Action("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")).unwrap().content
        assert content.endswith("\nlo\n</output>")


def test_run_removes_the_container_when_the_agent_submits() -> None:
    env = docker_env(TEST_IMAGE)
    G = scripted_invoke(
        ["```bash\necho hello > /tmp/x\n```", f"```bash\necho {EXIT_SIGNAL}; cat /tmp/x\n```"]
    )
    _, outcome = run(G, regex_parse(), env, keep, prompt="go")
    assert outcome == Finished("hello")
    assert env.container is None and containers() == []


def test_run_removes_the_container_after_ctrl_c() -> None:
    env = docker_env(TEST_IMAGE)

    def interrupt(_: Sequence[Message]) -> str:
        raise KeyboardInterrupt

    G = scripted_invoke(["```bash\ntrue\n```", interrupt])
    with pytest.raises(KeyboardInterrupt):
        run(G, regex_parse(), env, keep, prompt="go")
    assert containers() == []


def test_run_removes_the_container_after_an_exception() -> None:
    env = docker_env(TEST_IMAGE)

    def crash(_: Sequence[Message]) -> Assistant:
        raise RuntimeError("model client bug")

    with pytest.raises(RuntimeError):
        run(scripted_invoke(["```bash\ntrue\n```", crash]), regex_parse(), env, keep, prompt="go")
    assert containers() == []


def test_a_container_that_dies_ends_the_run() -> None:
    env = docker_env(TEST_IMAGE)
    G = scripted_invoke(["```bash\ntrue\n```", "```bash\necho never\n```"])

    def kill_then_parse(
        reply: Assistant,
    ) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        if "never" in reply.content and env.container:
            subprocess.run(["docker", "rm", "-f", env.container], capture_output=True, check=True)
        return regex_parse()(reply)

    _, outcome = run(G, kill_then_parse, env, keep, prompt="go")
    assert isinstance(outcome, ExecutionFailed) and "container" in outcome.error
    assert containers() == []


def test_missing_image_is_an_execution_error() -> None:
    env = docker_env("four-no-such-image:never")
    result = env(Action("true"))
    assert isinstance(result, Failure) and isinstance(result.failure(), ExecutionError)
    assert containers() == []


def test_a_given_container_is_used_and_never_removed() -> None:
    with docker_env(TEST_IMAGE) as owner:
        name = owner.container
        assert name is not None
        guest = docker_env(TEST_IMAGE, container=name)
        assert isinstance(guest(Action("true")), Success)
        guest.close()
        assert containers(name)
    assert containers(name) == []


def test_zz_no_container_is_left(shared_container: str) -> None:
    """Runs last in this file: of the containers this process made, only the shared one
    of the fault matrix is left (its fixture removes it, and checks, at the session end)."""
    assert containers() == [shared_container]
