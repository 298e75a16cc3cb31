"""The built-in local model for real: the embedded llama.cpp server starts, a short real
task runs through ``four run --local``, and no server outlives the process that started
it, however that process ends (a normal exit, Ctrl-C, SIGKILL).

These need the model pulled (``four model pull``, as ``.ci/run`` does) and the
``local`` extra: they skip, with the reason, where either is missing, and fail instead
with FOUR_REQUIRE_SERVICES=1 (as in CI).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from four.models import DEFAULT_MODEL, find_model

SRC = str(Path(__file__).resolve().parents[2] / "src")
OUTCOMES = (
    "exit:task_complete", "max_steps_reached", "repeated_format_error", "model_error",
    "execution_error", "cost_limit_reached", "time_limit_reached",
)  # fmt: skip


@pytest.fixture(scope="module")
def model() -> Path:
    import importlib.util

    found = find_model(DEFAULT_MODEL)
    reason = None
    if importlib.util.find_spec("xllamacpp") is None:
        reason = "the local extra is not installed (pip install -e '.[local]')"
    elif not isinstance(found.value_or(None), Path):
        reason = str(found.failure())
    if reason is not None:
        if os.environ.get("FOUR_REQUIRE_SERVICES") == "1":
            pytest.fail(f"FOUR_REQUIRE_SERVICES=1 but {reason}")
        pytest.skip(reason)
    return found.unwrap()


def servers_of(pid: int) -> list[int]:
    """The llama.cpp server children of process ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"_llama_child.py" in cmdline:
            found.append(int(entry.name))
    return found


def gone(pid: int, within: float = 20.0) -> bool:
    """Whether ``pid`` ends (or is only a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.2)
    return False


def wait_for_server(process: subprocess.Popen[str], within: float = 300.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = servers_of(process.pid)
        if found:
            return found[0]
        assert process.poll() is None, process.communicate()
        time.sleep(0.2)
    raise AssertionError("no server started")


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    work = tmp_path / "work"  # the agent's folder; its runs are saved beside it, not in it
    work.mkdir()
    (work / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    yield work


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def reap() -> Iterator[None]:
    """A ``four run`` a failed test left running is killed, its pipes closed."""
    yield
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate()


def four(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC, "FOUR_OUTPUT_DIR": str(cwd.parent / "runs")}
    process = subprocess.Popen(
        [sys.executable, "-m", "four.cli", "run", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    STARTED.append(process)
    return process


def test_a_real_task_runs_on_the_local_model_and_its_server_ends(
    model: Path, workdir: Path
) -> None:
    process = four(
        "How many lines does notes.txt have?", "--local", "--max-steps", "4", "--json",
        "--timeout", "600", cwd=workdir,
    )  # fmt: skip
    server = wait_for_server(process)
    out, err = process.communicate(timeout=900)
    result = json.loads(out)
    assert result["outcome"].startswith(OUTCOMES), (result, err)
    assert result["steps"] >= 1
    assert result["usage"]["prompt_tokens"] > 0
    assert gone(server), "the server outlived four run"


def test_ctrl_c_while_the_model_loads_leaves_no_server(model: Path, workdir: Path) -> None:
    process = four("List the files here.", "--local", "--quiet", cwd=workdir)
    server = wait_for_server(process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130
    assert "interrupted" in err
    assert gone(server), "the server outlived four run interrupted as it started"


def test_ctrl_c_during_the_run_saves_it_and_ends_its_server(model: Path, workdir: Path) -> None:
    process = four("List the files here, one by one.", "--local", "--quiet", cwd=workdir)
    server = wait_for_server(process)
    deadline = time.monotonic() + 300
    while not list((workdir.parent / "runs").glob("*.jsonl")):  # the run has begun
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (out, err[-3000:])
    assert out.startswith("interrupted · saved "), (out, err[-3000:])
    assert gone(server), "the server outlived an interrupted four run"


def test_a_killed_process_leaves_no_server(model: Path) -> None:
    code = (
        "import sys\n"
        "from four.invoke import local_invoke\n"
        "server = local_invoke(max_tokens=8).server().unwrap()\n"
        "print(server.pid, flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": SRC},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        server = int(process.stdout.readline())
        assert servers_of(process.pid) == [server]
        process.kill()  # SIGKILL: no atexit, no finally; only the kernel closes its pipes
        process.wait()
    assert gone(server), "the server outlived a SIGKILLed parent"


def test_a_file_that_is_no_model_is_a_model_error(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("the local extra is not installed")
    from four import User
    from four.invoke import local_invoke

    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 4096)
    result = local_invoke(str(fake), start_timeout=120)([User("hi")])
    error = result.failure()
    assert error.kind == "other"
    assert error.message.startswith("the local server for fake did not start: ")


def test_import_four_loads_none_of_the_local_extra() -> None:
    code = (
        "import sys, four, four.invoke, four.models\n"
        "from four import local_invoke\n"
        "from four.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in ('xllamacpp', 'huggingface_hub', 'litellm') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_runs_started_under_changing_load_share_one_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("the local extra is not installed")
    from four.invoke import local_invoke

    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 4096)
    loads = iter([(0.0, 0.0, 0.0), (7.0, 7.0, 7.0)])  # a batch's later runs see a busy machine
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    first, later = local_invoke(str(fake)), local_invoke(str(fake))
    assert first.settings == later.settings  # one server (2 GB), not one per thread count
