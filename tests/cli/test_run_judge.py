"""`four run --check` as an evaluator: what the model is told, held-out files, the last
judgement, retries. The model is a loopback OpenAI-protocol server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from four.cli import main
from tests._server import LoopbackServer, chat
from tests.cli.test_run import SUBMIT, args, chats, no_settings

__all__ = ["no_settings"]  # the fixture, autouse here too

ANSWER = "6011"
CHECK = f'test "$(cat result.txt)" = {ANSWER}'
ONE_RUN = ["--attempts", "1", "--retries-per-reason", "1"]  # the search: tests/search


def outcome_of(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    result: dict[str, object] = json.loads(capsys.readouterr().out)
    assert main(["audit", str(result["path"])]) == 0
    return result


@pytest.mark.parametrize("level", [None, "output"])
def test_the_check_text_stays_out_of_the_models_messages(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], level: str | None
) -> None:
    wrong = [chat(f"```bash\necho {n} > result.txt\n```") for n in (1, 2)]
    server.push(wrong[0], chat(SUBMIT), wrong[1], chat(SUBMIT))
    flags = ["--check", CHECK, *(["--feedback", level] if level else []), "--json", *ONE_RUN]
    assert main(["run", "write it", *args(server, tmp_path, *flags)]) == 1
    result = outcome_of(capsys)
    assert str(result["outcome"]).startswith("held: repeated failure")
    sent = json.dumps(chats(server))
    assert "not accepted" in sent and ANSWER not in sent


def test_held_out_files_judge_and_stay_hidden(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hidden = tmp_path / "secret"
    hidden.mkdir()
    (hidden / "check.sh").write_text(f'test "$(cat result.txt)" = {ANSWER}\n')
    server.push(
        chat(f"```bash\necho {ANSWER} > result.txt; ls -R; cat tests_hidden/check.sh\n```"),
        chat(SUBMIT),
    )
    flags = ["--check", "bash tests_hidden/check.sh", "--check-files", f"tests_hidden={hidden}"]
    assert main(["run", "write it", *args(server, tmp_path, *flags, "--json")]) == 0
    assert outcome_of(capsys)["outcome"] == "accepted"
    assert "No such file" in json.dumps(chats(server)[1]["messages"])
    assert not (tmp_path / "work" / "tests_hidden").exists()


@pytest.mark.parametrize(
    ("flag", "outcome"), [([], "accepted"), (["--no-last-judgement"], "max_steps_reached")]
)
def test_work_done_at_the_budget(
    server: LoopbackServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flag: list[str],
    outcome: str,
) -> None:
    server.push(chat(f"```bash\necho {ANSWER} > result.txt\n```"), chat("```bash\nls\n```"))
    flags = ["--check", CHECK, "--max-steps", "2", *flag, "--json", *ONE_RUN]
    assert main(["run", "write it", *args(server, tmp_path, *flags)]) == (outcome != "accepted")
    assert outcome_of(capsys)["outcome"] == outcome


def test_bad_judge_flags_are_usage_errors(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "x", *args(server, tmp_path, "--feedback", "output")]) == 2
    assert "--feedback and --check-files need --check CMD" in capsys.readouterr().err
    missing = str(tmp_path / "nowhere")
    assert (
        main(["run", "x", *args(server, tmp_path, "--check", "true", "--check-files", missing)])
        == 2
    )
    assert "--check-files: files['nowhere/']: cannot read" in capsys.readouterr().err
    assert (
        main(["run", "x", *args(server, tmp_path, "--check", "true", "--retries-per-reason", "0")])
        == 2
    )
    assert "--retries-per-reason must be at least 1" in capsys.readouterr().err


def test_the_defaults_of_a_verified_run(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Your own check: its failing lines shown, a reason told twice, 4 attempts; with
    held-out files, only the verdict (docs/search.md has why)."""
    from four.cli import build_parser
    from four.cli._options import RunOptions, options

    def parsed(*flags: str) -> RunOptions:
        argv = ["run", "t", "--model", "m", "--api-base", server.url, *flags]
        return options(build_parser("run").parse_args(argv))

    own = parsed("--check", "pytest -q")
    assert (own.feedback, own.retries_per_reason, own.attempts) == ("output", 2, 4)
    held = parsed("--check", "pytest -q", "--check-files", str(tmp_path))
    assert held.feedback == "verdict"
    plain = parsed()
    assert plain.attempts == 1
