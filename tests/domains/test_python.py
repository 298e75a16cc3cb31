"""The Python domain against the real ruff, mypy and dmypy: edits applied all or none inside
the workspace, diagnostics told apart, the daemon gone whatever ends the run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from four import Action, Assistant, Message, User, run, scripted_invoke
from four.domains.python import PythonEnv, python_env, save_files, typed_check
from four.parse import EditAction, SearchReplace, WholeFile, edit_parse
from four.trajectory import load_trajectory

ROOT = Path(__file__).resolve().parents[2]
SR = "<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE"
TOOL = """\
def double(x: int) -> int:
    return x * 2


def main() -> None:
    print(double(2))
"""


def edit(path: str, old: str, new: str) -> str:
    return f"{path}\n```python\n{SR.format(old=old, new=new)}\n```\n"


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tool.py").write_text(TOOL)
    return work


@pytest.fixture
def env(workspace: Path) -> Iterator[PythonEnv]:
    with python_env(workspace) as made:
        yield made


def apply(env: PythonEnv, reply: str) -> str:
    (action, *_) = edit_parse()(Assistant(reply)).unwrap()
    assert isinstance(action, Action)
    return env(action).unwrap().content


def test_a_type_error_is_reported_with_file_line_and_its_function(env: PythonEnv) -> None:
    seen = apply(env, edit("tool.py", "    print(double(2))", '    print(double("2"))'))
    assert "1 new problem (introduced by this edit)" in seen
    assert 'tool.py:6: Argument 1 to "double" has incompatible type "str"' in seen
    assert "[mypy arg-type]" in seen
    assert "in function main (lines 5-6)" in seen
    assert '>  6 |     print(double("2"))' in seen


def test_a_fix_is_accepted_and_says_what_it_fixed(env: PythonEnv) -> None:
    apply(env, edit("tool.py", "    print(double(2))", '    print(double("2"))'))
    seen = apply(env, edit("tool.py", '    print(double("2"))', "    print(double(3))"))
    assert "no problems. (1 problem fixed by this edit)" in seen
    assert "Fixed by this edit:\ntool.py:6" in seen
    assert "print(double(3))" in (env.workspace / "tool.py").read_text()


def test_problems_already_there_are_told_apart_from_new_ones(workspace: Path) -> None:
    (workspace / "tool.py").write_text(TOOL + "\n\ndef untyped(x):\n    return x\n")
    with python_env(workspace) as env:
        seen = apply(
            env, "import os\n\n" + edit("tool.py", "    return x * 2", "    return x * 2 + len(1)")
        )
    introduced, before = seen.split("Already there before this edit:")
    assert "tool.py:2:" in introduced and "len" in introduced
    assert "untyped" in before and "no-untyped-def" in before


def test_ruff_diagnostics_are_reported_too(env: PythonEnv) -> None:
    seen = apply(env, "util.py\n```python\nimport os\n\n\nX: int = 1\n```")
    assert "util.py:1: `os` imported but unused  [ruff F401]" in seen


def test_a_search_matching_twice_is_a_format_error_and_no_file_changes(
    workspace: Path, env: PythonEnv
) -> None:
    (workspace / "twice.py").write_text("a = 1\nb = 2\na = 1\n")
    reply = (
        "new.py\n```python\nx = 1\n```\n"
        + edit("tool.py", "    return x * 2", "    return x * 3")
        + edit("twice.py", "a = 1", "a = 9")
    )
    seen = apply(env, reply)
    assert seen.startswith("Format error: No file was changed.")
    assert "twice.py" in seen and "matches 2 places (lines 1, 3)" in seen
    assert (workspace / "tool.py").read_text() == TOOL
    assert (workspace / "twice.py").read_text() == "a = 1\nb = 2\na = 1\n"
    assert not (workspace / "new.py").exists()


@pytest.mark.parametrize("path", ["../outside.py", "/tmp/outside.py", "link/evil.py", "alias.py"])
def test_a_path_leaving_the_workspace_is_refused(
    tmp_path: Path, workspace: Path, env: PythonEnv, path: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "alias.py").write_text("kept = 1\n")
    (workspace / "link").symlink_to(outside)
    (workspace / "alias.py").symlink_to(outside / "alias.py")
    seen = apply(
        env,
        f"{path}\n```python\nx = 1\n```\n"
        + edit("tool.py", "    return x * 2", "    return x * 3"),
    )
    assert seen.startswith("Edit refused; no file was changed."), seen
    assert path in seen
    assert (workspace / "tool.py").read_text() == TOOL
    assert (outside / "alias.py").read_text() == "kept = 1\n"
    assert sorted(p.name for p in outside.iterdir()) == ["alias.py"]
    assert not (tmp_path / "outside.py").exists()


def test_reject_new_errors_leaves_the_file_as_it_was(workspace: Path) -> None:
    with python_env(workspace, reject_new_errors=True) as env:
        seen = apply(env, edit("tool.py", "    return x * 2", '    return "x"'))
        assert seen.startswith("Edit rejected: it adds 1 problem, so no file was changed.")
        assert "Incompatible return value type" in seen
        assert (workspace / "tool.py").read_text() == TOOL
        clean = apply(env, edit("tool.py", "    return x * 2", "    return x * 4"))
    assert "no problems" in clean and "x * 4" in (workspace / "tool.py").read_text()


def test_mypy_flags_are_configurable(workspace: Path) -> None:
    loose = "def f(x):\n    return x\n"
    with python_env(workspace, mypy=()) as env:
        assert "no problems" in apply(env, f"loose.py\n```python\n{loose}```")
    with python_env(workspace) as env:
        assert "no-untyped-def" in apply(env, f"loose2.py\n```python\n{loose}```")


# --- the daemon's life -------------------------------------------------------------


def started(env: PythonEnv) -> int:
    assert env.diagnostics(["tool.py"]).unwrap() == []
    pid = env.daemon_pid
    assert pid is not None and alive(pid)
    return pid


def test_the_daemon_is_gone_after_the_run(workspace: Path, tmp_path: Path) -> None:
    env = python_env(workspace)
    pids: list[int] = []

    def note_pid(history: Sequence[Message]) -> str:
        pids.append(env.daemon_pid or 0)
        return "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

    G = scripted_invoke([edit("tool.py", "    return x * 2", "    return x * 3"), note_pid])
    run(G, edit_parse(), env, save_files(tmp_path / "runs", env), prompt="triple it")
    assert pids and pids[0] > 0
    assert gone(pids[0]) and env.daemon_pid is None


def test_the_daemon_is_gone_after_a_crash(workspace: Path, tmp_path: Path) -> None:
    env = python_env(workspace)
    pid = started(env)

    def boom(history: Sequence[Message]) -> str:
        raise RuntimeError("the model broke")

    with pytest.raises(RuntimeError):
        run(scripted_invoke([boom]), edit_parse(), env, save_files(tmp_path / "runs", env))
    assert gone(pid)


DRIVER = """
import sys, time
from four import run, scripted_invoke
from four.domains.python import python_env, save_files
from four.parse import edit_parse
env = python_env(sys.argv[1])
env.diagnostics(["tool.py"])
print(env.daemon_pid, flush=True)
if sys.argv[2] == "kill":
    time.sleep(60)
G = scripted_invoke(["```bash\\ntouch started && sleep 60\\n```"])
run(G, edit_parse(), env, save_files(sys.argv[3], env), prompt="wait")
"""


def driver(workspace: Path, tmp_path: Path, how: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(workspace), how, str(tmp_path / "runs")],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    pid = int(process.stdout.readline())
    assert alive(pid)
    return process, pid


def test_the_daemon_is_gone_after_ctrl_c(workspace: Path, tmp_path: Path) -> None:
    process, pid = driver(workspace, tmp_path, "interrupt")
    deadline = time.monotonic() + 30
    while not (workspace / "started").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    with process:
        assert process.wait(30) != 0
    assert gone(pid)
    (saved,) = (tmp_path / "runs").glob("*.json")
    assert json.loads(saved.read_text())["outcome"] == "interrupted: KeyboardInterrupt"


def test_the_daemon_is_gone_after_its_driver_is_killed(workspace: Path, tmp_path: Path) -> None:
    process, pid = driver(workspace, tmp_path, "kill")
    with process:
        process.kill()
    assert gone(pid)


def test_four_concurrent_runs_in_four_workspaces_have_four_daemons(tmp_path: Path) -> None:
    pids: dict[int, int] = {}
    outcomes: dict[int, str] = {}

    def one(index: int) -> None:
        work = tmp_path / f"w{index}"
        work.mkdir()
        (work / f"m{index}.py").write_text(f"def f{index}() -> int:\n    return {index}\n")
        env = python_env(work)

        def note(history: Sequence[Message]) -> str:
            pids[index] = env.daemon_pid or 0
            last = history[-1]
            assert isinstance(last, User)
            outcomes[index] = last.content
            return "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

        bad = edit(f"m{index}.py", f"    return {index}", f'    return "{index}"')
        run(scripted_invoke([bad, note]), edit_parse(), env, save_files(tmp_path / "runs", env))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(set(pids.values())) == 4 and all(pids.values()), pids
    for index, seen in outcomes.items():
        assert f"m{index}.py:2: Incompatible return value type" in seen
        assert all(f"m{other}.py" not in seen for other in range(4) if other != index)
    assert all(gone(pid) for pid in pids.values())


# --- emit and the verified loop ------------------------------------------------------


def test_save_files_writes_the_changed_files_and_a_diff_beside_the_trajectory(
    workspace: Path, tmp_path: Path
) -> None:
    env = python_env(workspace)
    G = scripted_invoke(
        [
            edit("tool.py", "    return x * 2", "    return x * 3")
            + "extra/new.py\n```python\nY = 1\n```",
            "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
        ]
    )
    path = run(G, edit_parse(), env, save_files(tmp_path / "runs", env), prompt="go")
    assert load_trajectory(path).outcome == "exit:task_complete"
    stem = path.with_suffix("")
    files = stem.with_name(stem.name + ".files")
    assert (files / "tool.py").read_text() == TOOL.replace("    return x * 2", "    return x * 3")
    assert (files / "extra/new.py").read_text() == "Y = 1\n"
    diff = stem.with_name(stem.name + ".diff").read_text()
    assert "--- a/tool.py\n+++ b/tool.py" in diff and "-    return x * 2\n+    return x * 3" in diff
    assert "--- /dev/null\n+++ b/extra/new.py" in diff


def test_typed_check_says_no_with_the_diagnostic_then_yes_once_typed_and_tested(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "test_tool.py").write_text(
        "from tool import double\n\n\ndef test_double() -> None:\n    assert double(2) == 6\n"
    )
    env = python_env(workspace)
    submit = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    G = scripted_invoke(
        [
            edit("tool.py", "    return x * 2", '    return "x" * 3'),
            submit,
            edit("tool.py", '    return "x" * 3', "    return x * 3"),
            submit,
        ]
    )
    check = typed_check(f"{sys.executable} -m pytest -q -p no:cacheprovider", env=env)
    path = run(G, edit_parse(), env, save_files(tmp_path / "runs", env), check=check)
    saved = load_trajectory(path)
    assert saved.outcome == "accepted"
    feedback = [m.content for m in saved.messages if isinstance(m, User) and m.kind == "feedback"]
    assert len(feedback) == 1
    assert "tool.py:2: Incompatible return value type" in feedback[0]


def test_typed_check_runs_the_tests_after_the_types(workspace: Path, tmp_path: Path) -> None:
    (workspace / "test_tool.py").write_text(
        "from tool import double\n\n\ndef test_double() -> None:\n    assert double(2) == 6\n"
    )
    env = python_env(workspace)
    G = scripted_invoke(["COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"] * 4)
    check = typed_check(f"{sys.executable} -m pytest -q -p no:cacheprovider", env=env)
    saved = load_trajectory(
        run(G, edit_parse(), env, save_files(tmp_path / "runs", env), check=check)
    )
    feedback = [m.content for m in saved.messages if isinstance(m, User) and m.kind == "feedback"]
    assert feedback and "failed" in feedback[0] and "test_double" in feedback[0]


def test_whole_file_edits_of_the_parser_reach_the_workspace(env: PythonEnv) -> None:
    seen = env(
        EditAction(
            edits=(
                WholeFile("pkg/__init__.py", ""),
                SearchReplace("tool.py", "    return x * 2", "    return x * 5"),
            )
        )
    )
    assert "Applied: write pkg/__init__.py (0 lines); edit tool.py" in seen.unwrap().content
    assert (env.workspace / "pkg" / "__init__.py").read_text() == ""


def test_commands_run_in_the_workspace(env: PythonEnv) -> None:
    (action,) = edit_parse()(Assistant("```bash\nls\n```")).unwrap()
    assert isinstance(action, Action)
    assert "tool.py" in env(action).unwrap().content


def test_the_system_prompt_shows_both_edit_formats() -> None:
    from four.domains.python import SYSTEM

    assert "<<<<<<< SEARCH" in SYSTEM and "hello.py\n```python" in SYSTEM


def test_another_interpreter_is_asked_through_the_dmypy_command(workspace: Path) -> None:
    other = Path(sys.executable).with_name("python3")  # the same venv, another path
    if not other.exists() or str(other) == sys.executable:
        pytest.skip("no second name for this interpreter")
    with python_env(workspace, python=str(other)) as env:
        seen = apply(env, edit("tool.py", "    return x * 2", '    return "x"'))
    assert "tool.py:2: Incompatible return value type" in seen


def test_python_env_obeys_the_execute_law(tmp_path: Path) -> None:
    from four.testing import check_execute

    def make() -> PythonEnv:
        work = Path(tempfile.mkdtemp(dir=tmp_path))
        return python_env(work, timeout=1)

    check_execute(make, max_examples=10)
