"""Every domain's tools are contained as the bash domain's commands are, tried as a hostile
model would, against the real thing: a Jupyter kernel, mypy with a plugin the workspace
names, ruff with the workspace's configuration, gcc, go (cgo) and cargo (build.rs),
help2man, in each environment (here, bubblewrap, Docker), with a secret planted in the
driver's environment. The secret reaches no tool, no observation, no trajectory; nothing
a tool starts outlives it; no file name becomes an option; no diagnostic shows a file
outside the workspace; a special file is never opened.

Docker runs the tools of this machine: the test image (bash and coreutils) with this
machine's /usr and this Python mounted read-only, as a user's image would hold them.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from returns.result import Success

from four import Action, Observation
from four.execute._tools import ToolHost, python_prefixes, tool_host
from four.parse import WholeFile
from tests.execute.conftest import (
    TEST_IMAGE,
    alive,
    bwrap_problem,
    containers_left,
    docker_problem,
    need,
    need_service,
)

HOSTS = ("local", "sandbox", "docker")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """A provider key planted in the driver's environment (and so in its /proc/PID/environ)."""
    token = secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-{token}")
    return token


def make_host(kind: str, workspace: Path) -> ToolHost:
    """The run's environment of ``kind``; Docker's container shows this machine's tools."""
    mounts = ["-v", "/usr:/usr:ro"]
    mounts += [a for p in python_prefixes() for a in ("-v", f"{p}:{p}:ro")]
    return tool_host(kind, workspace, image=TEST_IMAGE, run_args=mounts, python=sys.executable)


@pytest.fixture(params=HOSTS)
def kind(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    need_service(name)
    return name


def settled(token: str, within: float = 10.0) -> list[int]:
    """The processes still alive holding ``token`` in their command line, once they had
    ``within`` seconds to go."""
    deadline = time.monotonic() + within
    while alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(token)


# Python that counts where the secret shows: every /proc/*/environ and /proc/*/cmdline it
# can read (its parent's too), and its own environment. Its text holds the secret only in
# two halves, so it cannot find itself.
SEARCH = """import os
needle = ("sk-" + "{token}").encode()
found = sum(v.encode().count(needle) for v in os.environ.values())
for pid in [p for p in os.listdir("/proc") if p.isdigit()] + [str(os.getppid())]:
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{{pid}}/{{name}}", "rb") as f:
                found += f.read().count(needle)
        except OSError:
            pass
"""

# Leaves processes behind the three ways a hostile tool would: a new session, a double
# fork, and a new session that also drops every variable (and so any mark).
SURVIVORS = (
    "(setsid sleep 300.{tag}1 &); (bash -c 'sleep 300.{tag}2 &' &); "
    "(env -i setsid nohup sleep 300.{tag}3 >/dev/null 2>&1 &)"
)


# --- notebook ------------------------------------------------------------------------


def cell(env: object, source: str) -> Observation:
    result = env(Action(source))  # type: ignore[operator]
    assert isinstance(result, Success), result
    seen: Observation = result.unwrap()
    return seen


def test_a_cell_finds_no_secret_of_the_driver(secret: str, kind: str, tmp_path: Path) -> None:
    pytest.importorskip("ipykernel")
    from four.domains.notebook import kernel_env

    with kernel_env(30, cwd=str(tmp_path), host=make_host(kind, tmp_path)).owns_host() as env:
        seen = cell(env, SEARCH.format(token=secret) + "print('found', found)")
        assert "found 0" in seen.content, seen.content
        assert secret not in seen.content


def test_nothing_a_cell_starts_outlives_the_kernel(kind: str, tmp_path: Path) -> None:
    pytest.importorskip("ipykernel")
    from four.domains.notebook import kernel_env

    tag = f"{os.getpid() % 1000:03d}"
    env = kernel_env(30, cwd=str(tmp_path), host=make_host(kind, tmp_path)).owns_host()
    try:
        script = SURVIVORS.format(tag=tag)
        seen = cell(env, f"import subprocess\nsubprocess.run(['bash', '-c', {script!r}])")
        assert seen.returncode == 0, seen.content
        deadline = time.monotonic() + 60  # a loaded host starts them late
        while len(alive(f"300.{tag}")) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(alive(f"300.{tag}")) == 3  # they ran, and outlived the cell
    finally:
        env.close()
    assert settled(f"300.{tag}") == []


RAW = """A cell that writes to its file descriptors itself.
```python
import os, subprocess
os.write(1, b"\\x1b]52;c;UkFX\\x07RAW-OUT-1\\n")
os.write(2, b"\\x1b[2JRAW-ERR-2\\n")
subprocess.run(["printf", "\\\\033]8;;x\\\\033\\\\\\\\RAW-CHILD-3\\\\n"])
print("the cell ran")
```
"""


@pytest.mark.parametrize("where", ["local", "sandbox"])
def test_a_cells_raw_output_never_reaches_the_terminal(
    where: str, secret: str, tmp_path: Path
) -> None:
    pytest.importorskip("ipykernel")
    if where == "sandbox":
        need(bwrap_problem())
    from tests._server import LoopbackServer, chat
    from tests.cli._runs import cli

    work = tmp_path / "work"
    work.mkdir()
    with LoopbackServer() as server:
        server.push(chat(RAW), chat("Done.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"))
        done = cli(
            "run", "write a notebook", "--domain", "notebook", "--env", where,
            "--model", "test-model", "--api-base", server.url, "--cwd", str(work),
            "-o", str(tmp_path / "runs"), "--json", "--max-steps", "2",
            env={"OPENAI_API_KEY": f"sk-{secret}"}, timeout=240,
        )  # fmt: skip
    said = json.loads(done.stdout)  # the whole of stdout is the JSON: nothing else got there
    assert said["outcome"] == "accepted", done.stderr
    for stream in (done.stdout, done.stderr):
        assert "\x1b" not in stream and "RAW-" not in stream
    record = Path(said["path"]).read_text()
    assert "RAW-OUT-1" in record and "RAW-ERR-2" in record  # kept for the model and the reader
    assert secret not in record


STARTUP = """import os, pathlib
for home in (os.environ.get("IPYTHONDIR", ""), os.path.expanduser("~/.ipython")):
    startup = pathlib.Path(home or "/nonexistent") / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-hidden.py").write_text("answer = 42\\n")
answer = 42
raise RuntimeError("this cell is dropped from the notebook")
"""


def test_the_notebook_check_runs_nothing_an_earlier_kernel_planted(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dropped cell plants an IPython startup file; the re-run must not load it."""
    pytest.importorskip("ipykernel")
    from four.checks import Claim
    from four.domains.notebook import kernel_env, notebook_check
    from four.quaternary import Verdict

    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the planted file stays in the test
    env = kernel_env(30, cwd=str(tmp_path), host=make_host(kind, tmp_path)).owns_host()
    with env:
        assert "RuntimeError" in cell(env, STARTUP).content
        assert "42" in cell(env, "print(answer)").content  # hidden state, in this kernel
        judged = notebook_check(env)(Claim("", (), env))
    assert judged.verdict == Verdict.NO and "NameError" in str(judged.reason), judged


def test_a_flood_of_output_is_cut_and_the_kernel_goes_on() -> None:
    """What a cell prints is bounded where it arrives: this process never holds more than
    a cell's share (and one message), whatever the kernel sends."""
    pytest.importorskip("ipykernel")
    from four.domains.notebook import kernel_env
    from four.domains.notebook._kernel import CELL_OUTPUT_LIMIT, DROPPED

    with kernel_env(120) as env:
        seen = cell(env, "for i in range(40):\n    print('y' * 1_000_000)")
        kept = sum(len(o.get("text", "")) for o in env.cells[-1].outputs)
        assert CELL_OUTPUT_LIMIT <= kept <= CELL_OUTPUT_LIMIT + len(DROPPED)
        assert DROPPED.strip() in seen.content and len(seen.content) < 20_000
        cell(env, "print('z' * 300_000_000)")  # one message over the limit: dropped unread
        kept = sum(len(o.get("text", "")) for o in env.cells[-1].outputs)
        assert kept <= CELL_OUTPUT_LIMIT + len(DROPPED)
        assert "still here" in cell(env, "print('still here')").content


def test_no_module_of_the_workspace_stands_in_for_a_tool(tmp_path: Path) -> None:
    """A workspace's ruff/ and ipykernel_launcher.py would be checkers and a kernel that
    say all is well: the tools start with a safe path; the cells still import from it."""
    pytest.importorskip("ipykernel")
    from four.checks import Claim
    from four.domains.notebook import kernel_env, notebook_check
    from four.domains.python import python_env
    from four.quaternary import Verdict

    (tmp_path / "ruff").mkdir()
    (tmp_path / "ruff" / "__init__.py").write_text("")
    (tmp_path / "ruff" / "__main__.py").write_text("print('[]')\n")  # "no problem"
    (tmp_path / "mypy").mkdir()
    (tmp_path / "mypy" / "__init__.py").write_text("raise SystemExit(0)\n")
    (tmp_path / "ipykernel_launcher.py").write_text("raise SystemExit('not a kernel')\n")
    (tmp_path / "helper.py").write_text("X = 5\n")
    with python_env(tmp_path) as env:
        seen = env.edit([WholeFile("a.py", "import os\nx: int = 'no'\n")]).content
    assert "[ruff F401]" in seen and "[mypy assignment]" in seen, seen
    with kernel_env(30, cwd=str(tmp_path)) as env:
        assert "5" in cell(env, "import helper\nprint(helper.X)").content
        assert notebook_check(env)(Claim("", (), env)).verdict == Verdict.YES


# --- python -----------------------------------------------------------------------------

PLUGIN = (
    SEARCH
    + """import subprocess
with open("plugin-saw.txt", "w") as f:
    f.write(f"{{found}}")
subprocess.run(["bash", "-c", {survivors!r}])
from mypy.plugin import Plugin
def plugin(version):
    return Plugin
"""
)


def test_a_mypy_plugin_the_workspace_names_is_contained(
    secret: str, kind: str, tmp_path: Path
) -> None:
    pytest.importorskip("mypy")
    from four.domains.python import python_env

    tag = f"{(os.getpid() + 1) % 1000:03d}"
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = ./hostile_plugin.py\n")
    survivors = SURVIVORS.format(tag=tag)
    (tmp_path / "hostile_plugin.py").write_text(PLUGIN.format(token=secret, survivors=survivors))
    env = python_env(tmp_path, host=make_host(kind, tmp_path)).owns_host()
    try:
        seen = env.edit([WholeFile("a.py", "x: int = 'no'\n")])
        assert "Incompatible types in assignment" in seen.content, seen.content
        assert (tmp_path / "plugin-saw.txt").read_text() == "0"  # the plugin ran, found nothing
        assert secret not in seen.content
        assert len(alive(f"300.{tag}")) == 3
    finally:
        env.close()
    assert settled(f"300.{tag}") == []


def test_what_a_plugin_prints_never_reaches_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """mypy's own client writes what the daemon's plugins printed to its stdout: ours
    does not (the plugin loads during the first check, inside the daemon's capture)."""
    pytest.importorskip("mypy")
    from four.domains.python import python_env

    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = ./loud.py\n")
    (tmp_path / "loud.py").write_text(
        'import sys\nprint("\\x1b]52;c;UkFX\\x07PLUGIN-OUT")\nprint("PLUGIN-ERR", file=sys.stderr)\n'
        "from mypy.plugin import Plugin\ndef plugin(version):\n    return Plugin\n"
    )
    with python_env(tmp_path) as env:
        seen = env.edit([WholeFile("a.py", "x: int = 'no'\n")]).content
    assert "Incompatible types in assignment" in seen  # the plugin loaded, the check ran
    out, err = capfd.readouterr()
    assert "PLUGIN-" not in out + err and "\x1b" not in out + err


def test_ruff_and_mypy_configuration_shows_no_file_outside_the_workspace(
    secret: str, tmp_path: Path
) -> None:
    need(bwrap_problem())
    pytest.importorskip("mypy")
    from four.domains.python import python_env

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "key.toml").write_text(f'[lint]\nselect = ["E"]\nleaked = "word-{secret}"\n')
    (outside / "key.py").write_text(f"word_{secret}: int = 1\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "linked.py").symlink_to(outside / "key.py")
    (work / "ruff.toml").write_text(f'extend = "{outside / "key.toml"}"\n')
    with python_env(work, host=make_host("sandbox", work)).owns_host() as env:
        seen = env.edit([WholeFile("a.py", "x: int = 1\n")]).content
    assert "ruff failed" in seen and secret not in seen, seen  # ruff ran, and saw no such file
    (work / "ruff.toml").unlink()
    (work / "mypy.ini").write_text(f"[mypy]\nmypy_path = {outside}\nfiles = {outside}/key.py\n")
    # mypy names a module's near-misses ("maybe word_..."): it would show the file's names.
    probe = "from key import word\nfrom linked import word as w\n"
    with python_env(work, ruff=False, host=make_host("sandbox", work)).owns_host() as env:
        seen = env.edit([WholeFile("b.py", probe)]).content
    assert "import-not-found" in seen and secret not in seen, seen


def test_a_fifo_or_a_huge_file_named_like_a_module_is_never_read(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    from four import run, scripted_invoke
    from four.domains.python import python_env, save_files
    from four.parse import edit_parse
    from four.trajectory import load_trajectory

    work = tmp_path / "work"
    work.mkdir()
    os.mkfifo(work / "pipe.py")
    with open(work / "huge.py", "wb") as f:  # sparse: 20 GiB named, no disk used
        f.truncate(20 << 30)
    (work / "ok.py").write_text("x: int = 1\n")
    done: list[Path] = []

    def go() -> None:
        env = python_env(work)
        G = scripted_invoke(
            ["ok.py\n```python\nx: int = 2\n```", "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
        )
        done.append(run(G, edit_parse(), env, save_files(tmp_path / "runs", env), prompt="go"))

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(120)
    if thread.is_alive():  # unblock the open it hangs in, so the test process can end
        with open(work / "pipe.py", "w"):
            pass
        pytest.fail("the run hung on a FIFO named pipe.py")
    files = load_trajectory(done[0]).stats.files
    assert isinstance(files, dict) and files["changed"] == ["ok.py"]
    assert files["skipped"] == [
        f"huge.py: {20 << 30} bytes, over the {64 << 20} read",
        "pipe.py: a FIFO",
    ]


# --- cli -----------------------------------------------------------------------------------


@pytest.fixture
def compilers() -> None:
    need(bwrap_problem())
    for tool in ("gcc", "help2man", "mandoc"):
        if shutil.which(tool) is None:
            need(f"{tool} is not installed (tests/domains/services.sh)")


HELLO = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'


def test_a_file_named_like_an_option_reaches_gcc_as_a_file(compilers: None, tmp_path: Path) -> None:
    from four.domains.cli import build_env

    # gcc would take `-B.c` as `-B .c`: look for its compiler (cc1) in ./.c/, run it here.
    (tmp_path / ".c").mkdir()
    ran = tmp_path / "cc1-ran"
    (tmp_path / ".c" / "cc1").write_text(f"#!/bin/sh\ntouch {ran}\n")
    (tmp_path / ".c" / "cc1").chmod(0o755)
    (tmp_path / "@args.c").write_text("int helper(void) { return 1; }\n")  # not a response file
    with build_env(tmp_path, "tool") as env:
        seen = env.edit([WholeFile("-B.c", "int other(void) { return 2; }\n"),
                         WholeFile("tool.c", HELLO)])  # fmt: skip
        assert env.last is not None and env.last.problem is None, seen.content
    assert not ran.exists()
    assert "./-B.c" in " ".join(env.last.build.command)


def test_no_diagnostic_shows_a_file_outside_the_workspace(
    compilers: None, secret: str, tmp_path: Path
) -> None:
    from four.domains.cli import build_env

    outside = tmp_path / "outside"
    outside.mkdir()
    hidden = outside / "secret.h"
    hidden.write_text(f"word_{secret} leaked here\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "link.h").symlink_to(hidden)
    tries = [
        f'#include "{hidden}"\n',  # by its path: the sandbox does not show it
        '#include "link.h"\n',  # through a symlink of the workspace
        '#include "/etc/passwd"\n',  # a file the sandbox shows: its words are withheld
        'static const char d[] = {\n#include "/etc/passwd"\n};\n',
    ]
    passwd = [w for w in Path("/etc/passwd").read_text().replace(":", " ").split() if len(w) > 4]
    with build_env(work, "tool") as env:
        for source in tries:
            seen = env.edit([WholeFile("tool.c", source + HELLO)]).content
            assert secret not in seen, seen
            assert not any(word in seen for word in passwd if word not in HELLO), seen


def test_files_the_build_made_are_never_followed_out_of_the_workspace(
    compilers: None, secret: str, tmp_path: Path
) -> None:
    """The model links the man page and the binary to a file of the host: the page is not
    dated through the link (a write outside), and neither goes into the artifacts."""
    from four.domains.cli import build_env

    target = tmp_path / "host-file"
    target.write_text(f"word_{secret}\n")
    work = tmp_path / "work"
    work.mkdir()
    source = HELLO.replace("int main(void) {", "int main(int argc, char **argv) {\n"
                           r'if (argc > 1) { (void)argv; puts("Usage: tool"); return 0; }')  # fmt: skip
    with build_env(work, "tool") as env:
        assert "Build OK" in env.edit([WholeFile("tool.c", source)]).content
        (work / "tool.1").unlink()
        (work / "tool.1").symlink_to(target)
        seen = env.edit([WholeFile("tool.c", source + "\n")]).content
        assert "help2man could not make the page" in seen and secret not in seen, seen
        (work / "tool").unlink()
        (work / "tool").symlink_to(target)
        assert [p for p in env.artifacts() if not p.startswith("src/")] == []
    assert target.read_text() == f"word_{secret}\n"  # never written through the link


GO_MOD = "module example.com/cgo\n\ngo 1.19\n"


def test_a_cgo_preamble_shows_no_file_outside_the_workspace(
    compilers: None, secret: str, tmp_path: Path
) -> None:
    if shutil.which("go") is None:
        need("go is not installed (tests/domains/services.sh)")
    from four.domains.cli import build_env

    hidden = tmp_path / "secret.h"
    hidden.write_text(f"int word_{secret} = nope nope;\n")
    work = tmp_path / "work"
    work.mkdir()
    main = f'package main\n\n// #include "{hidden}"\nimport "C"\n\nfunc main() {{}}\n'
    with build_env(work, language="go") as env:
        seen = env.edit([WholeFile("go.mod", GO_MOD), WholeFile("main.go", main)]).content
    assert "Build failed" in seen and secret not in seen, seen


BUILD_RS = """use std::fs;
fn main() {
    let needle = format!("sk-{}", "TOKEN");
    let mut found = std::env::vars().filter(|(_, v)| v.contains(&needle)).count();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        for name in ["environ", "cmdline"] {
            if let Ok(data) = fs::read(entry.path().join(name)) {
                found += String::from_utf8_lossy(&data).matches(&needle).count();
            }
        }
    }
    let here = env!("CARGO_MANIFEST_DIR");
    fs::write(format!("{here}/build-saw.txt"), found.to_string()).unwrap();
    let _ = fs::read_to_string("OUTSIDE").map(|s| fs::write(format!("{here}/stolen.txt"), s));
    std::process::Command::new("bash").arg("-c").arg(r#"SURVIVORS"#).status().unwrap();
}
"""


def test_a_build_script_is_contained(compilers: None, secret: str, tmp_path: Path) -> None:
    if shutil.which("cargo") is None:
        pytest.skip("no Rust toolchain here (cargo is not on PATH): build.rs is not tried")
    from four.domains.cli import build_env
    from four.domains.cli._build import toolchain_folders

    tag = f"{(os.getpid() + 2) % 1000:03d}"
    hidden = tmp_path / "secret.txt"
    hidden.write_text(f"word_{secret}\n")
    work = tmp_path / "work"
    work.mkdir()
    script = BUILD_RS.replace("TOKEN", secret).replace("OUTSIDE", str(hidden))
    # Each survivor says it started, and lets go of cargo's pipes (cargo would wait for them).
    left = " ".join(
        f"(setsid sh -c 'touch {work}/started-{n}; sleep 300.{tag}{n}' >/dev/null 2>&1 &);"
        for n in (1, 2, 3)
    )
    script = script.replace("SURVIVORS", left)
    manifest = '[package]\nname = "probe"\nversion = "1.0.0"\nedition = "2021"\n'
    main = 'fn main() {\n    println!("probe 1.0");\n}\n'
    host = tool_host("sandbox", work, readable=toolchain_folders("rust"))
    env = build_env(work, language="rust", host=host).owns_host()
    try:
        seen = env.edit([WholeFile("Cargo.toml", manifest), WholeFile("build.rs", script),
                         WholeFile("src/main.rs", main)]).content  # fmt: skip
        assert (work / "build-saw.txt").read_text() == "0", seen  # it ran, and found nothing
        assert not (work / "stolen.txt").exists() and secret not in seen
        assert all((work / f"started-{n}").exists() for n in (1, 2, 3))
        assert settled(f"300.{tag}") == []  # they ended with the build: its sandbox ended
    finally:
        env.close()


def test_the_cli_domain_builds_and_runs_in_a_container(compilers: None, tmp_path: Path) -> None:
    need(docker_problem())
    from four.domains.cli import build_env

    with build_env(tmp_path, "hello", host=make_host("docker", tmp_path)).owns_host() as env:
        help_text = r'if (argc > 1) { puts("Usage: hello\n  --help  show this"); return 0; }'
        source = HELLO.replace(
            "int main(void) {", "int main(int argc, char **argv) {\n" + help_text
        )
        source = source.replace('puts("hello")', '(void)argv; puts("hello")')
        seen = env.edit([WholeFile("hello.c", source)]).content
        assert "Build OK: ./hello." in seen, seen
        inside = env(Action("cat /proc/1/cmdline | tr '\\0' ' '")).unwrap().content
    assert "sleep 86400" in inside  # the container's own first process: it ran in there


def test_no_process_of_a_domain_outlives_its_driver_killed(tmp_path: Path) -> None:
    """The driver SIGKILLed mid-run: the kernel, the mypy daemon and what they started end."""
    pytest.importorskip("ipykernel")
    tag = f"{(os.getpid() + 3) % 1000:03d}"
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = ./plug.py\n")
    (tmp_path / "plug.py").write_text(
        f"import subprocess\nsubprocess.run(['bash', '-c', {SURVIVORS.format(tag=tag + '1')!r}])\n"
        "from mypy.plugin import Plugin\ndef plugin(version):\n    return Plugin\n"
    )
    survivors = SURVIVORS.format(tag=tag + "2")
    cell_source = f"import subprocess\nsubprocess.run(['bash', '-c', {survivors!r}])"
    driver = f"""
import time
from four import Action
from four.domains.notebook import kernel_env
from four.domains.python import python_env
from four.parse import WholeFile
kernel = kernel_env(30, cwd={str(tmp_path)!r})
kernel(Action({cell_source!r}))
python = python_env({str(tmp_path)!r})
python.edit([WholeFile("a.py", "x: int = 1\\n")])
print("ready", flush=True)
time.sleep(300)
"""
    process = subprocess.Popen(
        [sys.executable, "-c", driver], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        started = [p for p in alive(f"300.{tag}") if p != process.pid]  # its script holds it
        assert len(started) == 6
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
    assert settled(f"300.{tag}") == []


@pytest.fixture(autouse=True)
def _no_container_left() -> Iterator[None]:
    yield
    if docker_problem() is None:
        assert containers_left() == []
