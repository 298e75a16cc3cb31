"""Spokes: the loop writes a component of itself, accepted only once typed against four's
Protocols (real mypy, no plugin), importable, and its dry run ends as it says."""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest

from four import Action, Message, Outcome, User, regex_parse, run, scripted_invoke
from four.spokes import API, CONTRACT, accept, new_spoke, python_code, system_prompt
from four.spokes import observer as observer_spoke
from four.spokes._accept import TYPES
from tests._server import LoopbackServer, chat

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

ALLOW = f'''\
import shlex
from collections.abc import Sequence

from returns.result import Result, Success

from four import local_env
from {TYPES} import Action, Execute, ExecutionError, Observation, Submitted

KIND = "V2"
ALLOWED = ("echo", "ls", "cat")
DRY_RUN = ["```bash\\necho hi\\n```", "```bash\\nrm -rf x\\n```", "{SUBMIT}"]
EXPECT = "exit:task_complete"


class AllowList:
    """Runs a command only when its program is allowed and it chains nothing."""

    def __init__(self, allowed: Sequence[str]) -> None:
        self.allowed = tuple(allowed)
        self.inner = local_env()

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        try:
            words = shlex.split(action.command)
        except ValueError:
            words = []
        chained = any(mark in action.command for mark in ";&|`$<>\\n")
        if not words or words[0] not in self.allowed or chained:
            BAD
        return self.inner(action)


def make() -> Execute:
    return AllowList(ALLOWED)
'''
WRONG = "return Observation(f'refused: {action.command!r}', 126)"
RIGHT = "return Success(Observation(f'refused: {action.command!r}', 126))"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for this file's acceptances: typeshed and four are checked once."""
    return tmp_path_factory.mktemp("mypy-cache")


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_spoke_new_writes_an_allow_list_v2_accepted_once_typed(tmp_path: Path, cache: Path) -> None:
    folder = tmp_path / "spokes"
    wrong = ALLOW.replace("BAD", WRONG)
    fix = f"allow.py\n```python\n<<<<<<< SEARCH\n            {WRONG}\n=======\n            {RIGHT}\n>>>>>>> REPLACE\n```"
    G = scripted_invoke([f"allow.py\n```python\n{wrong}```", SUBMIT, fix, SUBMIT])
    made = new_spoke(
        "allow",
        "refuse commands outside an allow-list",
        G,
        folder=folder,
        output_dir=tmp_path / "runs",
        cache_dir=cache,
    )
    assert made.accepted, made
    saved = json.loads(made.trajectory.read_text())
    texts = [m.get("content", "") for m in saved["messages"]]
    refused = [t for t in texts if "not accepted yet" in t]
    assert len(refused) == 1 and "types: allow.py:" in refused[0]
    assert 'Incompatible return value type (got "Observation"' in refused[0]
    assert "ruff and mypy --strict" in texts[3]  # the edit's own observation came first

    # The accepted module, in a real run: allowed commands run, others are refused.
    allow = load(made.module)
    G2 = scripted_invoke(["```bash\necho allowed\n```", "```bash\necho a; rm -rf /\n```", SUBMIT])
    seen: list[str] = []

    def emit(messages: Sequence[Message], outcome: Outcome, /) -> None:
        seen.extend(m.content for m in messages if isinstance(m, User) and m.kind == "observation")

    run(G2, regex_parse(), allow.make(), emit, prompt="try")
    assert "allowed" in seen[0] and "<returncode>0</returncode>" in seen[0]
    assert seen[1].startswith("refused: 'echo a; rm -rf /'")


def test_the_system_prompt_names_only_the_public_api_that_exists() -> None:
    types = importlib.import_module(TYPES)
    for name in (
        "Action",
        "Observation",
        "Submitted",
        "ExecutionError",
        "FormatError",
        "Rejected",
        "Assistant",
        "Invoke",
        "Parse",
        "Execute",
        "Emit",
        "ModelError",
    ):
        assert name in API and hasattr(types, name), name
    prompt = system_prompt("allow")
    assert "A spoke is one module, allow.py," in prompt and "<<<<<<< SEARCH" in prompt


def test_the_contracts_example_and_the_shipped_spokes_are_accepted(
    tmp_path: Path, cache: Path
) -> None:
    example = CONTRACT.split("example.py\n```python\n", 1)[1].rsplit("```", 1)[0]
    (tmp_path / "example.py").write_text(example)
    shutil.copy(observer_spoke.__file__, tmp_path / "observer.py")
    shutil.copy(python_code.__file__, tmp_path / "python_code.py")
    assert accept(tmp_path / "example.py", cache_dir=cache).accepted
    assert accept(tmp_path / "observer.py", cache_dir=cache).accepted
    assert accept(tmp_path / "python_code.py", cache_dir=cache).accepted


def test_acceptance_names_the_step_that_fails(tmp_path: Path, cache: Path) -> None:
    base = ALLOW.replace("BAD", RIGHT)
    (tmp_path / "broken.py").write_text(
        base.replace("def make() -> Execute:", "def make() -> int:")
    )
    typed = accept(tmp_path / "broken.py", cache_dir=cache)
    assert typed.step == "types" and "Incompatible" in typed.reason
    (tmp_path / "raises.py").write_text(base + "\nraise RuntimeError('at import')\n")
    assert accept(tmp_path / "raises.py", cache_dir=cache).step == "import"
    (tmp_path / "hopes.py").write_text(
        base.replace('EXPECT = "exit:task_complete"', 'EXPECT = "accepted"')
    )
    hoped = accept(tmp_path / "hopes.py", cache_dir=cache)
    assert hoped.step == "dry run" and "not 'accepted'" in hoped.reason
    assert accept(tmp_path / "json.py").step == "name"


def test_the_observer_reports_metrics_and_failure_classes(tmp_path: Path) -> None:
    from four.execute import local_env
    from four.trajectory import save_trajectory

    runs = tmp_path / "runs"
    run(
        scripted_invoke(["```bash\necho ok\n```", SUBMIT]),
        regex_parse(),
        local_env(),
        save_trajectory(runs),
        prompt="one",
    )
    loop = ["```bash\nls\n```"] * 4
    run(
        scripted_invoke(loop),
        regex_parse(),
        local_env(),
        save_trajectory(runs),
        prompt="two",
        max_steps=4,
    )
    env = observer_spoke.observe_env(runs)
    summary = env(Action("summary")).unwrap().content
    assert summary.startswith("2 runs in the folder; 1 succeeded.")
    failures = env(Action("failures")).unwrap().content
    assert "budget: 1" in failures and "repetition: 1" in failures
    assert env(Action("rm -rf /")).unwrap().returncode == 2
    report = tmp_path / "report.md"
    G = scripted_invoke(["```bash\nfailures\n```", f"Loops on ls.\n{SUBMIT}"])
    run(G, regex_parse(), env, observer_spoke.report_emit(runs, report), prompt="why do runs fail?")
    text = report.read_text()
    assert "## Failure taxonomy" in text and "repetition: 1" in text
    assert "## Analysis\n\nLoops on ls." in text and "Asked: why do runs fail?" in text


def test_four_spoke_new_from_the_terminal(
    cache: Path,
    server: LoopbackServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from four.cli import main

    monkeypatch.delenv("FOUR_MODEL", raising=False)
    example = CONTRACT.split("example.py\n```python\n", 1)[1].rsplit("```", 1)[0]
    server.push(chat(f"shout.py\n```python\n{example}```"), chat(SUBMIT))
    folder, state = tmp_path / "spokes", tmp_path / "state"
    monkeypatch.delenv("FOUR_OUTPUT_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))  # the trajectory goes there, not here
    # The folder's own mypy cache, seeded from this file's: typeshed and four are not
    # checked again (the acceptance is the same).
    shutil.copytree(cache, folder / ".four-spoke" / "mypy_cache")
    status = main(
        [
            "spoke",
            "new",
            "shout",
            "upper-case what commands print",
            "--model",
            "test-model",
            "--api-base",
            server.url,
            "--dir",
            str(folder),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.startswith("accepted · ") and (folder / "shout.py").read_text() == example
    assert f"saved {state / 'four' / 'runs'}/" in out


def test_a_bad_spoke_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from four.cli import main

    assert main(["spoke", "new", "os", "anything", "--model", "x"]) == 2
    assert "would shadow the module" in capsys.readouterr().err
