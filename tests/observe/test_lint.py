"""``four lint``: a prompt's commands against the real interfaces of real tools.

four's own argparse parser, git, ``python3 -m pytest`` and a Python script's parser
introspected; gcc's and tar's ``--help`` parsed; a tool that hangs on ``--help``; a tool
that does not exist; every built-in prompt of four; bad prompt files.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from four.cli import main
from four.observe._commands import commands
from four.observe._interface import Toolbox, toolbox
from four.observe._lint import Finding, lint_text


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toolbox]:
    """Where a run's commands run here (local), the PATH starting with this Python's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        with toolbox("local", str(tmp_path_factory.mktemp("work"))) as made:
            yield made


def bash(*lines: str) -> str:
    return "```bash\n" + "\n".join(lines) + "\n```\n"


def problems(text: str, tools: Toolbox) -> list[str]:
    return [str(f) for f in lint_text(text, "prompt.md", tools) if f.problem]


def test_the_commands_of_a_prompt_are_found_in_blocks_backticks_and_run_sentences() -> None:
    text = (
        "Use `cat` and `sed -n` to read files, and the `bash` tool.\n"
        + bash(
            "cd src && FOO=1 timeout 5 make -j2 test 2>&1 | tee log.txt",
            "cat <<EOF > x",
            "not a command",
            "EOF",
        )
        + "When done, run pytest -q and commit.\n```python\nprint('not shell')\n```\n"
    )
    found = [(c.words, c.line, c.certain) for c in commands(text)]
    assert found == [
        (("cat",), 1, True),
        (("sed", "-n"), 1, False),
        (("bash",), 1, False),
        (("cd", "src"), 3, True),
        (("make", "-j2", "test"), 3, True),
        (("tee", "log.txt"), 3, True),
        (("cat",), 4, True),
        (("pytest", "-q"), 8, False),
    ]


def test_fours_own_parser_is_introspected(tools: Toolbox) -> None:
    clean = bash("four run 'fix it' --max-steps 3 --check 'pytest -q' --env sandbox",
                 "four batch tasks.jsonl -w 4 --processes 2", "four doctor run x --probe",
                 "four model pull", "four audit runs/ --public-key k.pub")  # fmt: skip
    assert problems(clean, tools) == []
    found = problems(bash("four run x --chek y", "four batch t.jsonl --proceses 2",
                          "four bach t.jsonl"), tools)  # fmt: skip
    assert [f.split(" (nearest: ")[0] for f in found] == [
        "prompt.md:2: `four run` has no option `--chek`",
        "prompt.md:3: `four batch` has no option `--proceses`",
        "prompt.md:4: `four` has no subcommand `bach`",
    ]
    assert [f.split(" (nearest: ")[1].split(",")[0] for f in found] == [
        "--check",
        "--processes",
        "batch",
    ]


def test_git_subcommands_and_their_options(tools: Toolbox) -> None:
    assert problems(bash("git -C /tmp status -s", "git commit --amend --no-verify -m x",
                         "git add -A"), tools) == []  # fmt: skip
    found = problems(bash("git comit -m x", "git commit --fixupp x"), tools)
    assert found[0].startswith("prompt.md:2: `git` has no subcommand `comit` (nearest: commit")
    assert found[1].startswith(
        "prompt.md:3: `git commit` has no option `--fixupp` (nearest: --fixup"
    )
    assert len(found) == 2


def test_python_m_pytest_is_introspected_through_its_argparse(tools: Toolbox) -> None:
    assert problems(bash("python3 -m pytest -q -x --maxfail=1 tests"), tools) == []
    (found,) = problems(bash("python3 -m pytest -q --bogus-flag tests"), tools)
    assert found.startswith("prompt.md:2: `python3 -m pytest` has no option `--bogus-flag`")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_python_scripts_own_parser_is_introspected_not_run(tmp_path: Path) -> None:
    (tmp_path / "tool.py").write_text(
        "import argparse, pathlib\n"
        "pathlib.Path('ran').write_text('the tool ran')\n"  # before the parse: it must not run
        "p = argparse.ArgumentParser()\n"
        "sub = p.add_subparsers(dest='cmd')\n"
        "add = sub.add_parser('add')\n"
        "add.add_argument('--name', required=True)\n"
        "p.parse_args()\n"
    )
    with toolbox("local", str(tmp_path)) as tools:
        assert tools.helper is not None  # under bubblewrap: the workspace is read-only there
        assert problems(bash("python3 tool.py add --name x"), tools) == []
        assert problems(bash("python3 tool.py add --nme x", "python3 tool.py ad"), tools) == [
            "prompt.md:2: `python3 tool.py add` has no option `--nme` (nearest: --name)",
            "prompt.md:3: `python3 tool.py` has no subcommand `ad` (nearest: add)",
        ]
    assert not (tmp_path / "ran").exists()  # introspected in a sandbox, the workspace read-only


def test_gcc_options_from_its_whole_help(tools: Toolbox) -> None:
    line = ("gcc -Wall -Wextra -Werror -O2 -std=c11 -g -pthread -DX=1 -Iinclude "
            "-fdiagnostics-format=json -fno-strict-aliasing -o sum sum.c -lm")  # fmt: skip
    assert problems(bash(line), tools) == []
    found = problems(bash("gcc -Wbogus -fbogus sum.c"), tools)
    assert [f.split("(")[0].strip() for f in found] == [
        "prompt.md:2: `gcc` has no option `-Wbogus`",
        "prompt.md:2: `gcc` has no option `-fbogus`",
    ]


def test_tar_options_bundled_and_long(tools: Toolbox) -> None:
    assert problems(bash("tar -czf out.tgz dir", "tar xzf out.tgz", "tar --create --file=x d"),
                    tools) == []  # fmt: skip
    (found,) = problems(bash("tar --creat -f x d"), tools)
    assert found.startswith("prompt.md:2: `tar` has no option `--creat` (nearest: --create")


def test_a_tool_that_hangs_on_help_is_a_note_within_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "tools" / "bin"
    bin_dir.mkdir(parents=True)
    hang = bin_dir / "hangs-on-help"
    hang.write_text("#!/bin/sh\nsleep 600\n")
    hang.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with toolbox("local", str(tmp_path), timeout=2) as tools:
        started = time.monotonic()
        (found,) = lint_text(bash("hangs-on-help --fast"), "p.md", tools)
        assert time.monotonic() - started < 120  # the tool sleeps 600 s
    assert not found.problem and found.kind == "unread"
    assert (
        str(found)
        == "p.md:2: `hangs-on-help` not checked: `hangs-on-help --help` did not finish within 2 s"
    )


def test_a_tool_that_does_not_exist(tools: Toolbox) -> None:
    assert problems(bash("no-such-tool-xyz --all"), tools) == [
        "prompt.md:2: `no-such-tool-xyz` is not found where the run's commands run"
    ]
    # in prose, a word in backticks that names no program is no command
    assert problems("Edit `four.toml` and `no-such-tool-xyz`.", tools) == []


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_program_is_looked_for_where_the_run_will_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "opt-tools" / "bin" / "my-tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho 'usage: my-tool [--fast]'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    text = bash("my-tool --fast")
    work = tmp_path / "work"  # the tool is outside it
    work.mkdir()
    with toolbox("local", str(work)) as here:
        assert problems(text, here) == []
    with toolbox("sandbox", str(work)) as sandbox:
        found = problems(text, sandbox)
    assert found == ["prompt.md:2: `my-tool` is not found where the run's commands run"]


def test_every_built_in_prompt_of_four_lints_clean(tools: Toolbox) -> None:
    from four.domains import domain_names, get_domain
    from four.domains._bash import TOOLCALLS
    from four.domains.plan import SYSTEM
    from four.spokes import system_prompt

    prompts = {name: get_domain(name).system for name in domain_names()}
    prompts |= {"toolcalls": TOOLCALLS, "spoke": system_prompt("demo"), "plan": SYSTEM}
    for name, text in prompts.items():
        found = lint_text(text, name, tools)
        assert [str(f) for f in found] == [], name
        assert commands(text) or name == "toolcalls", name  # each names commands to check


def test_the_command_exits_1_with_a_line_per_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = tmp_path / "system.md"
    prompt.write_text("Check with:\n" + bash("git stauts", "tar --creat x"))
    assert main(["lint", str(prompt), "--cwd", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{prompt}:3: `git` has no subcommand `stauts` (nearest: status")
    assert lines[1].startswith(f"{prompt}:4: `tar` has no option `--creat`")
    assert lines[-1] == "2 problems"
    assert main(["lint", str(prompt), "--tool", "tar", "--json", "--cwd", str(tmp_path)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["problems"] == 1 and out["findings"][0]["nearest"][0] == "--create"
    prompt.write_text(bash("git status"))
    assert main(["lint", str(prompt), "--domain", "bash", "--cwd", str(tmp_path)]) == 0


def test_a_tasks_file_is_linted_line_by_line(tools: Toolbox, tmp_path: Path) -> None:
    from four.observe._lint import lint_prompt

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"id": "a", "task": "Run `git status`.", "check": "test -f x"}) + "\n\n"
        + json.dumps({"id": "b", "task": "Tidy up.", "check": "grep --bogus-flag x f"}) + "\n"
    )  # fmt: skip
    found = [str(f) for f in lint_prompt(tasks, tools) if f.problem]
    assert [f.split(" (")[0] for f in found] == [f"{tasks}:3: `grep` has no option `--bogus-flag`"]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"\x7fELF\x02\x01\x00\x00binary", "a binary file (a NUL byte at offset 6), not a prompt"),
        (b"caf\xe9", "not UTF-8 text (byte 3), not a prompt"),
        (b"x" * (5 << 20), "5,242,880 bytes, more than 4 MiB: not a prompt"),
    ],
)
def test_a_prompt_that_is_no_text_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, said: str
) -> None:
    prompt = tmp_path / "prompt.bin"
    prompt.write_bytes(content)
    assert main(["lint", str(prompt)]) == 2
    assert capsys.readouterr().err == f"four lint: error: {prompt}: {said}\n"


def test_a_missing_prompt_or_none_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", str(tmp_path / "nope.md")]) == 2
    assert capsys.readouterr().err == f"four lint: error: {tmp_path / 'nope.md'}: no such file\n"
    assert main(["lint"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_findings_read_as_compiler_lines() -> None:
    finding = Finding("p.md", 4, "option", "tar", "--creat", ("--create",))
    assert str(finding) == "p.md:4: `tar` has no option `--creat` (nearest: --create)"


def test_everyday_commands_lint_clean(tools: Toolbox) -> None:
    """Bundles with joined values, a subcommand's own options, find's -exec, options
    with an optional value: none of them is a finding."""
    text = bash(
        "find . -name '*.py' -exec wc -l {} +",
        "curl -sSL http://127.0.0.1:9/x",
        "ruff check --fix src && ruff format --check src",
        "make -j2 -k",
        "cut -d, -f1 data.csv | sort -u | head -n 5",
        "grep -rn TODO . && ls -la && tail -20 log.txt",
        "python3 -m venv .venv && mkdir -p a/b && cp -r a c && rm -rf c",
    )
    assert problems(text, tools) == []
    (found,) = problems(bash("ruff chek src"), tools)
    assert found.startswith("prompt.md:2: `ruff` has no subcommand `chek` (nearest: check")
