"""`four run --check CMD --attempts K` against the loopback server, in every environment
(local, persistent, sandbox, docker) and every domain (bash, python, notebook, cli): the
second attempt starts from a pristine copy (or a fresh container), the accepted attempt's
work ends in the user's folder and nothing of the held one's, each request samples as
its attempt says, and `four audit` checks the whole group."""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from four.cli import main
from four.trajectory import load_trajectory
from tests._server import LoopbackServer, chat
from tests.domains.cli.test_cli_domain import SUM
from tests.execute.conftest import TEST_IMAGE, bwrap_problem, docker_problem, need

SUBMIT = "Done.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
BASH_SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
JUNK = "```bash\necho junk > junk.txt && echo 5 > answer.txt\n```"
PRISTINE = "```bash\ntest ! -e junk.txt && test ! -e answer.txt && echo pristine\n```"


@dataclass(frozen=True)
class Case:
    """One domain in one environment: the two attempts' replies and the check."""

    domain: str
    env: str
    first: tuple[str, ...]
    second: tuple[str, ...]
    check: str
    made: str  # the file the accepted attempt leaves in the user's folder
    cwd_in_container: bool = False


# Held: told NO, it changes something and submits again, told NO for the same reason.
# (A bare resubmission would be drawn again, not judged: nothing ran since the NO.)
AGAIN = "```bash\necho 6 > answer.txt\n```"
BASH_FIRST = (JUNK, BASH_SUBMIT, AGAIN, BASH_SUBMIT)
BASH_SECOND = (PRISTINE, "```bash\necho 4 > answer.txt\n```", BASH_SUBMIT)
BASH_CHECK = "grep -qx 4 answer.txt"
NOTEBOOK_CELL = (
    "```python\nimport os\nfresh = not os.path.exists('junk.txt')\n"
    "open('answer.txt', 'w').write('4\\n' if fresh else '5\\n')\n```"
)
CASES = [
    Case("bash", "local", BASH_FIRST, BASH_SECOND, BASH_CHECK, "answer.txt"),
    Case("bash", "persistent", BASH_FIRST, BASH_SECOND, BASH_CHECK, "answer.txt"),
    Case("bash", "sandbox", BASH_FIRST, BASH_SECOND, BASH_CHECK, "answer.txt"),
    Case("bash", "docker", BASH_FIRST, BASH_SECOND, BASH_CHECK, "", cwd_in_container=True),
    Case(
        "python", "local", (JUNK, SUBMIT, AGAIN, SUBMIT),
        (PRISTINE, "answer.py\n```python\nANSWER = 4\n```", SUBMIT),
        "python3 -c 'import answer; assert answer.ANSWER == 4'", "answer.py",
    ),
    Case(
        "notebook", "local",
        ("```python\nopen('junk.txt', 'w').write('x')\nopen('answer.txt', 'w').write('5\\n')\n```",
         SUBMIT, "```python\nopen('answer.txt', 'w').write('6\\n')\n```", SUBMIT),
        (NOTEBOOK_CELL, SUBMIT),
        "assert open('answer.txt').read() == '4\\n'", "answer.txt",
    ),
    Case(
        "cli", "local", ("```bash\necho junk > junk.txt\n```", SUBMIT, AGAIN, SUBMIT),
        (PRISTINE, f"sum.c\n```c\n{SUM}```\n", SUBMIT), "./sum 2 3 | grep -qx 5", "sum.c",
    ),
]  # fmt: skip


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _available(case: Case) -> None:
    if case.env == "sandbox" or case.domain == "cli":
        need(bwrap_problem())
    if case.env == "docker":
        need(docker_problem())
    if case.domain == "cli":
        for tool in ("gcc", "help2man", "mandoc"):
            if shutil.which(tool) is None:
                need(f"{tool} is not installed (tests/domains/services.sh)")
    if case.domain == "notebook" and importlib.util.find_spec("nbclient") is None:
        pytest.skip("the notebook extra is not installed")
    if case.domain == "python" and importlib.util.find_spec("mypy") is None:
        pytest.skip("the python extra is not installed")


def _argv(server: LoopbackServer, tmp_path: Path, case: Case, *extra: str) -> list[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "mine.txt").write_text("the user's own file\n")
    where = ["--env", case.env] if case.domain == "bash" else []
    if case.env == "docker":
        where += ["--image", TEST_IMAGE, "--cwd", "/tmp"]
    else:
        where += ["--cwd", str(work)]
    return ["run", "2 + 2 into a file", "--domain", case.domain, *where, "--model", "m",
            "--api-base", server.url, "-o", str(tmp_path / "runs"), "--check", case.check,
            "--retries-per-reason", "1", "--max-steps", "6", *extra]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.domain}-{c.env}")
def test_attempt_2_starts_pristine_and_its_work_is_the_user_s(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Case
) -> None:
    _available(case)
    server.push(*[chat(text) for text in (*case.first, *case.second)])
    assert main([*_argv(server, tmp_path, case), "--attempts", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    members = result["attempts"]["members"]
    assert [m["outcome"].split(":")[0] for m in members] == ["held", "accepted"]
    assert result["outcome"] == "accepted" and result["attempts"]["result"] == 2
    # Each attempt is told the task alone (the recap of earlier attempts is off by default).
    asked = [_task(body) for body in server.bodies("/v1/chat/completions")]
    assert asked[0] == asked[len(case.first)] == "2 + 2 into a file"
    second = load_trajectory(members[1]["path"])
    if case.first[0] == JUNK or case.domain == "cli":  # the second attempt looked first
        assert any("pristine" in m.content for m in second.messages[3:5]), second.messages
    work = tmp_path / "work"
    names = sorted(p.name for p in work.iterdir())
    if case.cwd_in_container:  # a fresh container each: the user's folder is not involved
        assert names == ["mine.txt"]
    else:
        assert case.made in names and "junk.txt" not in names and "mine.txt" in names
    record = result["attempts"]["record"]
    assert main(["audit", record]) == 0
    assert capsys.readouterr().out.startswith(f"valid: {record}\n  a search of 2 attempts of 3")


def _task(body: Mapping[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return str(next(m["content"] for m in messages if m["role"] == "user"))


def test_each_attempt_samples_as_it_says(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[0]
    server.push(*[chat(text) for text in (*case.first, *case.second)])
    argv = _argv(server, tmp_path, case, "--attempts", "2", "--seed", "40", "-q")
    assert main([*argv, "--attempt-temperature", "0.9"]) == 0
    bodies = server.bodies("/v1/chat/completions")
    sampled = [(b.get("temperature"), b.get("seed")) for b in bodies]
    assert sampled == [(0.0, 40)] * 4 + [(0.9, 41)] * 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("accepted · 3 steps")
    assert out[1].startswith("attempt 2 of 2 accepted (accepted) · 2 attempts")


def test_a_folder_audit_names_the_search(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[0]
    server.push(*[chat(text) for text in (*case.first, *case.second)])
    assert main([*_argv(server, tmp_path, case), "--attempts", "2", "-q"]) == 0
    capsys.readouterr()
    assert main(["audit", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "2 runs: 2 valid, 0 invalid" in out and "1 searches: 1 valid, 0 invalid" in out
    (record,) = (tmp_path / "runs").glob("*.attempts.json")
    record.write_text(record.read_text().replace('"result": 2', '"result": 1'))
    assert main(["audit", str(tmp_path / "runs")]) == 1
    assert "group invalid" in capsys.readouterr().out


def test_an_attempt_that_deletes_the_copies_leaves_the_workspace_and_says_so(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[0]
    delete = '```bash\nrm -rf "$(dirname "$PWD")"\n```'
    server.push(*[chat(text) for text in (delete, BASH_SUBMIT, AGAIN, BASH_SUBMIT)])
    assert main([*_argv(server, tmp_path, case), "--attempts", "3", "-q"]) == 1
    err = capsys.readouterr().err
    assert (
        "four run: attempt 1's copy of the workspace was deleted by its own commands: the "
        "workspace is left as it was\n"
    ) in err
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["mine.txt"]


def test_attempts_without_a_check_is_a_usage_error(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "t", "--model", "m", "--api-base", server.url, "-o", str(tmp_path)]
    assert main([*argv, "--attempts", "2"]) == 2
    assert "--attempts needs --check CMD" in capsys.readouterr().err


def test_a_check_run_makes_attempts_by_default_and_one_is_enough(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[0]
    server.push(*[chat(text) for text in case.second])
    assert main([*_argv(server, tmp_path, case), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["attempts"]["members"][0]["index"] == 1
    record = json.loads(Path(result["attempts"]["record"]).read_text())
    assert record["of"] == 4 and len(record["members"]) == 1


def test_a_workspace_too_large_to_copy_is_refused_before_any_model_call(
    server: LoopbackServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import four.search._workspace as ws

    monkeypatch.setattr(ws, "DEFAULT_MAX_FILES", 1)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "a.txt").write_text("a")
    (tmp_path / "work" / "b.txt").write_text("b")
    assert main([*_argv(server, tmp_path, CASES[0]), "--attempts", "2"]) == 2
    err = capsys.readouterr().err
    assert "each attempt works in a copy of it" in err and "or --attempts 1" in err
    assert server.bodies("/v1/chat/completions") == []
    # Not asked for, the attempts give way: one run, and a line that says so.
    server.push(*[chat(text) for text in CASES[0].second])
    assert main([*_argv(server, tmp_path, CASES[0]), "-q"]) == 0
    assert "four run: one attempt, not 4: the workspace" in capsys.readouterr().err
    assert not list((tmp_path / "runs").glob("*.attempts.json"))


def test_a_signed_search_audits_with_the_public_key_only(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("cryptography")
    key, other = tmp_path / "key", tmp_path / "other"
    assert main(["keygen", str(key)]) == 0 and main(["keygen", str(other)]) == 0
    case = CASES[0]
    server.push(*[chat(text) for text in (*case.first, *case.second)])
    argv = [*_argv(server, tmp_path, case), "--attempts", "2", "--sign", str(key), "--json"]
    capsys.readouterr()
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)["attempts"]["record"]
    assert main(["audit", "--public-key", f"{key}.pub", record]) == 0
    capsys.readouterr()
    assert main(["audit", "--public-key", f"{other}.pub", record]) == 1
    assert "not signed by the given key" in capsys.readouterr().out


def test_ctrl_c_during_attempt_2_exits_130_with_both_saved(
    server: LoopbackServer, tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests._server import hang
    from tests.cli._runs import cli_env

    case = CASES[0]
    server.push(*[chat(text) for text in case.first], chat(PRISTINE), hang())
    argv = _argv(server, tmp_path, case, "--attempts", "3")
    process = subprocess.Popen([sys.executable, "-m", "four.cli", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=cli_env())  # fmt: skip
    try:
        while len(server.bodies("/v1/chat/completions")) < 5:  # attempt 2's second call
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert "Traceback" not in err
    line = out.strip().splitlines()[-1]
    assert line.startswith("interrupted · saved "), (out, err)
    record = json.loads(Path(line.removeprefix("interrupted · saved ")).read_text())
    assert record["finished"] and record["ended"] == "interrupted: KeyboardInterrupt"
    assert [m["outcome"].split(":")[0] for m in record["members"]] == ["held", "interrupted"]
    assert main(["audit", line.removeprefix("interrupted · saved ")]) == 0
    work = tmp_path / "work"  # the last attempt's work: it ran the pristine check only
    assert sorted(p.name for p in work.iterdir()) == ["mine.txt"]
