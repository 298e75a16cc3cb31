"""The command-line-tool domain against the real tools: gcc with JSON diagnostics,
bubblewrap around the binary, help2man and mandoc for its man page, man -l to read it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from four import Assistant, load_trajectory, run, scripted_invoke
from four.domains import DomainSetup, get_domain
from four.domains.cli import ToolEnv, build_env
from four.parse import edit_parse
from four.types import EXIT_SIGNAL, Action
from tests.execute.conftest import bwrap_problem, need

SUM = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        puts("Usage: sum [INTEGER]...\nPrint the sum of the INTEGERs.\n\n"
             "  --help     display this help and exit\n"
             "  --version  output version information and exit");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        puts("sum 1.0");
        return 0;
    }
    long total = 0;
    for (int i = 1; i < argc; i++) {
        total += strtol(argv[i], NULL, 10);
    }
    printf("%ld\n", total);
    return 0;
}
"""


def _reply(path: str, text: str) -> str:
    return f"{path}\n```c\n{text}```"


@pytest.fixture(autouse=True)
def _tools() -> None:
    need(bwrap_problem())
    for tool in ("gcc", "help2man", "mandoc"):
        if shutil.which(tool) is None:
            need(f"{tool} is not installed (apt-get install {tool}; tests/domains/services.sh)")


def _edit(env: ToolEnv, reply: str) -> str:
    (action,) = edit_parse()(Assistant(reply)).unwrap()
    assert isinstance(action, Action)
    return env(action).unwrap().content


def test_a_compile_error_comes_back_with_its_file_line_and_source(tmp_path: Path) -> None:
    with build_env(tmp_path) as env:
        text = _edit(env, _reply("sum.c", "int main(void) { return 0 }\n"))
    assert "Build failed" in text
    assert "sum.c:1:" in text and "error" in text and "int main(void) { return 0 }" in text


def test_a_warning_fails_the_build(tmp_path: Path) -> None:
    source = "int main(void) { int unused; return 0; }\n"
    with build_env(tmp_path) as env:
        text = _edit(env, _reply("sum.c", source))
        assert env.last is not None and not env.last.build.clean
    assert "warning turned error (unused-variable)" in text and "sum.c:1:" in text


def test_a_clean_tool_gets_its_help_version_and_a_man_page_that_lints(tmp_path: Path) -> None:
    with build_env(tmp_path, smoke=["./sum 2 3"]) as env:
        text = _edit(env, _reply("sum.c", SUM))
        assert env.last is not None and env.last.problem is None, text
    assert "Build OK: ./sum." in text and "`./sum --version` (ok): sum 1.0" in text
    assert "`./sum 2 3` (ok): 5" in text and "lints clean" in text
    assert (tmp_path / "sum.1").is_file()


def test_a_help_that_exits_1_gets_feedback_and_no_man_page(tmp_path: Path) -> None:
    broken = SUM.replace(
        '"  --version  output version information and exit");\n        return 0;',
        '"  --version  output version information and exit");\n        return 1;',
    )
    with build_env(tmp_path) as env:
        text = _edit(env, _reply("sum.c", broken))
        assert env.last is not None and env.last.man_page is None
        assert env.last.problem == "`./sum --help` exited 1 with output on stdout"
    assert "must print to stdout and exit 0" in text
    assert not (tmp_path / "sum.1").exists()


def test_the_binary_cannot_read_a_file_outside_its_folder(tmp_path: Path) -> None:
    secret = Path("/tmp") / f"four-cli-secret-{tmp_path.name}"
    secret.write_text("top secret\n")
    try:
        reader = (
            "#include <stdio.h>\nint main(void) {\n"
            f'    FILE *f = fopen("{secret}", "r");\n'
            '    if (!f) { puts("cannot open"); return 0; }\n'
            '    char line[64]; puts(fgets(line, sizeof line, f) ? line : "empty"); return 0;\n}\n'
        )
        with build_env(tmp_path) as env:
            _edit(env, _reply("reader.c", reader))
            seen = env(Action("./reader")).unwrap()
        assert "cannot open" in seen.content and "top secret" not in seen.content
        assert secret.read_text() == "top secret\n"  # it was there all along, outside
    finally:
        secret.unlink()


def test_the_domain_end_to_end_with_a_scripted_model(tmp_path: Path) -> None:
    workspace, out = tmp_path / "ws", tmp_path / "out"
    workspace.mkdir()
    domain = get_domain("cli")
    setup = DomainSetup(workspace, out)
    env = domain.environment(setup)
    check = domain.check(setup, env, "./sum 2 3 | grep -qx 5")
    model = scripted_invoke([
        _reply("sum.c", SUM.replace("total += strtol", "total -= strtol")),  # a wrong sum
        EXIT_SIGNAL,
        _reply("sum.c", SUM),
        EXIT_SIGNAL,
    ])  # fmt: skip
    path = run(model, domain.parse(), env, domain.emit(setup, env), domain.system,
               "A tool that sums its integer arguments", max_steps=8, check=check)  # fmt: skip
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "accepted"
    feedback = [m.content for m in trajectory.messages if getattr(m, "kind", "") == "feedback"]
    assert feedback and all("grep -qx 5" not in f for f in feedback)  # the answer key is not told
    verdicts = trajectory.stats.verdicts
    assert verdicts is not None
    reasons = [str(e.reason) for e in verdicts.log]
    assert any("./sum 2 3 | grep -qx 5` failed (exit 1)" in r for r in reasons)
    tool = path.with_suffix("").with_name(path.stem + ".tool")
    assert (tool / "bin" / "sum").is_file() and (tool / "src" / "sum.c").is_file()
    page = tool / "man" / "man1" / "sum.1"
    shown = subprocess.run(["man", "-l", str(page)], capture_output=True, text=True, timeout=60,
                           env={"MANPAGER": "cat", "PAGER": "cat", "PATH": "/usr/bin:/bin",
                                "MANWIDTH": "80"})  # fmt: skip
    assert shown.returncode == 0 and "Print the sum of the INTEGERs" in shown.stdout
    assert json.loads(path.read_text())["outcome"] == "accepted"


RUST = """fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--help") {
        println!("Usage: total [INTEGER]...\\nPrint the sum of the INTEGERs.");
        return;
    }
    if args.first().map(String::as_str) == Some("--version") {
        println!("total 1.0");
        return;
    }
    let sum: i64 = args.iter().filter_map(|a| a.parse::<i64>().ok()).sum();
    println!("{sum}");
}
"""


def test_a_rust_tool_is_built_with_cargo_and_its_warnings_count(tmp_path: Path) -> None:
    if shutil.which("cargo") is None:
        pytest.skip("no Rust toolchain here (cargo is not on PATH): the Rust builds are not tried")
    manifest = '[package]\nname = "total"\nversion = "1.0.0"\nedition = "2021"\n'
    with build_env(tmp_path, language="rust", smoke=["./total 2 3"]) as env:
        _edit(env, f"Cargo.toml\n```toml\n{manifest}```")
        text = _edit(
            env,
            _reply("src/main.rs", RUST.replace("fn main() {", "fn main() {\n    let unused = 1;")),
        )
        assert "Build failed" in text and "src/main.rs:2:" in text and "unused" in text
        text = _edit(env, _reply("src/main.rs", RUST))
        assert env.last is not None and env.last.problem is None, text
    assert "`./total 2 3` (ok): 5" in text
