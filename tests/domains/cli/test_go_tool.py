"""The command-line-tool domain in Go, against the real go command (go build, go vet
-json), offline: bubblewrap around the binary, help2man and mandoc for its man page."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from four import Assistant, load_trajectory
from four.cli import main
from four.domains.cli import ToolEnv, build_env
from four.parse import edit_parse
from four.types import EXIT_SIGNAL, Action
from tests._server import LoopbackServer, chat
from tests.execute.conftest import bwrap_problem, need

GO_MOD = "module example.com/sum\n\ngo 1.19\n"

SUM = """package main

import (
\t"fmt"
\t"os"
\t"strconv"
)

func main() {
\targs := os.Args[1:]
\tif len(args) > 0 && args[0] == "--help" {
\t\tfmt.Println("Usage: sum [INTEGER]...\\nPrint the sum of the INTEGERs.\\n\\n" +
\t\t\t"      --help     display this help and exit\\n" +
\t\t\t"      --version  output version information and exit")
\t\treturn
\t}
\tif len(args) > 0 && args[0] == "--version" {
\t\tfmt.Println("sum 1.0")
\t\treturn
\t}
\ttotal := 0
\tfor _, arg := range args {
\t\tn, err := strconv.Atoi(arg)
\t\tif err != nil {
\t\t\tfmt.Fprintf(os.Stderr, "sum: not an integer: %s\\n", arg)
\t\t\tos.Exit(2)
\t\t}
\t\ttotal += n
\t}
\tfmt.Println(total)
}
"""


@pytest.fixture(autouse=True)
def _tools() -> None:
    need(bwrap_problem())
    for tool, package in (("go", "golang-go"), ("help2man", "help2man"), ("mandoc", "mandoc")):
        if shutil.which(tool) is None:
            need(f"{tool} is not installed (apt-get install {package}; tests/domains/services.sh)")


def _files(*files: tuple[str, str]) -> str:
    return "\n\n".join(f"{path}\n```{'go' if path.endswith('.go') else 'text'}\n{text}```"
                       for path, text in files)  # fmt: skip


def _edit(env: ToolEnv, reply: str) -> str:
    (action,) = edit_parse()(Assistant(reply)).unwrap()
    assert isinstance(action, Action)
    return env(action).unwrap().content


def test_a_go_compile_error_comes_back_with_its_file_line_column_and_source(
    tmp_path: Path,
) -> None:
    broken = SUM.replace("\ttotal := 0\n", "\ttotal := 0\n\tunused := total\n").replace(
        "fmt.Println(total)", 'fmt.Println(total + "!")'
    )
    with build_env(tmp_path, language="go") as env:
        text = _edit(env, _files(("go.mod", GO_MOD), ("main.go", broken)))
        assert env.last is not None and env.last.build.binary is None
        found = {(d.file, d.line) for d in env.last.build.diagnostics}
    assert "Build failed (go build -o ./sum .)" in text
    assert ("main.go", 22) in found and ("main.go", 31) in found  # both, not just the first
    assert "main.go:22:2: error: " in text and "not used" in text
    assert "\n    unused := total\n" in text  # the source line, under the message
    assert 'fmt.Println(total + "!")' in text


def test_a_go_vet_finding_fails_the_build_and_leaves_no_binary(tmp_path: Path) -> None:
    bad = SUM.replace('fmt.Println("sum 1.0")', 'fmt.Printf("sum %d\\n", "1.0")')
    with build_env(tmp_path, language="go") as env:
        text = _edit(env, _files(("go.mod", GO_MOD), ("main.go", bad)))
        assert env.last is not None and not env.last.build.clean
        (finding,) = env.last.build.diagnostics
    assert "Build failed (go vet -json .)" in text
    assert finding.file == "main.go" and finding.line == 18 and finding.column == 3
    assert finding.kind == "warning (go vet: printf)" and "wrong type string" in finding.message
    assert finding.source.strip() == 'fmt.Printf("sum %d\\n", "1.0")'
    assert not (tmp_path / "sum").exists()  # as under -Werror


def test_without_go_mod_the_model_is_told_to_write_one(tmp_path: Path) -> None:
    with build_env(tmp_path, language="go") as env:
        text = _edit(env, _files(("main.go", SUM)))
    assert "go.mod: error: there is no go.mod: write one (a `module NAME` line" in text


def test_a_go_build_reaches_no_network_for_a_module_it_does_not_have(tmp_path: Path) -> None:
    uses = SUM.replace('\t"strconv"\n', '\t"strconv"\n\n\t"example.com/nowhere/lib"\n').replace(
        "\ttotal := 0\n", "\ttotal := lib.Zero\n"
    )
    with build_env(tmp_path, language="go", build_timeout=60) as env:
        text = _edit(env, _files(("go.mod", GO_MOD), ("main.go", uses)))
    assert "Build failed" in text and "main.go:8:2:" in text
    assert "example.com/nowhere/lib" in text


def test_a_clean_go_tool_gets_its_help_version_smoke_and_a_man_page(tmp_path: Path) -> None:
    with build_env(tmp_path, language="go", smoke=["./sum 2 3"]) as env:
        text = _edit(env, _files(("go.mod", GO_MOD), ("main.go", SUM)))
        assert env.last is not None and env.last.problem is None, text
        assert sorted(env.artifacts()) == ["bin/sum", "man/man1/sum.1", "src/go.mod", "src/main.go"]
    assert "Build OK: ./sum." in text and "`./sum --version` (ok): sum 1.0" in text
    assert "`./sum 2 3` (ok): 5" in text and "lints clean" in text


def test_four_run_domain_cli_go_end_to_end(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work, runs = tmp_path / "work", tmp_path / "runs"
    work.mkdir()
    wrong = SUM.replace("total += n", "total -= n")
    server.push(
        chat(_files(("go.mod", GO_MOD), ("main.go", wrong))),
        chat(EXIT_SIGNAL),  # rejected: the acceptance command fails
        chat(_files(("main.go", SUM))),
        chat(EXIT_SIGNAL),
    )
    args = ["run", "A tool that sums its integer arguments", "--domain", "cli-go",
            "--check", "./sum 2 3 | grep -qx 5", "--model", "m", "--api-base", server.url,
            "-o", str(runs), "--cwd", str(work), "--json"]  # fmt: skip
    assert main(args) == 0
    path = Path(json.loads(capsys.readouterr().out)["path"])
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "accepted"
    assert "go build, then go vet" in trajectory.messages[0].content
    tool = path.with_suffix("").with_name(path.stem + ".tool")
    assert (tool / "bin" / "sum").is_file() and (tool / "src" / "main.go").is_file()
    assert (tool / "src" / "go.mod").read_text() == GO_MOD
    shown = subprocess.run(["man", "-l", str(tool / "man" / "man1" / "sum.1")],
                           capture_output=True, text=True, timeout=60,
                           env={"MANPAGER": "cat", "PAGER": "cat", "PATH": "/usr/bin:/bin",
                                "MANWIDTH": "80"})  # fmt: skip
    assert shown.returncode == 0 and "Print the sum of the INTEGERs" in shown.stdout


def test_a_go_build_needs_no_writable_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "no-such-home"))
    for name in ("GOCACHE", "GOPATH", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    with build_env(work, language="go") as env:
        text = _edit(env, _files(("go.mod", GO_MOD), ("main.go", SUM)))
    assert "Build OK: ./sum." in text, text
    assert not (tmp_path / "no-such-home").exists()  # its caches went to the temporary folder
