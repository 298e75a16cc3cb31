"""`four run --domain python`: the model's edits judged by ruff, mypy and the tests, in-process
against the loopback server, with the real checkers."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from four.cli import main
from tests._server import LoopbackServer, chat

TOOL = """\
import argparse


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    args = parser.parse_args(argv)
    return f"hello {args.name}"
"""
TEST = """\
from tool import main


def test_json() -> None:
    assert main(["--json", "bob"]) == '{"hello": "bob"}'
"""
EDIT = """\
tool.py
```python
<<<<<<< SEARCH
import argparse
=======
import argparse
import json
>>>>>>> REPLACE
<<<<<<< SEARCH
    parser.add_argument("name")
    args = parser.parse_args(argv)
    return f"hello {args.name}"
=======
    parser.add_argument("name")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.json:
        return json.dumps({"hello": args.name})
    return f"hello {args.name}"
>>>>>>> REPLACE
```
"""
UNTYPED = 'tool.py\n```python\n<<<<<<< SEARCH\n    return f"hello {args.name}"\n=======\n    return f"hello {args.name}"\n\n\ndef extra(x):\n    return x\n>>>>>>> REPLACE\n```\n'
TYPED = "tool.py\n```python\n<<<<<<< SEARCH\ndef extra(x):\n=======\ndef extra(x: int) -> int:\n>>>>>>> REPLACE\n```\n"
SUBMIT = "Added the flag.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_run_domain_python_is_accepted_once_typed_and_tested(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tool.py").write_text(TOOL)
    (work / "test_tool.py").write_text(TEST)
    server.push(chat(EDIT + UNTYPED), chat(SUBMIT), chat(TYPED), chat(SUBMIT))
    tests = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    status = main(
        [
            "run",
            "Add a --json flag to tool.py",
            "--domain",
            "python",
            "--model",
            "test-model",
            "--api-base",
            server.url,
            "-o",
            str(tmp_path / "runs"),
            "--cwd",
            str(work),
            "--check",
            tests,
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert status == 0 and result["outcome"] == "accepted", result
    saved = json.loads(Path(result["path"]).read_text())
    assert saved["info"]["components"]["V2"]["type"].endswith("PythonEnv")
    system = saved["messages"][0]["content"]
    assert "<<<<<<< SEARCH" in system and "mypy --strict" in system
    contents = [m.get("content", "") for m in saved["messages"]]
    assert any(
        "Function is missing a type annotation" in c and "[mypy no-untyped-def]" in c
        for c in contents
    )
    feedback = [c for c in contents if "not accepted" in c]
    assert len(feedback) == 1 and "tool.py:" in feedback[0] and "no-untyped-def" in feedback[0]
    stem = Path(result["path"]).with_suffix("")
    diff = stem.with_name(stem.name + ".diff").read_text()
    assert '+    parser.add_argument("--json", action="store_true")' in diff
    assert (
        "def extra(x: int) -> int:"
        in (stem.with_name(stem.name + ".files") / "tool.py").read_text()
    )


def test_run_domain_python_refuses_a_persistent_shell(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "run",
            "x",
            "--domain",
            "python",
            "--env",
            "persistent",
            "--model",
            "test-model",
            "--api-base",
            server.url,
            "-o",
            str(tmp_path),
        ]
    )
    assert status == 2
    assert "runs in --env local, sandbox or docker, not --env persistent" in capsys.readouterr().err


def test_replay_of_a_python_run_begins_where_it_began_and_leaves_the_workspace_alone(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    work = tmp_path / "work"
    work.mkdir()
    (work / "tool.py").write_text(TOOL)
    server.push(chat(EDIT + "\n```bash\nwc -l < tool.py\n```"), chat(SUBMIT))
    flags = ["--domain", "python", "--model", "m", "--api-base", server.url]
    assert main(["run", "add --json", *flags, "-o", str(tmp_path / "runs"), "--cwd", str(work),
                 "--json"]) == 0  # fmt: skip
    path = Path(json.loads(capsys.readouterr().out)["path"])
    after = (work / "tool.py").read_text()
    assert after != TOOL
    assert main(["replay", str(path), "--json"]) == 0  # the edits apply again, in a copy
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["same"] and replayed["replayed_outcome"] == "accepted"
    assert (work / "tool.py").read_text() == after and sorted(os.listdir(work)) == ["tool.py"]
    shutil.rmtree(path.with_name(path.stem + ".start"))  # a run that kept no start
    assert main(["replay", str(path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "kept no copy of its workspace as it began" in line and "--cwd" in line
