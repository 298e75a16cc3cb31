"""local_env's launcher: one process per environment that starts its commands, tried
against the real thing. Its death ends every command it runs, closing the environment
ends it, and commands of one environment may run at once."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import threading
import time

from returns.result import Success

from four import Action
from four.execute import Limits, alocal_env, local_env
from tests.execute.conftest import alive
from tests.execute.test_containment import escapes, gone, observe


def launchers() -> list[int]:
    """The launcher processes descended from this one."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if b"_spawner.py" not in f.read():
                    continue
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in (b"Z", b"X") and _descends(int(name)):
            found.append(int(name))
    return found


def _descends(pid: int) -> bool:
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except OSError:
            return False
        if pid == os.getpid():
            return True
    return False


def test_the_launcher_killed_ends_every_command_it_runs_and_a_new_one_starts() -> None:
    token = f"four-{secrets.token_hex(6)}"
    env = local_env(timeout=60)
    try:
        observe(env, "true")
        results: list[object] = []
        command = escapes(token) + 'bash -c "exec -a $t-inflight sleep 60" & wait'
        runner = threading.Thread(target=lambda: results.append(env(Action(command))))
        runner.start()
        deadline = time.monotonic() + 30
        while len(alive(f"{token}-")) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(alive(f"{token}-")) == 6  # all started, the command in flight
        for pid in launchers():
            os.kill(pid, signal.SIGKILL)
        runner.join(10)
        assert not runner.is_alive()  # the command ended with its launcher
        assert isinstance(results[0], Success) and results[0].unwrap().returncode == -9
        assert gone(f"{token}-") == []
        assert observe(env, "echo again").content.splitlines()[2] == "again"
    finally:
        env.close()


def test_a_command_after_one_killed_past_its_memory_limit_always_starts() -> None:
    """Past the memory limit the kernel now and then kills the launcher with the command's
    shell, before the process that started it ends: the next command starts on a new
    launcher, never sent to the dead one ("Connection reset by peer"). It happens in about
    one command in ten here, so forty are tried."""
    fill = "head -c 40000000 /dev/zero | tr '\\0' x"
    for _ in range(40):
        env = local_env(timeout=10, limits=Limits(processes=40, memory=16 << 20))
        try:
            for command in (f"{fill} | (v=$(cat); echo ${{#v}})", f"a=$({fill}); echo ${{#a}}"):
                killed = observe(env, command)
                assert killed.returncode in (-9, 137), killed.content
            assert observe(env, "echo after").content.splitlines()[2] == "after"
        finally:
            env.close()


def test_close_ends_the_launcher_and_the_environment_still_works_after() -> None:
    env = local_env()
    observe(env, "true")
    assert launchers()
    env.close()
    deadline = time.monotonic() + 2
    while launchers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert launchers() == []
    assert observe(env, "echo back").content.splitlines()[2] == "back"
    env.close()


def test_commands_of_one_environment_run_at_once_and_leave_nothing() -> None:
    token = f"four-{secrets.token_hex(6)}"
    env = local_env(timeout=30)
    try:
        results: dict[int, object] = {}

        def one(i: int) -> None:
            command = f"(exec -a {token}-{i} sleep 60 &); sleep 0.5; echo done {i}"
            results[i] = env(Action(command))

        threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert time.monotonic() - started < 1.4  # at once, not one after another
        for i in range(3):
            result = results[i]
            assert isinstance(result, Success) and f"done {i}" in result.unwrap().content
        assert gone(f"{token}-") == []
    finally:
        env.close()


def test_alocal_env_closes_its_launcher() -> None:
    async def main() -> str:
        env = alocal_env()
        try:
            result = await env(Action("echo async"))
            assert launchers()
            return result.unwrap().content.splitlines()[2]
        finally:
            await env.aclose()

    assert asyncio.run(main()) == "async"
    deadline = time.monotonic() + 2
    while launchers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert launchers() == []
