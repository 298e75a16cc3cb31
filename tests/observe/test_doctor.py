"""``four doctor``: each check against the real thing it reads.

A loopback OpenAI-compatible server that says (llama.cpp's ``/props``, ``/slots``) how
many requests it serves at once, real bubblewrap, the real Docker daemon, real tmpfs
mounts (read-only, full), real bash asked for a check's program.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from four.cli import main
from four.execute import local_env
from four.observe._doctor import (
    Budget,
    check_program,
    context_fit,
    environment,
    output_folder,
    wall_budget,
)
from four.observe._endpoint import read_server
from tests._server import Answer, LoopbackServer, chat, serve
from tests.cli.test_save_faults import _mount
from tests.execute.conftest import TEST_IMAGE, bwrap_problem, docker_problem, need

MODELS = Answer({"object": "list", "data": [{"id": "test-model", "object": "model"}]})


def _props(slots: int, n_ctx: int = 8192) -> Answer:
    return Answer({"total_slots": slots, "default_generation_settings": {"n_ctx": n_ctx}})


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def llama() -> Iterator[LoopbackServer]:
    """A server that serves one request at once, as llama.cpp started with -np 1."""
    with serve(routes={"/v1/models": MODELS, "/props": _props(1)}) as server:
        yield server


def _tasks(tmp_path: Path, n: int = 3) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"t{i}", "task": "list files"}) + "\n" for i in range(n))
    )
    return path


def _doctor(
    capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, dict[str, dict[str, str]]]:
    code = main(["doctor", *argv, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["exit"] == code
    return code, {c["check"]: c for c in out["checks"]}


def _agent(server: LoopbackServer, tmp_path: Path) -> list[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return ["-m", "test-model", "--api-base", server.url, "--prices", "0,0",
            "-o", str(tmp_path / "out"), "--cwd", str(work)]  # fmt: skip


def test_32_workers_against_a_server_that_serves_one_is_a_warning(
    llama: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rows = _doctor(
        capsys, "batch", str(_tasks(tmp_path)), *_agent(llama, tmp_path), "-w", "32"
    )
    assert code == 3, rows
    assert rows["parallel"]["status"] == "WARN"
    assert (
        "32 workers" in rows["parallel"]["detail"]
        and "serves 1 at once" in rows["parallel"]["detail"]
    )
    assert rows["parallel"]["fix"].startswith("-w 1")
    assert {r["status"] for name, r in rows.items() if name != "parallel"} == {"GO"}, rows
    assert "8,192 tokens (the server)" in rows["model"]["detail"]
    code, rows = _doctor(
        capsys, "batch", str(_tasks(tmp_path)), *_agent(llama, tmp_path), "-w", "1"
    )
    assert code == 0 and rows["parallel"]["status"] == "GO", rows


def test_slots_are_read_from_slots_when_props_says_nothing(tmp_path: Path) -> None:
    slots = Answer([{"id": 0, "n_ctx": 4096}, {"id": 1, "n_ctx": 4096}])
    with serve(routes={"/v1/models": MODELS, "/slots": slots}) as server:
        facts = read_server(server.url)
    assert (facts.slots, facts.slots_from, facts.context_window) == (2, "/slots", 4096)


def test_a_server_that_does_not_answer_is_no_go(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = tmp_path / "w"
    work.mkdir()
    code, rows = _doctor(capsys, "run", "t", "-m", "m", "--api-base", f"http://127.0.0.1:{port}/v1",
                         "-o", str(tmp_path / "o"), "--cwd", str(work))  # fmt: skip
    assert code == 1
    assert (
        rows["endpoint"]["status"] == "NO-GO"
        and "cannot reach --api-base" in rows["endpoint"]["detail"]
    )


def test_the_probe_measures_latency_and_sizes_the_wall_clock_budget(
    llama: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llama.push(Answer(chat("OK").body, delay=0.5))
    argv = ["run", "t", *_agent(llama, tmp_path), "--max-steps", "10", "--timeout", "2", "--probe"]
    code, rows = _doctor(capsys, *argv)
    took = re.search(r"answered in ([\d.]+) s", rows["probe"]["detail"])
    assert rows["probe"]["status"] == "GO" and took and 0.5 <= float(took[1]) < 5, rows["probe"]
    budget = rows["budget"]
    assert budget["status"] == "WARN" and f"10 steps x {took[1]} s" in budget["detail"], budget
    assert int(re.findall(r"allows ≈(\d+) steps", budget["detail"])[0]) <= 4 and code == 3
    assert len(llama.bodies("/v1/chat/completions")) == 1  # one tiny request, no more


def test_budget_of_a_batch_counts_rounds_of_what_the_server_serves_at_once() -> None:
    budget = Budget(10, timeout=None, tasks=8, workers=4, slots=1, batch_timeout=60)
    check = wall_budget(budget, latency=1.0)
    assert check.status == "WARN" and "8 tasks, 1 at once ≈ 80 s" in check.detail
    assert wall_budget(Budget(10, timeout=100), latency=1.0).status == "GO"


def test_the_environments_run_a_trivial_command() -> None:
    (ran,) = environment("local", local_env)
    assert ran.status == "GO"
    ran, found = environment("local", local_env, then=lambda env: check_program("bash -c :", env))
    assert (ran.status, found.name, found.status) == ("GO", "check", "GO")


def test_the_sandbox_runs_a_command_under_real_bubblewrap(tmp_path: Path) -> None:
    need(bwrap_problem())
    from four.execute import sandbox_env

    (check,) = environment("sandbox", lambda: sandbox_env(10, workdir=str(tmp_path)))
    assert check.status == "GO" and "sandbox: a command ran" in check.detail, check


def test_docker_needs_the_daemon_and_the_image(monkeypatch: pytest.MonkeyPatch) -> None:
    need(docker_problem())
    from four.execute import docker_env

    (ok,) = environment("docker", lambda: docker_env(TEST_IMAGE, 30), TEST_IMAGE)
    assert ok.status == "GO"
    (missing,) = environment(
        "docker", lambda: docker_env("four-no-such:image", 30), "four-no-such:image"
    )
    assert missing.status == "NO-GO" and missing.fix.startswith("docker pull four-no-such:image")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    (dead,) = environment("docker", lambda: docker_env(TEST_IMAGE, 30), TEST_IMAGE)
    assert dead.status == "NO-GO" and "the daemon does not answer" in dead.detail


def test_a_read_only_or_full_folder_is_no_go(tmp_path: Path) -> None:
    for ro in _mount(tmp_path / "ro", "ro,size=64k"):
        check = output_folder(str(ro / "runs"))
        assert check.status == "NO-GO" and "read-only file system" in check.detail, check
    for small in _mount(tmp_path / "small", "size=256k"):
        (small / "fill").write_bytes(b"x" * (256 * 1024 - 4096))
        subprocess.run(["dd", "if=/dev/zero", f"of={small}/more", "bs=4k", "count=64"],
                       capture_output=True, check=False)  # fmt: skip
        check = output_folder(str(small))
        assert check.status == "NO-GO" and "KB free" in check.detail, check
    assert output_folder(str(tmp_path / "new" / "runs")).status == "GO"
    assert not (tmp_path / "new").exists()  # the doctor makes nothing


def test_the_check_program_is_asked_of_the_environment(tmp_path: Path) -> None:
    env = local_env(cwd=str(tmp_path))
    assert check_program("python3 -m pytest -q", env).status == "GO"
    assert check_program("test -f ok.txt", env).status == "GO"
    missing = check_program("FOO=1 no-such-judge-xyz --all", env)
    assert missing.status == "NO-GO" and "'no-such-judge-xyz'" in missing.detail
    (tmp_path / "judge.sh").write_text("#!/bin/sh\nexit 0\n")
    assert check_program("./judge.sh", env).status == "NO-GO"  # not executable
    os.chmod(tmp_path / "judge.sh", 0o755)
    assert check_program("./judge.sh", env).status == "GO"


def test_a_run_whose_check_program_is_missing_does_not_start(
    llama: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "t", *_agent(llama, tmp_path), "--check", "no-such-judge-xyz"])
    assert code == 2
    assert "'no-such-judge-xyz' is not found" in capsys.readouterr().err
    assert llama.bodies("/v1/chat/completions") == []  # refused before the first model call


def test_a_prompt_larger_than_the_context_window_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert context_fit("", "x" * 4000, 2000).status == "GO"
    assert context_fit("", "x" * 12000, 2000).status == "NO-GO"
    with serve(routes={"/v1/models": MODELS, "/props": _props(1, n_ctx=1000)}) as server:
        code = main(["run", "x" * 8000, *_agent(server, tmp_path)])
        assert code == 2 and "of 1,000 tokens" in capsys.readouterr().err
        assert server.bodies("/v1/chat/completions") == []


def test_the_table_has_a_row_per_check_and_the_verdict_last(
    llama: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "run", "list files", *_agent(llama, tmp_path), "--check", "true"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "four doctor · run · openai/test-model · local"
    names = [line.split()[1] for line in lines[1:-1]]
    assert names == [
        "key",
        "endpoint",
        "model",
        "output",
        "context",
        "environment",
        "check",
        "prompt",
        "budget",
    ]
    assert (
        all(line.startswith("GO ") for line in lines[1:-1]) and lines[-1] == "GO: 9 checks (exit 0)"
    )
    assert llama.bodies("/v1/chat/completions") == []  # no --probe: no model request


def test_a_held_out_judge_is_not_looked_for_in_the_workspace(tmp_path: Path) -> None:
    env = local_env(cwd=str(tmp_path))
    assert check_program("./hidden/judge.sh", env).status == "NO-GO"
    assert check_program("./hidden/judge.sh", env, held_out=("hidden",)).status == "GO"


def test_a_hosted_endpoint_is_reached_through_the_proxy_when_one_is_set(
    llama: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from four.observe._endpoint import reach

    monkeypatch.setenv("https_proxy", llama.root)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    through = reach("api.example.invalid")
    assert through.status == "GO" and "through the proxy 127.0.0.1" in through.detail, through
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")  # the discard port: nobody
    assert reach("api.example.invalid", timeout=2).status == "NO-GO"


def test_a_batch_whose_folder_cannot_hold_runs_does_not_start(
    llama: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "taken"
    taken.write_text("a file\n")
    argv = ["batch", str(_tasks(tmp_path)), *_agent(llama, tmp_path), "-q"]
    argv[argv.index("-o") + 1] = str(taken)
    assert main(argv) == 2
    assert f"-o {taken}: it is a file, not a folder" in capsys.readouterr().err
    assert llama.bodies("/v1/chat/completions") == []


def test_the_local_model_needs_no_key_and_is_no_go_until_pulled(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FOUR_MODELS", str(tmp_path / "models"))  # nothing pulled there
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    flags = ["-o", str(tmp_path / "out"), "--cwd", str(work)]
    code, checks = _doctor(capsys, "run", "list files", "--local", *flags)
    assert code == 1 and "key" not in checks and "endpoint" not in checks
    assert checks["model"]["status"] == "NO-GO"
    assert "four model pull" in checks["model"]["fix"]
    assert checks["context"]["status"] == "GO"  # against the local server's context size


def test_a_local_gguf_file_is_go_with_room_in_memory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import importlib.util

    need(None if importlib.util.find_spec("xllamacpp") else "the local extra is not installed")
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + bytes(1024))
    work = tmp_path / "work"
    work.mkdir()
    flags = ["-o", str(tmp_path / "out"), "--cwd", str(work)]
    code, checks = _doctor(capsys, "run", "list files", "--local", str(gguf), *flags)
    assert checks["model"]["status"] == "GO", checks["model"]
    assert checks["memory"]["status"] == "GO"  # a 1 KB model fits
    assert code == 0, checks


def test_the_prompt_row_is_no_go_for_a_command_the_tool_does_not_take(
    llama: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = "Commit the change: run `git commit --amned` when the tests pass."
    code, rows = _doctor(capsys, "run", task, *_agent(llama, tmp_path))
    assert code == 1 and rows["prompt"]["status"] == "NO-GO"
    detail = rows["prompt"]["detail"]
    assert "task:1: `git commit` has no option `--amned` (nearest: --amend" in detail
    code, rows = _doctor(capsys, "run", "Run `git status -s` and say what changed.",
                         *_agent(llama, tmp_path))  # fmt: skip
    assert rows["prompt"]["status"] == "GO", rows["prompt"]


# --- hostile paths: never waited on, never called GO ------------------------------------


def test_a_system_prompt_fifo_is_refused_at_once_and_a_pipe_is_read(
    llama: LoopbackServer, tmp_path: Path
) -> None:
    from tests.cli._runs import cli

    fifo = tmp_path / "system.md"
    os.mkfifo(fifo)
    done = cli("doctor", "run", "t", *_agent(llama, tmp_path), "--system", str(fifo), timeout=20)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"four doctor: error: --system: {fifo} is a FIFO (named pipe) that nothing writes to"
    ]
    argv = " ".join(["four", "doctor", "run", "t", *_agent(llama, tmp_path), "--json"])
    piped = subprocess.run(
        ["bash", "-c", f"{argv} --system <(echo 'You run commands.')"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )  # fmt: skip
    assert json.loads(piped.stdout)["checks"][0]["check"] == "key", piped.stderr


def test_an_output_folder_through_a_link_loop_or_a_broken_link_is_no_go(
    llama: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    broken = tmp_path / "broken"
    broken.symlink_to(tmp_path / "nowhere" / "at-all")
    for out, words in (
        (loop, "symbolic link loop"),
        (loop / "runs", "symbolic link loop"),
        (broken, f"{broken} is a broken symbolic link"),
    ):
        code, rows = _doctor(capsys, "run", "t", *_agent(llama, tmp_path), "-o", str(out))
        assert code == 1 and rows["output"]["status"] == "NO-GO", rows["output"]
        assert words in rows["output"]["detail"]


def test_the_signing_key_is_read_and_checked(
    llama: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from four.trajectory._sign import write_key_pair

    good, public = write_key_pair(tmp_path / "run.key")
    fifo = tmp_path / "key.fifo"
    os.mkfifo(fifo)
    for key, status, words in (
        (good, "GO", "an Ed25519 key"),
        (public, "NO-GO", "is not an unencrypted PEM private key"),
        (fifo, "NO-GO", "is a FIFO (named pipe), not a regular file"),
        (tmp_path / "missing.key", "NO-GO", "No such file or directory"),
    ):
        code, rows = _doctor(capsys, "run", "t", *_agent(llama, tmp_path), "--sign", str(key))
        assert rows["signing"]["status"] == status and words in rows["signing"]["detail"], rows
        assert (code == 1) == (status == "NO-GO")
