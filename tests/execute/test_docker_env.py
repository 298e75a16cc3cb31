"""docker_env: container lifecycle (removed however the run ends) and in-container kills."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

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
    Observation,
    Outcome,
    Rejected,
    Submitted,
    run,
    scripted_invoke,
)
from four.execute import EXIT_SIGNAL
from four.execute._docker import LABEL, DockerEnv, docker_env
from four.execute._interrupt import interrupt, interruptible
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


def test_a_command_its_run_killed_ends_killed_whatever_the_daemon_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A supervisor's kill (a stall, a time limit) and the client's end race with
    # `docker inspect`, which a busy daemon may answer "not running" for a moment: the
    # command this process killed ends killed, never as "the container is gone".
    monkeypatch.setattr(DockerEnv, "_running", lambda self, name: False)
    with docker_env(TEST_IMAGE, timeout=60) as env:
        name = env.container
        assert name is not None
        seen: list[Result[Observation, Submitted | ExecutionError]] = []

        def work() -> None:
            with interruptible("a stalled run"):
                seen.append(env(Action("sleep 60")))

        thread = threading.Thread(target=work)
        thread.start()
        deadline = time.monotonic() + 60
        while "sleep 60" not in _processes(name):
            assert time.monotonic() < deadline and thread.is_alive()
            time.sleep(0.05)
        assert interrupt("a stalled run") == 1
        thread.join(timeout=60)
        (result,) = seen
        assert isinstance(result, Success), result
        assert result.unwrap().returncode in (-9, 137)  # the client's kill, or the command's
        assert "sleep 60" not in _processes(name)
        after = env(Action("echo next"))  # the container is there: the next command runs
        assert isinstance(after, Success) and after.unwrap().returncode == 0


def _processes(container: str) -> str:
    return subprocess.run(
        ["docker", "exec", container, "ps", "-eo", "args"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


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


def test_the_docker_client_gets_no_variable_of_the_driver_but_what_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real client behind a wrapper that notes the variables of every call four makes.
    real = shutil.which("docker")
    assert real is not None
    noted = tmp_path / "noted"
    wrapper = tmp_path / "docker"
    wrapper.write_text(f'#!/bin/sh\nenv >> {noted}\necho ---- >> {noted}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-four-driver-secret")
    monkeypatch.setenv("FOUR_DRIVER_NOTE", "the driver's own")
    monkeypatch.setenv("DOCKER_CLI_HINTS", "false")  # DOCKER_* reach it: its settings
    env = docker_env(TEST_IMAGE, timeout=5.0, docker=str(wrapper))
    try:
        assert env(Action("echo hi")).unwrap().content.endswith("hi\n</output>")
        assert env(Action("sleep 30")).unwrap().timed_out  # exec, then kill and inspect
    finally:
        env.close()
    calls = [c for c in noted.read_text().split("----\n") if c.strip()]
    assert len(calls) >= 4  # run, exec twice, the kill inside, rm
    for call in calls:
        names = {line.split("=", 1)[0] for line in call.splitlines() if "=" in line}
        assert "DOCKER_CLI_HINTS" in names and "PATH" in names, names
        assert not names & {"OPENAI_API_KEY", "FOUR_DRIVER_NOTE"}, names


def test_zz_no_container_is_left(shared_container: str) -> None:
    """Runs last in this file: of the containers this process made, only the shared one
    of the fault matrix is left (its fixture removes it, and checks, at the session end)."""
    assert containers() == [shared_container]
