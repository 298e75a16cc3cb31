"""The domain registry and ``four run --domain``: bash is the default domain, built from
the shared parts; a domain is imported only when asked for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from returns.result import Success

from four import Action, Assistant, Finished
from four.checks import CommandCheck
from four.cli import main
from four.domains import _REGISTRY as REGISTRY
from four.domains import Domain, DomainError, DomainSetup, domain_names, get_domain
from four.execute import LocalEnv, NoteRepeats
from four.parse import RegexParse
from four.trajectory import load_trajectory
from tests._server import LoopbackServer, chat

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_bash_is_the_default_domain_and_is_made_of_the_shared_parts(tmp_path: Path) -> None:
    bash = get_domain("bash")
    assert domain_names()[0] == "bash"
    assert isinstance(bash.parse(), RegexParse)
    where = DomainSetup(workspace=tmp_path, output_dir=tmp_path / "runs", command_timeout=7)
    env = bash.environment(where)
    assert isinstance(env, NoteRepeats)  # a repeated command and output is pointed out
    assert isinstance(env.inner, LocalEnv)
    assert env.cwd == str(tmp_path) and env.timeout == 7
    seen = env(Action("pwd"))
    assert isinstance(seen, Success) and str(tmp_path) in seen.unwrap().content
    assert bash.check(where, env, None) is None
    check = bash.check(where, env, "true")
    assert isinstance(check, CommandCheck) and check.command == "true"
    emit = bash.emit(where, env)
    path = emit([], Finished("ok"))
    assert (
        path.parent == tmp_path / "runs" and load_trajectory(path).outcome == "exit:task_complete"
    )
    assert "```bash" in bash.system


def test_every_domain_says_the_same_summary_as_its_registry_line() -> None:
    for name in domain_names():
        try:
            domain = get_domain(name)
        except DomainError as exc:  # its extra is not installed here (CI installs them all)
            assert f"pip install 'four-loop[{REGISTRY[name][1]}]'" in str(exc)
            continue
        assert isinstance(domain, Domain) and domain.name == name
        assert domain.summary == REGISTRY[name][2]


def test_an_unknown_domain_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(DomainError, match=r"unknown domain 'nope': use one of bash"):
        get_domain("nope")


def test_import_four_loads_no_domain() -> None:
    code = "import four, sys; print(sorted(m for m in sys.modules if m.startswith('four.domains')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _args(server: LoopbackServer, tmp_path: Path) -> list[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    runs = str(tmp_path / "runs")
    return ["--model", "m", "--api-base", server.url, "-o", runs, "--cwd", str(work)]


def test_four_run_domain_bash_uses_the_domains_prompt_parser_and_environment(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(chat("```bash\npwd\n```"), chat(SUBMIT))
    assert main(["run", "where", "--domain", "bash", *_args(server, tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    trajectory = load_trajectory(result["path"])
    system = trajectory.messages[0]
    assert system.content == get_domain("bash").system
    assert trajectory.info.settings["domain"] == "bash"
    observation = trajectory.messages[3]
    assert not isinstance(observation, Assistant)
    assert str(tmp_path / "work") in observation.content


def test_the_domain_can_come_from_four_domain(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOUR_DOMAIN", "nope")
    assert main(["run", "x", *_args(server, tmp_path), "-q"]) == 2
    monkeypatch.setenv("FOUR_DOMAIN", "bash")
    server.push(chat(SUBMIT))
    assert main(["run", "x", *_args(server, tmp_path), "-q"]) == 0


def test_an_unknown_domain_flag_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "x", "--model", "m", "--domain", "nope"])
    assert exit_.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_import_four_and_four_run_help_load_no_notebook_package() -> None:
    heavy = ("nbformat", "nbclient", "jupyter_client", "ipykernel", "matplotlib", "zmq", "mcp")
    code = (
        "import sys, four, four.domains, four.domains.mcp\n"
        "from four.cli import build_parser\n"
        "build_parser('run')\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_domain_whose_extra_is_missing_says_how_to_install_it() -> None:
    code = (
        "import sys; sys.modules['nbclient'] = None\n"  # as if it were not installed
        "from four.domains import DomainError, get_domain\n"
        "try:\n    get_domain('notebook')\nexcept DomainError as exc:\n    print(exc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "the notebook domain needs the 'notebook' extra (nbclient is missing): "
        "pip install 'four-loop[notebook]'"
    )
