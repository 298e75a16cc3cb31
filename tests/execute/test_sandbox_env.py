"""sandbox_env: a read-only system, one writable folder, no network unless asked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from returns.result import Failure, Success

from four import Action, ExecutionError
from four.execute._sandbox import SandboxEnv, sandbox_env
from tests.execute.conftest import bwrap_problem, need


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    need(bwrap_problem())


def out(env: SandboxEnv, command: str) -> str:
    result = env(Action(command))
    assert isinstance(result, Success), result
    content: str = result.unwrap().content
    return content[content.index("<output>\n") + 9 : content.rindex("</output>")]


def test_system_is_read_only_and_the_work_folder_writable() -> None:
    with sandbox_env() as env:
        assert "Read-only file system" in out(env, "touch /usr/x")
        assert "Read-only file system" in out(env, "touch /etc/x")
        assert "Read-only file system" in out(env, "mkdir /new")
        assert out(env, "touch /tmp/x && echo ok") == "ok\n"
        assert out(env, "echo data > f.txt && cat f.txt && pwd") == f"data\n{env.folder}\n"
        assert out(env, 'echo "$HOME"') == f"{env.folder}\n"


def test_host_secrets_and_home_are_not_visible(tmp_path: Path) -> None:
    with sandbox_env() as env:
        assert "No such file" in out(env, "cat /etc/shadow")
        assert "No such file" in out(env, "ls /root")
        assert "No such file" in out(env, f"ls {tmp_path}")


def test_commands_hold_no_capability_and_see_their_own_namespaces() -> None:
    with sandbox_env() as env:
        assert out(env, "grep CapEff /proc/self/status") == "CapEff:\t0000000000000000\n"
        assert out(env, "hostname") == "sandbox\n"
        # Its own pid namespace: bwrap's init, bash, the command; never a host process.
        assert int(out(env, "ls -d /proc/[0-9]* | wc -l")) <= 4
        host_ipc = os.readlink("/proc/self/ns/ipc")
        assert out(env, "readlink /proc/self/ns/ipc") != f"{host_ipc}\n"


def test_no_network_unless_asked() -> None:
    with sandbox_env() as env:
        assert out(env, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '") == "lo\n"
    with sandbox_env(network=True) as env:
        assert out(env, "tail -n +3 /proc/net/dev | wc -l") != "1\n"


def test_given_workdir_is_kept_and_shared_between_commands(tmp_path: Path) -> None:
    with sandbox_env(workdir=str(tmp_path)) as env:
        out(env, "echo 1 > a")
        assert out(env, "cat a") == "1\n"
    assert (tmp_path / "a").read_text() == "1\n"


def test_close_removes_a_folder_it_made() -> None:
    env = sandbox_env()
    folder = env.folder
    out(env, "touch x")
    env.close()
    assert not os.path.exists(folder)


def test_bwrap_failure_is_an_execution_error() -> None:
    env = sandbox_env(ro_binds=["/nonexistent-four-path"])
    result = env(Action("true"))
    env.close()
    assert isinstance(result, Failure) and isinstance(result.failure(), ExecutionError)
    assert "bwrap" in result.failure().message


def test_missing_bwrap_is_an_execution_error() -> None:
    env = SandboxEnv(bwrap="/nonexistent/bwrap")
    result = env(Action("true"))
    env.close()
    assert isinstance(result, Failure) and isinstance(result.failure(), ExecutionError)


def test_a_command_that_looks_like_a_bwrap_error_is_only_an_observation() -> None:
    with sandbox_env() as env:
        result = env(Action("echo 'bwrap: pretend'; exit 1"))
        assert isinstance(result, Success) and result.unwrap().returncode == 1
