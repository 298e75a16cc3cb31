"""A domain's tools, started by the run's environment (``ToolHost``) as its commands are,
in each environment against the real thing: the environment given and nothing else,
outputs read apart and bounded, a timeout or an interrupt kills all a tool started."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from four.execute._interrupt import interrupt, interruptible
from four.execute._tools import ToolHost, tool_host
from tests.execute.conftest import TEST_IMAGE, alive, need_service


@pytest.fixture(params=["local", "sandbox", "docker"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ToolHost]:
    kind: str = request.param
    need_service(kind)
    with tool_host(kind, tmp_path, timeout=30, image=TEST_IMAGE) as made:
        yield made
    assert not Path(made.folder).exists()  # the shared folder goes with the host


def test_a_tool_gets_the_environment_it_is_given_and_no_secret(
    host: ToolHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-{token}")
    # Bash builtins only: a grep would carry the value in its own command line.
    script = r"""p="sk-$1$2"; n=0
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
  while IFS= read -r -d '' v || [ -n "$v" ]; do [[ "$v" == *"$p"* ]] && n=$((n+1)); done < "$f"
done 2>/dev/null
echo "$n given=$GIVEN"; pwd"""
    halves = [token[:8], token[8:]]
    done = host.run(
        ["bash", "-c", script, "probe", *halves],
        env=host.environment({"GIVEN": "yes"}),
        timeout=120,
    )
    assert done.returncode == 0, done
    assert done.stdout.decode().split() == ["0", "given=yes", host.workspace]


def test_stdout_and_stderr_are_read_apart_and_bounded(host: ToolHost) -> None:
    script = "head -c 3000000 /dev/zero | tr '\\0' o; echo err >&2; exit 3"
    done = host.run(["bash", "-c", script], timeout=120, limit=1000)
    assert (done.returncode, done.stdout, done.stderr) == (3, b"o" * 1000, b"err\n")


def test_a_tool_past_its_timeout_is_killed_with_all_it_started(host: ToolHost) -> None:
    tag = secrets.token_hex(3)
    script = f"(setsid sleep 300.{tag}1 &); (env -i setsid nohup sleep 300.{tag}2 &); sleep 300"
    began = time.monotonic()
    done = host.run(["bash", "-c", script], timeout=2)
    assert done.timed_out and done.returncode is None and time.monotonic() - began < 60
    deadline = time.monotonic() + 10
    while alive(f"300.{tag}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(f"300.{tag}") == []


def test_an_interrupt_stops_a_running_tool_and_any_later_one(host: ToolHost) -> None:
    """What a supervisor (four batch's time limit) and four run --timeout do."""
    key = object()
    seen = []
    with interruptible(key):
        threading.Timer(1.0, interrupt, (key,)).start()
        began = time.monotonic()
        seen.append(host.run(["sleep", "300"], timeout=600))
        seen.append(host.run(["true"], timeout=600))
    assert time.monotonic() - began < 60
    assert all(done.stopped and done.returncode is None for done in seen), seen


def test_a_missing_program_says_so(host: ToolHost) -> None:
    if host.kind == "local":  # looked up here first, as Popen would
        with pytest.raises(FileNotFoundError):
            host.run(["no-such-program-here"], timeout=30)
        return
    done = host.run(["no-such-program-here"], timeout=30)  # looked up inside
    assert done.returncode not in (0, None) and b"no-such-program-here" in done.stderr


def test_an_unknown_kind_or_docker_without_an_image_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown environment 'persistent'"):
        tool_host("persistent", tmp_path)
    with pytest.raises(ValueError, match="--env docker needs an image"):
        tool_host("docker", tmp_path)
