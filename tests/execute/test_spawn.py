"""posix_spawn against Popen: a command sees the same process, and fails the same way."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from returns.result import Failure

from four import Action
from four.execute import LocalEnv, _spawn, local_env
from four.execute._spawn import Spawned, spawn

# Its own process as a command sees it: descriptors, session, signals, folder, environment.
PROBE = (
    'for fd in /proc/$$/fd/*; do echo "fd ${fd##*/} $(readlink "$fd" | sed "s/:\\[.*//")"; done\n'
    "read -r -a stat < /proc/$$/stat\n"
    'echo "leads its session: $(( stat[5] == $$ )), its group: $(( stat[4] == $$ ))"\n'
    # Read by bash itself: a grep would read bash's mask while bash may be forking it
    # (it blocks SIGINT, SIGTERM and SIGCHLD around a fork): the two probes differed now and then.
    'while read -r line; do case $line in SigIgn*|SigBlk*) echo "$line";; esac; done'
    " < /proc/$$/status\n"
    "pwd\n"
    "env | grep -v '^_=' | sort\n"
    "echo from stderr >&2\n"
    "cat; echo stdin $?\n"
)

needs_spawn = pytest.mark.skipif(_spawn._GLIBC is None, reason="no glibc posix_spawn here")


def probe(env: LocalEnv, monkeypatch: pytest.MonkeyPatch, *, popen: bool) -> str:
    with monkeypatch.context() as m:
        if popen:
            m.setattr(_spawn, "_GLIBC", None)
        content = env(Action(PROBE)).unwrap().content
    return re.sub(r"FOUR_RUN=\w+", "FOUR_RUN=?", content)


@needs_spawn
def test_a_spawned_command_sees_what_a_popen_one_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = os.open(tmp_path / "held", os.O_CREAT | os.O_WRONLY)
    os.set_inheritable(held, True)  # Popen's close_fds closes even inheritable ones
    try:
        env = local_env(cwd=str(tmp_path), env={"FOUR_PROBE": "1"})
        spawned = probe(env, monkeypatch, popen=False)
        assert spawned == probe(env, monkeypatch, popen=True)
    finally:
        os.close(held)
    fds = re.findall(r"^fd (\d+) (.*)$", spawned, re.MULTILINE)
    assert fds[:3] == [("0", "/dev/null"), ("1", "pipe"), ("2", "pipe")], spawned
    assert all(target == "pipe" for _, target in fds[3:]), spawned  # the probe's own $(...)
    assert "leads its session: 1, its group: 1" in spawned
    ignored = int(re.findall(r"SigIgn:\s*(\w+)", spawned)[0], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))  # ignored by Python, not by commands
    assert f"\n{tmp_path}\n" in spawned and "FOUR_PROBE=1" in spawned
    assert "from stderr" in spawned and "stdin 0" in spawned


@needs_spawn
def test_spawn_starts_the_process_and_reaps_it() -> None:
    read, write = os.pipe()
    try:
        done = spawn("/bin/sh", ["sh", "-c", "echo hi"], None, write, None)
        killed = spawn("/bin/sh", ["sh", "-c", "kill -TERM $$"], {}, write, None)
    finally:
        os.close(write)
    try:
        assert isinstance(done, Spawned) and isinstance(killed, Spawned)
        assert done.wait() == 0 and done.wait() == 0
        assert killed.wait() == -signal.SIGTERM
        assert os.read(read, 100) == b"hi\n"
    finally:
        os.close(read)


def test_what_spawn_leaves_to_popen() -> None:
    read, write = os.pipe()
    try:
        for env in ({"A=B": "1"}, {"A": "x\0y"}):
            assert spawn("/bin/sh", ["sh", "-c", "true"], env, write, None) is None
        assert spawn("/bin/sh", ["sh", "-c", "true\0"], {}, write, None) is None
        assert spawn("/bin/sh", ["sh", "-c", "true"], {}, 2, None) is None  # a std descriptor
        assert spawn("/nonexistent/sh", ["sh"], {}, write, None) is None  # could not start
        assert spawn("/bin/sh", ["sh"], {}, write, "/nonexistent") is None
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize("popen", [False, True])
def test_failures_read_as_popen_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, popen: bool
) -> None:
    if popen:
        monkeypatch.setattr(_spawn, "_GLIBC", None)
    gone = tmp_path / "gone"
    result = local_env(cwd=str(gone))(Action("true"))
    assert isinstance(result, Failure)
    assert (
        result.failure().message
        == f"cannot start bash: [Errno 2] No such file or directory: {str(gone)!r}"
    )
    result = LocalEnv(shell=str(tmp_path / "bash"))(Action("true"))
    assert isinstance(result, Failure)
    where = str(tmp_path / "bash")
    assert (
        result.failure().message
        == f"cannot start {where}: [Errno 2] No such file or directory: {where!r}"
    )
    with pytest.raises(ValueError, match="illegal environment variable name"):
        local_env(env={"A=B": "1"})(Action("true"))
    for env in ({"A": "x\0y"}, {"A\0": "1"}):
        with pytest.raises(ValueError, match="embedded null byte"):
            local_env(env=env)(Action("true"))


def test_a_command_that_cannot_be_watched_is_not_left_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_descriptor(pid: int, flags: int = 0) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(os, "pidfd_open", no_descriptor)
    token = f"FOUR_PROBE={secrets.token_hex(8)}".encode()
    result = local_env(env={"FOUR_PROBE": token[11:].decode()})(Action("sleep 30"))
    assert isinstance(result, Failure) and "Too many open files" in result.failure().message
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as f:
            if token in f.read().split(b"\0"):
                alive.append(pid)
    assert alive == []


def _seen(env: LocalEnv, name: str) -> str:
    content = env(Action(f'printf "%s|" "${name}"; env | grep -c "^{name}="')).unwrap().content
    return content.splitlines()[2]


@needs_spawn
def test_a_kept_environment_is_not_reused_once_the_variables_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The encoded environment is kept by its variables: a changed one is a new key.
    monkeypatch.setenv("LC_FOUR_KEPT", "one")
    env = local_env()
    assert _seen(env, "LC_FOUR_KEPT") == "one|1"
    assert _seen(env, "LC_FOUR_KEPT") == "one|1"
    monkeypatch.setenv("LC_FOUR_KEPT", "two")
    assert _seen(env, "LC_FOUR_KEPT") == "two|1"
    assert _seen(local_env(env={"LC_FOUR_KEPT": "three"}), "LC_FOUR_KEPT") == "three|1"
    monkeypatch.delenv("LC_FOUR_KEPT")
    assert _seen(env, "LC_FOUR_KEPT") == "|0"


@pytest.mark.parametrize("popen", [False, True])
def test_the_mark_replaces_a_four_run_given_in_env(
    monkeypatch: pytest.MonkeyPatch, popen: bool
) -> None:
    if popen:
        monkeypatch.setattr(_spawn, "_GLIBC", None)
    seen = _seen(local_env(env={"FOUR_RUN": "mine"}), "FOUR_RUN")
    value, count = seen.split("|")
    assert count == "1" and re.fullmatch(r"[0-9a-f]{16}", value), seen


@needs_spawn
def test_spawn_adds_the_extra_variable_after_env() -> None:
    read, write = os.pipe()
    try:
        args = ["sh", "-c", "env | grep '^FOUR_T' | sort"]
        done = spawn("/bin/sh", args, {"FOUR_TA": "1"}, write, None, ("FOUR_TB", "2"))
        assert isinstance(done, Spawned) and done.wait() == 0
        refused = spawn("/bin/sh", args, {"FOUR_TA": "1"}, write, None, ("FOUR=TB", "2"))
        assert refused is None  # a "=" in a name: Popen's error
        inherited = spawn("/bin/sh", args, None, write, None, ("FOUR_TC", "3"))
        assert isinstance(inherited, Spawned) and inherited.wait() == 0
    finally:
        os.close(write)
    try:
        output = b""
        while chunk := os.read(read, 1000):
            output += chunk
        assert output.startswith(b"FOUR_TA=1\nFOUR_TB=2\n") and b"FOUR_TC=3\n" in output
    finally:
        os.close(read)


@needs_spawn
def test_file_actions_are_kept_per_output_and_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each (descriptor, folder) gets its own; past the bound each command makes its own.
    for bound in (_spawn._MAX_ACTIONS, 0):
        monkeypatch.setattr(_spawn, "_MAX_ACTIONS", bound)
        monkeypatch.setattr(_spawn, "_ACTIONS", {})
        for folder in (tmp_path, tmp_path / "a", tmp_path, None):
            (tmp_path / "a").mkdir(exist_ok=True)
            content = local_env(cwd=None if folder is None else str(folder))(Action("pwd"))
            where = content.unwrap().content.splitlines()[2]
            assert where == (os.getcwd() if folder is None else str(folder))
        kept = {folder for _, folder in _spawn._ACTIONS}
        folders = {os.fsencode(tmp_path), os.fsencode(tmp_path / "a"), None}
        assert kept == (set() if bound == 0 else folders)


@needs_spawn
def test_audit_hooks_see_the_command_and_its_whole_environment() -> None:
    # In a fresh interpreter: an audit hook cannot be removed once added.
    script = (
        "import sys\n"
        "from four import Action, local_env\n"
        "seen = []\n"
        "sys.addaudithook(lambda e, a: seen.append(a) if e == 'subprocess.Popen' else None)\n"
        "local_env(env={'FOUR_PROBE': '1'})(Action('true'))\n"
        "executable, args, cwd, env = seen[0]\n"
        "print(executable.endswith('bash'), args[1:], cwd, env['FOUR_PROBE'], list(env)[-1])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == "True ['-c', 'true'] None 1 FOUR_RUN\n", done.stderr
