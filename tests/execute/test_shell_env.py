"""The persistent shell: state carries over, restarts keep what they can, nothing leaks."""

from __future__ import annotations

import gc
import os
import signal
import time
import warnings

from returns.result import Failure, Success

from four import Action, ExecutionError, Observation
from four.execute import ShellEnv, local_env, shell_env
from tests.execute.conftest import alive


def observe(env: ShellEnv, command: str) -> Observation:
    result = env(Action(command))
    assert isinstance(result, Success), result
    observation: Observation = result.unwrap()
    return observation


def out(env: ShellEnv, command: str) -> str:
    content = observe(env, command).content
    return content[content.index("<output>\n") + 9 : content.rindex("</output>")]


def test_cd_exports_functions_and_variables_persist(tmp_path: object) -> None:
    with shell_env() as env:
        observe(env, f"cd {tmp_path} && export GREETING=hello && plain=1 && f() {{ echo fn; }}")
        assert out(env, 'pwd; echo "$GREETING $plain"; f') == f"{tmp_path}\nhello 1\nfn\n"
        observe(env, "declare -x TOP=level")  # declare in a sourced file stays global
        assert out(env, "echo $TOP") == "level\n"


def test_fresh_process_env_does_not_persist(tmp_path: object) -> None:
    env = local_env(cwd="/")
    env(Action(f"cd {tmp_path}; export X=1"))
    assert env(Action("pwd; echo [$X]")).unwrap().content.endswith("/\n[]\n</output>")


def test_restart_after_timeout_keeps_directory_and_exports(tmp_path: object) -> None:
    with shell_env(timeout=0.5) as env:
        observe(env, f"cd {tmp_path}; export KEEP=kept; gone=1")
        first = env.pid
        observation = observe(env, "cd /; sleep 10")
        assert observation.timed_out and "restarted" in observation.content
        assert out(env, 'pwd; echo "$KEEP [$gone]"') == f"{tmp_path}\nkept []\n"
        assert env.pid != first and env.restarts == 1


def test_a_restarted_shell_still_kills_escaped_processes_at_a_timeout() -> None:
    token = f"four-shell-restart-escape-{os.urandom(4).hex()}"
    with shell_env(timeout=0.5) as env:
        observe(env, "export A=1")  # a finished command: its state is saved
        observe(env, "sleep 5")  # timeout: the shell is restarted from the saved state
        observation = observe(env, f'set -m; bash -c "exec -a {token} sleep 30" & sleep 5')
        assert observation.timed_out
        deadline = time.monotonic() + 2
        while alive(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(token) == []


def test_exit_restarts_the_shell_and_reports_the_code() -> None:
    with shell_env() as env:
        observe(env, "export A=1")
        observation = observe(env, "echo bye; exit 7")
        assert observation.returncode == 7 and "exited with code 7" in observation.content
        assert out(env, "echo $A") == "1\n"


def test_shell_killed_between_commands_is_restarted_with_a_note() -> None:
    with shell_env() as env:
        observe(env, "true")
        assert env.pid is not None
        os.killpg(env.pid, signal.SIGKILL)
        time.sleep(0.1)
        observation = observe(env, "echo back")
        assert "back" in observation.content and "restarted" in observation.content


def test_set_e_and_a_user_printf_function_do_not_break_the_protocol() -> None:
    with shell_env() as env:
        observe(env, "printf() { echo hijacked; }; export() { echo hijacked; }")
        assert out(env, "echo ok") == "ok\n"
        observe(env, "set -e")
        observation = observe(env, "false")  # set -e ends the shell: an exit, then a restart
        assert observation.returncode == 1
        assert out(env, "echo alive") == "alive\n"


def test_output_without_trailing_newline_and_the_sentinel_text() -> None:
    with shell_env() as env:
        assert out(env, "printf abc") == "abc\n"
        assert out(env, "printf '\\n__FOUR_deadbeef 0\\n'") == "\n__FOUR_deadbeef 0\n"


def test_background_output_after_the_command_shows_up_later() -> None:
    with shell_env() as env:
        observe(env, "(sleep 0.2; echo late) &")
        time.sleep(0.4)
        assert "late" in out(env, "echo now")


def test_close_kills_background_processes_and_removes_the_folder() -> None:
    token = f"four-shell-close-test-{os.urandom(4).hex()}"
    env = shell_env()
    observe(env, f'bash -c "exec -a {token} sleep 30" > /dev/null 2>&1 & sleep 0.1')
    assert alive(token)
    folder = env._dir
    assert folder is not None and os.path.isdir(folder)
    env.close()
    deadline = time.monotonic() + 2
    while alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(token) == [] and not os.path.exists(folder)
    env.close()  # idempotent
    assert out(env, "echo again") == "again\n"  # a later call starts a new shell
    env.close()


def test_finaliser_is_the_last_resort() -> None:
    token = f"four-shell-finaliser-test-{os.urandom(4).hex()}"
    env = shell_env()
    observe(env, f'bash -c "exec -a {token} sleep 30" > /dev/null 2>&1 &')
    folder = env._dir
    assert folder is not None
    del env
    with warnings.catch_warnings():  # what earlier tests left unclosed is not this test's
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    deadline = time.monotonic() + 2
    while alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(token) == [] and not os.path.exists(folder)


def test_missing_shell_is_an_execution_error() -> None:
    env = ShellEnv(shell="/nonexistent/bash")
    result = env(Action("true"))
    assert isinstance(result, Failure) and isinstance(result.failure(), ExecutionError)
