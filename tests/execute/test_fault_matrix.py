"""The fault matrix, run against every environment: local, persistent shell, sandbox, Docker."""

from __future__ import annotations

import secrets
import time
import tracemalloc

import pytest
from returns.result import Failure, Success

from four import Action, Observation, Submitted
from four.execute import EXIT_SIGNAL, TIMEOUT_RETURNCODE
from tests.execute.conftest import Env, MakeEnv, alive


def observe(env: Env, command: str) -> Observation:
    result = env(Action(command))
    assert isinstance(result, Success), result
    observation: Observation = result.unwrap()
    return observation


def output_of(observation: Observation) -> str:
    content = observation.content
    return content[content.index("<output>\n") + len("<output>\n") : content.rindex("</output>")]


def test_timeout_kills_children_and_grandchildren(make_env: MakeEnv) -> None:
    env = make_env(timeout=1.0)
    token = f"four-{secrets.token_hex(6)}"
    command = (
        f'bash -c "exec -a {token}-child sleep 30" &\n'
        f"echo child $!\n"
        f'( bash -c "exec -a {token}-grandchild sleep 30" & echo grandchild $!; wait ) &\n'
        "sleep 0.2; echo started\n"
        f"exec -a {token}-main sleep 30\n"
    )
    start = time.monotonic()
    observation = observe(env, command)
    elapsed = time.monotonic() - start
    assert observation.timed_out and observation.returncode == TIMEOUT_RETURNCODE
    assert "started" in output_of(observation)
    assert "timed out after 1 s" in observation.content
    assert elapsed < 4.0
    pids = [
        int(line.split()[1])
        for line in output_of(observation).splitlines()
        if line.startswith(("child ", "grandchild "))
    ]
    assert len(pids) == 2
    deadline = time.monotonic() + 2
    while alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(token) == []
    if make_env.kind in ("local", "shell"):  # the printed pids are this machine's
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    assert token.encode() not in f.read()
            except FileNotFoundError:
                pass
    assert output_of(observe(env, "echo still usable")) == "still usable\n"


def test_binary_output_is_decoded_with_replacement(make_env: MakeEnv) -> None:
    env = make_env(max_output=2_000)
    observation = observe(env, "head -c 1000000 /dev/urandom")
    assert observation.returncode == 0
    assert "\ufffd" in observation.content
    assert len(observation.content) < 3_000
    assert output_of(observe(env, r"printf 'a\xffb\n'")) == "a\ufffdb\n"


def test_a_flood_of_output_keeps_memory_bounded(make_env: MakeEnv) -> None:
    env = make_env(timeout=60.0, max_output=10_000)
    tracemalloc.start()
    try:
        observation = observe(env, "yes | head -c 200000000")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert observation.returncode == 0 and not observation.timed_out
    assert peak < 8_000_000, peak  # 200 MB went through
    assert "199990000 in the middle" in observation.content or "199990000" in observation.content
    assert len(observation.content) < 11_000


def test_a_command_reading_stdin_gets_end_of_file(make_env: MakeEnv) -> None:
    env = make_env(timeout=5.0)
    start = time.monotonic()
    observation = observe(env, 'cat; read -r line; echo "read: $? [$line]"; wc -c')
    assert time.monotonic() - start < 3.0
    assert not observation.timed_out
    assert "read: 1 []" in observation.content
    assert "\n0\n" in observation.content


def test_exit_code_is_an_observation(make_env: MakeEnv) -> None:
    env = make_env()
    observation = observe(env, "echo before; exit 3")
    assert observation.returncode == 3
    assert observation.content.startswith("<returncode>3</returncode>")
    assert "before" in observation.content
    assert output_of(observe(env, "echo next")) == "next\n"


def test_exit_signal_submits_a_multiline_output(make_env: MakeEnv) -> None:
    env = make_env()
    result = env(Action(f"echo {EXIT_SIGNAL}; printf 'line one\\nline two\\n\\nlast\\n'"))
    assert result == Failure(Submitted("line one\nline two\n\nlast"))


def test_exit_signal_needs_return_code_zero_and_the_first_line(make_env: MakeEnv) -> None:
    env = make_env()
    assert isinstance(env(Action(f"echo {EXIT_SIGNAL}; false")), Success)
    assert isinstance(env(Action(f"echo hi; echo {EXIT_SIGNAL}")), Success)
    assert env(Action(f"echo; echo '  {EXIT_SIGNAL}  '")) == Failure(Submitted(""))


def test_a_ten_megabyte_line_is_cut_head_and_tail(make_env: MakeEnv) -> None:
    env = make_env(max_output=1_000)
    observation = observe(env, "head -c 10000000 /dev/zero | tr '\\0' a; echo; echo END")
    shown = output_of(observation)
    assert shown.startswith("a" * 500)
    assert shown.rstrip().endswith("END")
    assert "characters elided" in shown
    assert "10000005 characters" in observation.content
    assert len(observation.content) < 1_500


def test_max_output_zero_keeps_no_output(make_env: MakeEnv) -> None:
    observation = observe(make_env(max_output=0), "echo secret-looking output")
    assert output_of(observation) == ""
    assert "none are shown (max_output=0)" in observation.content


def test_secrets_are_invisible_and_explicit_env_passes(
    make_env: MakeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOUR_TEST_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-should-not-leak")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    env = make_env(env={"VISIBLE": "yes"})
    shown = output_of(
        observe(env, 'env; echo "[$FOUR_TEST_API_KEY$GITHUB_TOKEN$DB_PASSWORD]"; echo "v=$VISIBLE"')
    )
    assert "should-not-leak" not in shown and "hunter2" not in shown
    assert "[]" in shown and "v=yes" in shown


def test_bash_not_sh(make_env: MakeEnv) -> None:
    env = make_env()
    assert output_of(observe(env, "[[ 1 == 1 ]] && echo {1..3} && echo ${BASH_VERSION%%.*}")) in (
        "1 2 3\n5\n",
        "1 2 3\n4\n",
    )


def test_background_job_holding_the_output_does_not_stall(make_env: MakeEnv) -> None:
    env = make_env(timeout=20.0)
    token = f"four-{secrets.token_hex(6)}"
    start = time.monotonic()
    observation = observe(env, f'bash -c "exec -a {token} sleep 30" & echo hi')
    assert time.monotonic() - start < 3.0
    assert "hi" in output_of(observation) and not observation.timed_out
    if make_env.kind != "shell":  # the shell keeps its background jobs until it ends
        deadline = time.monotonic() + 2
        while alive(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(token) == []


def test_nul_and_empty_commands_are_observations(make_env: MakeEnv) -> None:
    env = make_env()
    assert observe(env, "echo a\0b").returncode == 126
    assert observe(env, "  ").returncode == 126


def test_syntax_error_is_an_observation(make_env: MakeEnv) -> None:
    env = make_env()
    observation = observe(env, 'echo "unbalanced')
    assert observation.returncode == 2
    assert output_of(observe(env, "echo fine")) == "fine\n"


def test_timeout_kills_processes_that_left_the_process_group(make_env: MakeEnv) -> None:
    env = make_env(timeout=1.0)
    token = f"four-{secrets.token_hex(6)}"
    # `set -m` puts each background job in a process group of its own; the double fork
    # leaves a daemon whose parent is gone.
    command = (
        f'set -m; bash -c "exec -a {token}-group sleep 30" &\n'
        f"( ( exec -a {token}-daemon sleep 30 & ) & )\n"
        "sleep 30\n"
    )
    observation = observe(env, command)
    assert observation.timed_out
    deadline = time.monotonic() + 2
    while alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(token) == []


def test_a_holder_of_the_output_in_another_process_group_is_found(make_env: MakeEnv) -> None:
    env = make_env(timeout=20.0)
    token = f"four-{secrets.token_hex(6)}"
    start = time.monotonic()
    observation = observe(env, f'set -m; bash -c "exec -a {token} sleep 30" & echo hi')
    assert time.monotonic() - start < 3.0
    assert "hi" in output_of(observation)
    if make_env.kind != "shell":
        deadline = time.monotonic() + 2
        while alive(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(token) == []
