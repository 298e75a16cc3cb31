"""`four run --timeout` is the run's one clock: a check's command, the last judgement, a
notebook's re-run, a type check's plugin and a build script are all cut when it is spent,
and the run ends with its record sealed, within seconds, not when they are done.

Each run here would take 300 s without the clock (a `sleep 300` somewhere); each must end
well before that (the bound is loose: the machine may be slow, the clock must not be).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from four import User
from four.cli import main
from four.trajectory import load_trajectory
from tests._server import LoopbackServer, chat
from tests.execute.conftest import alive, bwrap_problem, need

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
BOUND = 120.0  # seconds: far below the 300 s the run would take without the clock


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def timed(
    server: LoopbackServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *flags: str,
) -> tuple[str, float, Path]:
    """Run `four run` in-process with ``flags``: the outcome, the seconds it took, and the
    saved trajectory (whose seal `four audit` verifies)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    argv = ["run", "the task", "--model", "test-model", "--api-base", server.url,
            "-o", str(tmp_path / "runs"), "--cwd", str(work), "--json", *flags]  # fmt: skip
    began = time.monotonic()
    main(argv)
    took = time.monotonic() - began
    said = json.loads(capsys.readouterr().out)
    path = Path(said["path"])
    assert main(["audit", str(path)]) == 0, capsys.readouterr().out  # sealed, and it verifies
    capsys.readouterr()
    return str(said["outcome"]), took, path


@pytest.mark.parametrize(
    ("reply", "flags"),
    [
        (SUBMIT, ("--check", "sleep 300.6161")),  # the check hangs
        ("```bash\nsleep 300.6161\n```", ("--command-timeout", "600")),  # a long command
    ],
    ids=["check", "command"],
)
def test_what_runs_when_the_time_is_spent_is_cut(
    reply: str,
    flags: tuple[str, ...],
    server: LoopbackServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.push(chat(reply))
    outcome, took, _ = timed(server, tmp_path, capsys, "--timeout", "3", *flags)
    assert outcome.startswith("time_limit_reached"), outcome
    assert took < BOUND and not alive("300.6161")


def test_the_last_judgement_is_cut_and_the_run_keeps_its_own_end(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(chat("```bash\necho one step\n```"))
    outcome, took, path = timed(
        server, tmp_path, capsys, "--timeout", "4", "--max-steps", "1",
        "--check", "sleep 300.6163", "--last-judgement",
    )  # fmt: skip
    assert outcome == "max_steps_reached", outcome
    assert took < BOUND and not alive("300.6163")
    verdicts = load_trajectory(path).stats.verdicts
    assert verdicts is not None and verdicts.judged_at_end == "max_steps_reached"


NOTEBOOK_CELL = """A cell that is quick now and hangs when the notebook is run again.
```python
import os, time
if os.path.exists("ran-once"):
    time.sleep(300.6164)
open("ran-once", "w").write("yes")
print("quick the first time")
```
"""


def test_the_notebook_check_re_run_is_cut(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ipykernel")
    server.push(chat(NOTEBOOK_CELL), chat("It is done.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"))
    outcome, took, path = timed(
        server, tmp_path, capsys, "--domain", "notebook", "--timeout", "25",
        "--command-timeout", "600",
    )  # fmt: skip
    assert outcome.startswith("time_limit_reached"), outcome
    assert took < 25 + BOUND and not alive("300.6164")
    seen = [m.content for m in load_trajectory(path).messages if isinstance(m, User)]
    assert any("quick the first time" in s for s in seen), seen  # the re-run is what hung


PLUGIN = """import time
from mypy.plugin import Plugin
time.sleep(300.6165)
def plugin(version):
    return Plugin
"""


def test_a_type_check_plugin_that_hangs_is_cut(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mypy")
    work = tmp_path / "work"
    work.mkdir()
    (work / "mypy.ini").write_text("[mypy]\nplugins = ./slow_plugin.py\n")
    (work / "slow_plugin.py").write_text(PLUGIN)
    server.push(chat("a.py\n```python\nx: int = 1\n```"))
    outcome, took, _ = timed(
        server, tmp_path, capsys, "--domain", "python", "--timeout", "10",
        "--command-timeout", "600",
    )  # fmt: skip
    assert outcome.startswith("time_limit_reached"), outcome
    assert took < BOUND and not alive("300.6165")


def test_a_build_script_that_hangs_is_cut(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    need(bwrap_problem())
    if shutil.which("cargo") is None:
        pytest.skip("no Rust toolchain here (cargo is not on PATH)")
    manifest = '[package]\nname = "slow"\nversion = "1.0.0"\nedition = "2021"\n'
    build = "fn main() {\n    std::thread::sleep(std::time::Duration::from_millis(300_6166));\n}\n"
    reply = (
        f"Cargo.toml\n```toml\n{manifest}```\n"
        f"build.rs\n```rust\n{build}```\n"
        'src/main.rs\n```rust\nfn main() {\n    println!("hi");\n}\n```\n'
    )
    server.push(chat(reply))
    outcome, took, _ = timed(
        server, tmp_path, capsys, "--domain", "cli-rust", "--timeout", "30",
        "--command-timeout", "600",
    )  # fmt: skip
    assert outcome.startswith("time_limit_reached"), outcome
    assert took < 30 + BOUND
