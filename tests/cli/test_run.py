"""`four run`: against the loopback OpenAI-compatible server, as a subprocess and in-process.

A `four run` subprocess imports litellm (seconds on this machine), so only what needs a
process of its own (exit codes seen from outside, Ctrl-C, SIGTERM) runs as one; the
rest calls ``four.cli.main`` in this process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from four.cli import main
from tests._server import LoopbackServer, call, chat, error
from tests.cli._runs import cli, cli_env

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting of the developer's shell (FOUR_MODEL...) leaks into a test."""
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def args(server: LoopbackServer, tmp_path: Path, *extra: str) -> list[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return [
        "--model",
        "test-model",
        "--api-base",
        server.url,
        "-o",
        str(tmp_path / "runs"),
        "--cwd",
        str(work),
        *extra,
    ]


def chats(server: LoopbackServer) -> list[dict[str, object]]:
    return [dict(b) for b in server.bodies("/v1/chat/completions")]


# --- as a subprocess ------------------------------------------------------------------


def test_a_finished_run_as_a_subprocess(server: LoopbackServer, tmp_path: Path) -> None:
    server.push(chat("Look first.\n```bash\necho hi there\n```"), chat(SUBMIT))
    done = cli("run", "say hi", *args(server, tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "exit:task_complete" and result["success"] is True
    assert result["steps"] == 2
    assert result["usage"]["prompt_tokens"] == 20 and result["usage"]["completion_tokens"] == 10
    saved = json.loads(Path(result["path"]).read_text())
    assert saved["outcome"] == "exit:task_complete"
    cli_record = saved["info"]["components"]["cli"]
    assert cli_record["model"] == "test-model" and cli_record["env"] == "local"
    assert saved["info"]["components"]["V2"]["type"].endswith("LocalEnv")  # not the wrapper
    # the progress lines (stderr is not a terminal): step, command, return code
    assert "step 1 · $ echo hi there · exit 0" in done.stderr
    bodies = chats(server)
    assert len(bodies) == 2
    first = bodies[0]["messages"]
    assert isinstance(first, list) and first[0]["role"] == "system"
    assert "```bash" in first[0]["content"] and first[1]["content"] == "say hi"
    assert all(r.headers.get("authorization") == "Bearer none" for r in server.requests)


def _until_asked(server: LoopbackServer, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 90
    while not chats(server):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never called the model"
        time.sleep(0.05)
    time.sleep(0.2)


@pytest.mark.parametrize(("sig", "code", "reason"), [(signal.SIGINT, 130, "KeyboardInterrupt")])
def test_ctrl_c_saves_and_prints_the_path(
    server: LoopbackServer, tmp_path: Path, sig: signal.Signals, code: int, reason: str
) -> None:
    from tests._server import hang

    server.push(chat("```bash\necho one\n```"), hang())
    process = subprocess.Popen(
        [sys.executable, "-m", "four.cli", "run", "wait", *args(server, tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        while len(chats(server)) < 2:
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        time.sleep(0.2)
        process.send_signal(sig)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == code, err
    line = out.strip().splitlines()[-1]
    assert line.startswith("interrupted · saved "), out
    saved = json.loads(Path(line.removeprefix("interrupted · saved ")).read_text())
    assert saved["outcome"] == f"interrupted: {reason}"
    assert [m["role"] for m in saved["messages"]] == ["system", "user", "assistant", "user"]
    assert "Traceback" not in err


def test_sigterm_is_an_interrupt_too(server: LoopbackServer, tmp_path: Path) -> None:
    from tests._server import hang

    server.push(hang())
    process = subprocess.Popen(
        [sys.executable, "-m", "four.cli", "run", "wait", *args(server, tmp_path), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        _until_asked(server, process)
        process.terminate()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 143, err
    path = Path(out.strip().removeprefix("interrupted · saved "))
    assert json.loads(path.read_text())["outcome"] == "interrupted: Terminated"


# --- in this process -------------------------------------------------------------------


def test_missing_api_key_is_reported_before_the_first_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["run", "x", "--model", "openai/gpt-4o-mini", "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        "four run: error: missing API key for openai/gpt-4o-mini (openai): set OPENAI_API_KEY"
    )
    assert not list(tmp_path.iterdir())  # nothing ran, nothing saved


def test_unknown_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "x", "--model", "no-such-model-anywhere"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'no-such-model-anywhere'" in err and "provider/model" in err


def test_no_model_and_no_key_means_the_local_model(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from four.cli._options import PROVIDER_KEYS

    for key in PROVIDER_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("FOUR_MODELS", str(tmp_path))  # nothing pulled there
    assert main(["run", "x"]) == 2
    assert capsys.readouterr().err == (
        "four run: error: model qwen2.5-coder-1.5b is not pulled yet: run `four model pull "
        "qwen2.5-coder-1.5b` (downloads 1.1 GB); or give --model NAME for a hosted model\n"
    )
    assert not list(tmp_path.iterdir())


def test_no_model_with_a_provider_key_asks_which(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert main(["run", "x"]) == 2
    err = capsys.readouterr().err
    assert "no model: give --model NAME (ANTHROPIC_API_KEY is set), or --local" in err


def test_local_and_model_together_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "x", "--local", "--model", "openai/gpt-4o"]) == 2
    assert "--local and --model: choose one" in capsys.readouterr().err


def test_unreachable_server(capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer() as gone:
        url = gone.url
    assert main(["run", "x", "--model", "m", "--api-base", url]) == 2
    assert f"cannot reach --api-base {url}" in capsys.readouterr().err


def test_a_model_the_server_does_not_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    class Models(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"object": "list", "data": [{"id": "served-model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Models) as httpd:
        Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        status = main(["run", "x", "--model", "other", "--api-base", url, "-o", str(tmp_path)])
        httpd.shutdown()
    assert status == 2
    assert "unknown model 'other' at " in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_quiet_prints_one_line(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(chat("```bash\nexit 3\n```"), chat(SUBMIT))
    assert main(["run", "fail then finish", *args(server, tmp_path), "-q"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert len(out.splitlines()) == 1
    assert out.startswith("exit:task_complete · 2 steps · 30 tokens · ")


def test_tool_calls(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(
        chat(None, [call(command="echo $((6 * 7))")]),
        chat(None, [call(command="echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo 42")]),
    )
    assert main(["run", "compute", *args(server, tmp_path), "--toolcalls", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["submission"] == "42"
    bodies = chats(server)
    assert bodies[0]["tools"] and "bash` tool" in str(bodies[0]["messages"])
    assert "42" in str(bodies[1]["messages"])


def test_steps_exhausted_exits_1(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(chat("```bash\necho a\n```"), chat("```bash\necho b\n```"))
    assert main(["run", "loop", *args(server, tmp_path), "--max-steps", "2", "-q"]) == 1
    assert capsys.readouterr().out.startswith("max_steps_reached · 2 steps")


def test_cost_limit_with_given_prices(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(*(chat(f"```bash\necho {i}\n```") for i in range(5)))
    # 10 prompt + 5 completion tokens a call at $1000/M each: $0.015 a call
    argv = ["run", "x", *args(server, tmp_path), "--prices", "1000,1000", "--cost-limit", "0.02"]
    assert main([*argv, "-q"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("cost_limit_reached: ") and "$0.0300" in out
    assert len(chats(server)) == 2
    assert main(["run", "x", "--model", "m", "--prices", "cheap"]) == 2
    assert "give USD per million prompt and completion tokens" in capsys.readouterr().err


def test_model_error_exits_1(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(error(401, "bad key", "invalid_request_error"))
    assert main(["run", "x", *args(server, tmp_path), "-q"]) == 1
    assert capsys.readouterr().out.startswith("model_error: authentication")


def test_settings_from_the_environment(
    server: LoopbackServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    system = tmp_path / "system.txt"
    system.write_text("You are terse.")
    for name, value in {
        "FOUR_MODEL": "test-model",
        "FOUR_API_BASE": server.url,
        "FOUR_OUTPUT_DIR": str(tmp_path / "env-runs"),
        "FOUR_MAX_STEPS": "1",
        "FOUR_SYSTEM": str(system),
        "FOUR_API_KEY": "sk-local",
    }.items():
        monkeypatch.setenv(name, value)
    server.push(chat("```bash\necho a\n```"))
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("task from stdin"))
    assert main(["run", "-", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["outcome"] == "max_steps_reached"
    assert Path(result["path"]).parent == tmp_path / "env-runs"
    messages = chats(server)[0]["messages"]
    assert isinstance(messages, list)
    assert (
        messages[0]["content"] == "You are terse." and messages[1]["content"] == "task from stdin"
    )
    assert all(r.headers.get("authorization") == "Bearer sk-local" for r in server.requests)


def test_bad_settings_are_usage_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FOUR_MODEL", "m")
    monkeypatch.setenv("FOUR_MAX_STEPS", "lots")
    assert main(["run", "x"]) == 2
    assert "FOUR_MAX_STEPS='lots' is not an integer" in capsys.readouterr().err
    monkeypatch.delenv("FOUR_MAX_STEPS")
    assert main(["run", "x", "--system", "/no/such/file"]) == 2
    assert "--system: cannot read /no/such/file" in capsys.readouterr().err
    assert main(["run", "x", "--env", "docker"]) == 2
    assert "needs an image" in capsys.readouterr().err


def test_the_verified_loop(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(chat(SUBMIT), chat("```bash\ntouch ok.txt\n```"), chat(SUBMIT))
    argv = ["run", "make ok.txt", *args(server, tmp_path), "--check", "test -f ok.txt", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["outcome"] == "accepted" and result["steps"] == 3
    assert "not accepted" in str(chats(server)[1]["messages"])
    assert main(["audit", result["path"]]) == 0
    assert capsys.readouterr().out.startswith("valid: ")


def test_keygen_then_a_signed_verified_run_audited_with_the_public_key(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "signing.pem"
    assert main(["keygen", str(key)]) == 0
    shown = capsys.readouterr().out
    assert f"public key:  {key}.pub" in shown and "signer:" in shown
    assert main(["keygen", str(key)]) == 2  # never over an existing key
    assert "exists" in capsys.readouterr().err
    server.push(chat("```bash\ntouch ok.txt\n```"), chat(SUBMIT))
    argv = [*args(server, tmp_path), "--check", "test -f ok.txt", "--sign", str(key), "--json"]
    assert main(["run", "make ok.txt", *argv]) == 0
    path = json.loads(capsys.readouterr().out)["path"]
    assert main(["audit", path, "--public-key", f"{key}.pub"]) == 0
    assert f"signed by the given key {shown.split()[-1]}" in capsys.readouterr().out
    assert main(["keygen", str(tmp_path / "other.pem")]) == 0
    capsys.readouterr()
    assert main(["audit", path, "--public-key", str(tmp_path / "other.pem.pub")]) == 1
    assert "not by the given key" in capsys.readouterr().out
    assert main(["run", "x", *args(server, tmp_path), "--sign", str(tmp_path / "none")]) == 2
    assert "--sign: cannot read the signing key" in capsys.readouterr().err


def test_run_timeout(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(chat("```bash\nsleep 0.6\n```"), chat("```bash\necho never\n```"))
    assert main(["run", "slow", *args(server, tmp_path), "--timeout", "0.3", "-q"]) == 1
    assert capsys.readouterr().out.startswith("time_limit_reached: ")
    assert len(chats(server)) == 1


def test_command_timeout_is_an_observation(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(chat("```bash\nsleep 5\n```"), chat(SUBMIT))
    argv = ["run", "x", *args(server, tmp_path), "--command-timeout", "0.5"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "$ sleep 5 · exit 124" in err


def test_persistent_shell_keeps_state(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(
        chat("```bash\nexport GREETING=kept && mkdir -p sub && cd sub\n```"),
        chat("```bash\necho $GREETING from $(basename $PWD)\n```"),
        chat(SUBMIT),
    )
    assert main(["run", "x", *args(server, tmp_path), "--env", "persistent", "--json"]) == 0
    assert "kept from sub" in str(chats(server)[2]["messages"])
    saved = json.loads(Path(json.loads(capsys.readouterr().out)["path"]).read_text())
    assert saved["info"]["components"]["cli"]["env"] == "persistent"


def test_sandbox_env(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    if not shutil.which("bwrap"):
        if os.environ.get("FOUR_REQUIRE_SERVICES"):
            pytest.fail("bubblewrap is not installed")
        pytest.skip("bubblewrap is not installed")
    server.push(chat("```bash\ntouch /usr/x 2>/dev/null || echo read-only\n```"), chat(SUBMIT))
    argv = ["run", "x", "--model", "test-model", "--api-base", server.url, "--env", "sandbox"]
    assert main([*argv, "-o", str(tmp_path), "-q"]) == 0
    assert "read-only" in str(chats(server)[1]["messages"])


def test_docker_env(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    from tests.execute.conftest import TEST_IMAGE, docker_problem, need

    need(docker_problem())
    server.push(chat("```bash\ncat /etc/hostname; echo in-container\n```"), chat(SUBMIT))
    argv = ["run", "x", "--model", "test-model", "--api-base", server.url, "--env", "docker"]
    assert main([*argv, "--image", TEST_IMAGE, "-o", str(tmp_path), "-q"]) == 0
    assert "in-container" in str(chats(server)[1]["messages"])
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=four.env={os.getpid()}"],
        capture_output=True,
        text=True,
    ).stdout.split()
    assert left == []  # the run removed its container (ours are labelled with our pid)


def test_local_with_toolcalls_or_a_file_that_is_no_model(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert main(["run", "x", "--local", "--toolcalls"]) == 2
    assert "--local runs in text mode: drop --toolcalls" in capsys.readouterr().err
    notes = tmp_path / "notes.txt"
    notes.write_text("not a model")
    monkeypatch.setenv("FOUR_LOCAL", str(notes))
    assert main(["run", "x"]) == 2
    assert f"{notes} is not a GGUF file (no GGUF header)" in capsys.readouterr().err


def test_the_workspace_is_shown_to_the_model_when_asked(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "sales.csv").write_text("region,amount\nnorth,120\n")
    (work / "runs").mkdir()
    (work / "runs" / "earlier.json").write_text("{}")
    inside = ["-o", str(work / "runs"), "--output-in-workspace"]
    server.push(chat(SUBMIT), chat(SUBMIT))
    assert main(["run", "sum it", *args(server, tmp_path), "-q"]) == 0  # hosted: not by default
    assert main(["run", "sum it", *args(server, tmp_path, "--preview", *inside), "-q"]) == 0
    plain, shown = (body["messages"][0]["content"] for body in chats(server))  # type: ignore[index]
    assert "sales.csv" not in plain
    assert shown.endswith(
        "The working folder, when the task began:\n"
        "sales.csv (24 bytes, 2 lines):\n  region,amount\n  north,120"
    )  # the run's own output folder inside the workspace is not shown


def test_the_local_model_is_shown_the_workspace_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from four.cli import build_parser
    from four.cli._options import options

    def preview(*argv: str) -> bool:
        return options(build_parser().parse_args(["run", "x", *argv]), tty=False).preview

    assert preview("--local") and not preview("--local", "--no-preview")
    assert not preview("--model", "m") and preview("--model", "m", "--preview")
    monkeypatch.setenv("FOUR_PREVIEW", "0")
    assert not preview("--local") and preview("--local", "--preview")
