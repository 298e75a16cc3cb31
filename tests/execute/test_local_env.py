"""local_env specifics: working folder, environment rule, memory in a separate process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from returns.result import Failure

from four import Action, ExecutionError
from four._describe import describe
from four.execute import (
    DEFAULT_INHERIT,
    QUIET_ENV,
    LocalEnv,
    command_env,
    local_env,
    shell_env,
    super_env,
)

ROOT = Path(__file__).resolve().parents[2]


def test_cwd_is_where_commands_run(tmp_path: Path) -> None:
    content = local_env(cwd=str(tmp_path))(Action("pwd")).unwrap().content
    assert f"\n{tmp_path}\n" in content


def test_missing_cwd_is_an_execution_error(tmp_path: Path) -> None:
    result = local_env(cwd=str(tmp_path / "gone"))(Action("true"))
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), ExecutionError)
    assert "cannot start bash" in result.failure().message


def test_missing_shell_is_an_execution_error() -> None:
    result = LocalEnv(shell="/nonexistent/bash")(Action("true"))
    assert isinstance(result, Failure) and isinstance(result.failure(), ExecutionError)


def test_environment_rule() -> None:
    host = {
        "PATH": "/bin",
        "HOME": "/h",
        "LC_ALL": "C",
        "OPENAI_API_KEY": "k",
        "github_token": "t",
        "MY_SECRET_THING": "s",
        "DB_PASSWORD": "p",
        "RANDOM_VAR": "r",
    }
    assert command_env(host=host) == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", **QUIET_ENV}
    everything = command_env(inherit=["*"], host=host)
    assert set(everything) == {"PATH", "HOME", "LC_ALL", "RANDOM_VAR", *QUIET_ENV}
    assert command_env(inherit=["*"], deny=[], host=host)["OPENAI_API_KEY"] == "k"
    explicit = command_env(host=host, env={"OPENAI_API_KEY": "given", "PAGER": "less"})
    assert explicit["OPENAI_API_KEY"] == "given" and explicit["PAGER"] == "less"
    assert "PATH" in DEFAULT_INHERIT


def test_the_host_environment_is_read_as_it_is_now(monkeypatch: pytest.MonkeyPatch) -> None:
    env = local_env()
    monkeypatch.setenv("LC_FOUR_TEST", "one")
    assert "one" in env(Action("echo $LC_FOUR_TEST")).unwrap().content
    monkeypatch.setenv("LC_FOUR_TEST", "two")
    assert "two" in env(Action("echo $LC_FOUR_TEST")).unwrap().content
    monkeypatch.delenv("LC_FOUR_TEST")
    assert command_env().get("LC_FOUR_TEST") is None
    monkeypatch.setenv("LC_FOUR_API_KEY", "sk")  # inherited by LC_*, denied as a secret
    assert "LC_FOUR_API_KEY" not in command_env()


def test_the_shell_is_found_on_the_commands_path_even_after_it_moved(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for folder, word in ((first, "first"), (second, "second")):
        folder.mkdir()
        tool = folder / "four-test-sh"
        tool.write_text(f"#!/bin/sh\necho {word}\n")
        tool.chmod(0o755)
    env = LocalEnv(shell="four-test-sh", env={"PATH": f"{first}:{second}:/usr/bin:/bin"})
    assert "first" in env(Action("true")).unwrap().content
    (first / "four-test-sh").unlink()
    assert "second" in env(Action("true")).unwrap().content
    (second / "four-test-sh").unlink()
    result = env(Action("true"))
    assert isinstance(result, Failure) and "cannot start four-test-sh" in result.failure().message


def test_describe_records_settings_but_not_env_values() -> None:
    settings = describe(local_env(5, 100, env={"OPENAI_API_KEY": "sk-live"}))
    assert isinstance(settings, dict)
    assert settings["type"] == "four.execute._local.LocalEnv"
    assert settings["timeout"] == 5 and settings["max_output"] == 100
    assert "sk-live" not in json.dumps(settings)
    with shell_env() as env:
        shell = describe(env)
    assert isinstance(shell, dict) and shell["type"] == "four.execute._shell.ShellEnv"
    assert not any(key.startswith("_") for key in shell)


def test_super_env_has_larger_limits() -> None:
    env = super_env()
    assert (env.timeout, env.max_output) == (300.0, 100_000)
    with super_env(persistent=True) as shell:
        assert shell.max_output == 100_000


def test_memory_stays_bounded_for_a_flood_in_a_fresh_process() -> None:
    """Peak RSS of a whole Python process pushing 200 MB through local_env and shell_env."""
    code = (
        "import resource, sys\n"
        "from four import Action\n"
        "from four.execute import local_env, shell_env\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "local_env(60)(Action('yes | head -c 200000000'))\n"
        "with shell_env(60) as env: env(Action('yes | head -c 200000000'))\n"
        "print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=True,
    )
    before, after = map(int, done.stdout.split())
    assert after - before < 30_000, (before, after)  # kB: far below the 200 MB printed


def test_one_secret_rule_for_commands_settings_and_model_options() -> None:
    from dataclasses import make_dataclass

    from four._secrets import is_secret

    names = ["OPENAI_API_KEY", "GITHUB_TOKEN", "DATABASE_URL", "AWS_REGION", "DB_PASSWORD"]
    names += ["api_key", "extra_headers", "max_tokens", "token_limit", "LC_ALL", "TEMPERATURE"]
    secret = {name for name in names if is_secret(name)}
    assert secret == set(names[:7])
    passed = command_env(inherit=["*"], host=dict.fromkeys(names, "v"))
    assert set(names) - set(passed) == secret
    settings = make_dataclass("Settings", [(name, str, "v") for name in names])()
    described = describe(settings)
    assert isinstance(described, dict)
    assert {name for name in names if described[name] == "***"} == secret
