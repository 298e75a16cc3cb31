"""The command skeleton: help, version, usage errors, settings from the environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from four.cli import _settings as settings
from four.cli import build_parser, main
from four.cli._errors import UsageError
from tests.cli._runs import ROOT, cli


def test_help_lists_commands_and_variables() -> None:
    done = cli("--help")
    assert done.returncode == 0, done.stderr
    for word in ("run", "replay", "audit", "show", "view", "stats", "FOUR_MODEL", "FOUR_API_BASE"):
        assert word in done.stdout


def test_help_imports_neither_litellm_nor_rich() -> None:
    probe = (
        "import sys\nfrom four.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('litellm', 'rich', 'four.cli._run') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src")},
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", ["run", "replay", "audit", "show", "view", "stats"])
def test_each_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert f"usage: four {command}" in capsys.readouterr().out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("four 0.")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_bad_flag_exits_2() -> None:
    done = cli("show", "--lines", "-3", "x.json")
    assert done.returncode == 2
    assert "negative" in done.stderr


@pytest.mark.parametrize(
    "words",
    [
        ["show", "--lines", "0", "x.json"],
        ["show", "--step", "0", "x.json"],
        ["stats", "--top", "0", "runs"],
        ["run", "--max-steps", "0", "task"],
        ["run", "--attempts", "0", "task"],
        ["batch", "-w", "0", "tasks.jsonl"],
    ],
)
def test_a_count_of_zero_is_refused_in_one_line(
    words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser(words[0]).parse_args(words)
    assert exited.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"four {words[0]}: error: argument ") and words[1] in last
    assert last.endswith(": must be at least 1, not 0")


def test_zero_is_a_count_where_it_means_something() -> None:
    args = build_parser("run").parse_args(["run", "--max-format-errors", "0", "--seed", "0", "t"])
    assert (args.max_format_errors, args.seed) == (0, 0)


def test_unreadable_trajectory_is_a_usage_error() -> None:
    done = cli("show", "no/such/file.json")
    assert done.returncode == 2
    assert done.stderr.startswith("four show: error: cannot read no/such/file.json")
    assert "Traceback" not in done.stderr


def test_parser_defaults_leave_settings_to_the_environment() -> None:
    args = build_parser().parse_args(["run", "fix it"])
    assert args.model is None and args.env is None and args.max_steps is None


def test_settings_parse_and_reject() -> None:
    environ = {"FOUR_MAX_STEPS": "12", "FOUR_COST_LIMIT": "1.5", "FOUR_TOOLCALLS": "yes"}
    assert settings.over(None, "FOUR_MAX_STEPS", 100, environ) == 12
    assert settings.over(None, "FOUR_MAX_STEPS", 100, {}) == 100
    assert settings.over(7, "FOUR_MAX_STEPS", 100, environ) == 7  # the flag wins
    assert settings.over(None, "FOUR_COST_LIMIT", None, environ) == 1.5
    assert settings.over(None, "FOUR_TOOLCALLS", False, environ) is True
    assert settings.get("FOUR_MODEL", {"FOUR_MODEL": ""}) is None
    with pytest.raises(UsageError, match="FOUR_MAX_STEPS='many' is not an integer"):
        settings.over(None, "FOUR_MAX_STEPS", 100, {"FOUR_MAX_STEPS": "many"})
    with pytest.raises(UsageError, match="not a number"):
        settings.over(None, "FOUR_COST_LIMIT", None, {"FOUR_COST_LIMIT": "$3"})
    with pytest.raises(UsageError, match="yes/no"):
        settings.over(None, "FOUR_TOOLCALLS", False, {"FOUR_TOOLCALLS": "maybe"})


def test_batch_is_a_subcommand() -> None:
    import contextlib
    import io

    from four.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(["batch", "--help"])
    assert "manifest.jsonl" in out.getvalue() and "--workers" in out.getvalue()


def test_model_list_shows_the_registry_and_other_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOUR_MODELS", str(tmp_path))
    (tmp_path / "mine.gguf").write_bytes(b"GGUF")
    assert main(["model", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"models folder: {tmp_path} (FOUR_MODELS)"
    assert out[1].split()[:4] == ["qwen2.5-coder-1.5b", "1.1", "GB", "not"]
    assert out[2].split() == ["mine.gguf", "0.0", "GB", "file"]


def test_model_pull_of_an_unknown_name_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "pull", "llama-9000"]) == 2
    assert capsys.readouterr().err == (
        "four model: error: unknown model 'llama-9000': use one of qwen2.5-coder-1.5b\n"
    )
