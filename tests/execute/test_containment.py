"""Containment, tried as a hostile command would, in every environment against the real thing.

A command sees no secret of the process that runs it (not in its environment, not in any
/proc/*/environ or /proc/*/cmdline it can read, not through an inherited descriptor);
nothing it starts outlives its timeout, the environment's ``close()``, or the driver
killed with SIGKILL, however it detached; and it runs under resource limits.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

from four import Action, Observation
from four.execute import Limits, docker_env, local_env, sandbox_env, shell_env
from tests.execute.conftest import (
    ENVS,
    TEST_IMAGE,
    Env,
    alive,
    need_service,
)

ROOT = Path(__file__).resolve().parents[2]

# Reads every /proc/*/environ and /proc/*/cmdline it can with bash builtins only (a grep
# would carry the value in its own command line) and says where the value "$1$2" is.
PROBE = r"""p="$1$2"; n=0
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
  [ -r "$f" ] || continue
  n=$((n+1))
  while IFS= read -r -d '' v || [ -n "$v" ]; do
    [[ "$v" == *"$p"* ]] && echo "LEAK $f"
  done < "$f"
done 2>/dev/null
env | while IFS= read -r v; do [[ "$v" == *"$p"* ]] && echo "LEAK env"; done
echo "read $n"
fds=""; for f in /proc/$$/fd/*; do [ -e "$f" ] && fds+=" ${f##*/}"; done  # not the glob's own
echo "fds$fds"
"""


def _make(kind: str, **settings: Any) -> Env:
    """An environment of ``kind``; docker gets a container of its own (not a shared one)."""
    env: Env
    if kind == "local":
        env = local_env(**settings)
    elif kind == "shell":
        env = shell_env(**settings)
    elif kind == "sandbox":
        env = sandbox_env(**settings)
    else:
        env = docker_env(TEST_IMAGE, **settings)
    return env


@pytest.fixture(params=ENVS)
def kind(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    need_service(name)
    return name


@pytest.fixture
def made(kind: str) -> Iterator[list[Env]]:
    envs: list[Env] = []
    yield envs
    for env in envs:
        close = getattr(env, "close", None)
        if close is not None:
            close()


def observe(env: Env, command: str) -> Observation:
    result = env(Action(command))
    assert isinstance(result, Success), result
    observation: Observation = result.unwrap()
    return observation


def gone(token: str, within: float = 2.0) -> list[int]:
    """The processes holding ``token`` still alive after ``within`` seconds (or fewer)."""
    deadline = time.monotonic() + within
    while alive(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(token)


def escapes(token: str) -> str:
    """Background processes that detach every way we know, named ``token-...`` once they
    run (only then: no command line of the command itself holds ``token-``)."""
    return (
        f"t={token}; unset FOUR_RUN\n"
        'setsid bash -c "exec -a $t-setsid sleep 60" >/dev/null 2>&1 &\n'
        'env -i setsid bash -c "exec -a $t-env-i sleep 60" >/dev/null 2>&1 &\n'
        'nohup bash -c "exec -a $t-nohup sleep 60" >/dev/null 2>&1 &\n'
        "( ( exec -a $t-double sleep 60 >/dev/null 2>&1 & ) & )\n"
        'bash -c "exec -a $t-disowned sleep 60" >/dev/null 2>&1 & disown\n'
    )


def driver(kind: str, command: str, *argv: str, env: dict[str, str] | None = None) -> list[str]:
    """A Python process that runs ``command`` in an environment of ``kind``, as `four run` would."""
    code = (
        "import sys\n"
        "from four import Action\n"
        "from tests.execute.test_containment import _make\n"
        f"env = _make({kind!r}, timeout=60)\n"
        f"print(env(Action({command!r})).unwrap().content, flush=True)\n"
        "getattr(env, 'close', lambda: None)()\n"
    )
    return [sys.executable, "-c", code, *argv]


def test_no_secret_of_the_driver_is_readable(kind: str) -> None:
    # Planted in the driver's own environment and command line, where `four run` has them.
    value = f"sk-four-{secrets.token_hex(8)}"
    host = {**os.environ, "OPENAI_API_KEY": value, "FOUR_TEST_TOKEN": value}
    host["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src")])
    done = subprocess.run(
        driver(
            kind,
            f"bash -c {shlex.quote(PROBE)} probe {value[:8]} {value[8:]}",
            f"--api-key={value}",
        ),
        capture_output=True,
        text=True,
        timeout=120,
        env=host,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "LEAK" not in done.stdout, done.stdout
    count = int(done.stdout.split("read ")[1].split()[0])
    assert count >= 2  # it read its own at least: the probe works
    fds = set(done.stdout.split("fds ")[1].split("\n")[0].split())
    assert fds <= {"0", "1", "2", "255"}, fds  # nothing inherited but stdin, out, err


def test_nothing_outlives_a_timeout(kind: str, made: list[Env]) -> None:
    token = f"four-{secrets.token_hex(6)}"
    env = _make(kind, timeout=2.0)
    made.append(env)
    observation = observe(env, escapes(token) + "sleep 30\n")
    assert observation.timed_out
    assert gone(f"{token}-") == []


def test_nothing_outlives_close(kind: str) -> None:
    token = f"four-{secrets.token_hex(6)}"
    env = _make(kind, timeout=20.0)
    try:
        observe(env, escapes(token) + "echo started")
    finally:
        close = getattr(env, "close", None)
        if close is not None:
            close()
    assert gone(f"{token}-") == []


def test_nothing_outlives_the_driver_killed_with_sigkill(kind: str) -> None:
    token = f"four-{secrets.token_hex(6)}"
    command = escapes(token) + 'bash -c "exec -a $t-inflight sleep 60" & echo; wait'
    host = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    proc = subprocess.Popen(
        driver(kind, command), env=host, cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while len(alive(f"{token}-")) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(alive(f"{token}-")) == 6  # all started, the command in flight
        folders = _private_folders(proc.pid)
        assert bool(folders) == (kind == "shell")  # a shell's own files, in a folder
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert gone(f"{token}-", within=2.0) == []
        deadline = time.monotonic() + 5
        while _private_folders(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _private_folders(proc.pid) == []  # the last command and its variables too
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in alive(f"{token}-"):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _private_folders(pid: int) -> list[Path]:
    """The folders of the shells of process ``pid`` (in memory, else the temp folder)."""
    return [
        p
        for parent in {Path("/dev/shm"), Path(tempfile.gettempdir())}
        for p in parent.glob(f"four-shell-{pid}-*")
    ]


LIMITS = Limits(processes=40, file_size=1 << 20, memory=16 << 20)


def test_limits_bound_processes_file_size_and_memory(
    kind: str, made: list[Env], tmp_path: Path
) -> None:
    token = f"four-{secrets.token_hex(6)}"
    env = _make(kind, timeout=3.0, limits=LIMITS)
    made.append(env)
    observe(env, "true")  # a container is started first
    # 500 background sleeps: bash waits and retries a fork refused, so the command times
    # out; meanwhile no more than the limit exist.
    counted: list[int] = []

    def count() -> None:
        time.sleep(2.0)
        counted.append(len(alive(f"{token}-")))

    counter = threading.Thread(target=count)
    counter.start()
    command = f't={token}; for i in $(seq 500); do bash -c "exec -a $t-$i sleep 60" & done'
    forks = observe(env, command)
    counter.join()
    assert LIMITS.processes is not None and 0 < counted[0] < LIMITS.processes, counted
    assert "retry: Resource temporarily unavailable" in forks.content or forks.timed_out
    assert gone(f"{token}-") == []
    written = observe(env, "f=/tmp/four-big-$$; head -c 3000000 /dev/zero > $f; wc -c < $f; rm $f")
    assert "File size limit exceeded" in written.content, written.content
    assert "\n1048576\n" in written.content, written.content
    if kind == "docker":  # the kernel's first choice past the limit: the command, not init
        adjusted = observe(env, "cat /proc/self/oom_score_adj /proc/1/oom_score_adj")
        assert "<output>\n1000\n0\n</output>" in adjusted.content, adjusted.content
    # A subshell that holds 40 MB: the kernel kills it, the command goes on. The command's
    # shell (local's, or a persistent one) is its subshell's parent, so nothing can make it
    # the kernel's last choice: now and then the kernel kills the shell itself, and that is
    # said in four's words.
    filled = observe(env, "head -c 40000000 /dev/zero | tr '\\0' x | (v=$(cat); echo kept ${#v})")
    if kind in ("local", "shell") and filled.returncode == -9:
        assert "killed (SIGKILL)" in filled.content and "unshare" not in filled.content
    else:
        assert filled.returncode == 137 and "kept 40" not in filled.content, filled.content
    if kind in ("local", "shell"):  # the command's own shell killed: said so, not unshare's words
        killed = observe(env, "a=$(head -c 40000000 /dev/zero | tr '\\0' x); echo ${#a}")
        assert killed.returncode == -9 and "killed (SIGKILL)" in killed.content, killed.content
        assert "unshare" not in killed.content, killed.content
        assert observe(env, "echo after").content.endswith("<output>\nafter\n</output>")


def test_limits_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="processes"):
        Limits(processes=0)
    with pytest.raises(ValueError, match="memory"):
        Limits(memory=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="limits"):
        local_env(limits=100)  # type: ignore[call-overload]


def test_without_a_namespace_commands_still_run_and_a_warning_says_what_is_weaker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from four.execute import _contain

    monkeypatch.setattr(_contain, "_namespace_flags", lambda: None)
    _contain.containment.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="no PID namespace can be made here"):
            weaker = _contain.containment()
        assert not weaker.namespace and weaker.notes
        # The weaker guarantee still holds: a timeout kills what kept the mark.
        token = f"four-{secrets.token_hex(6)}"
        command = f't={token}; setsid bash -c "exec -a $t-setsid sleep 60" & sleep 30'
        observation = observe(local_env(timeout=1.0), command)
        assert observation.timed_out and gone(f"{token}-") == []
        assert observe(local_env(), "echo $$").content.splitlines()[2] != "1"  # no namespace
    finally:
        _contain.containment.cache_clear()
