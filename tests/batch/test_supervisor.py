"""The supervisor: wall-clock limits and the stall watchdog end runs as values, kill
their commands (in every environment) and keep their trajectories."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from four import Action
from four._outcomes import Stalled, TimeLimitReached
from four.batch import Item, RunContext, run_many
from four.batch._supervisor import Supervisor
from four.execute import local_env, shell_env
from four.execute._interrupt import interrupt, interruptible
from four.trajectory import load_trajectory
from tests.batch._agents import alive, bash, scripted_run
from tests.execute.conftest import (
    TEST_IMAGE,
    bwrap_problem,
    containers_left,
    docker_problem,
    need,
)


def _token() -> str:
    return f"four-batch-{os.getpid()}-{time.monotonic_ns()}"


def _env_factory(kind: str) -> Callable[[], object]:
    if kind == "local":
        return lambda: local_env(timeout=60)
    if kind == "shell":
        return lambda: shell_env(timeout=60)
    if kind == "sandbox":
        need(bwrap_problem())
        from four.execute import sandbox_env

        return lambda: sandbox_env(timeout=60)
    need(docker_problem())
    from four.execute import docker_env

    return lambda: docker_env(TEST_IMAGE, timeout=60)


@pytest.mark.parametrize("kind", ["local", "shell", "sandbox", "docker"])
def test_a_stalled_command_is_killed_and_the_run_ends_stalled(tmp_path: Path, kind: str) -> None:
    token = _token()
    make_run = scripted_run(
        [bash("echo starting"), bash(f"sleep 60 && echo {token}"), bash("echo never")],
        env=_env_factory(kind),
    )
    # A container's start (the first command's) must not count as a stall itself: on a
    # loaded 2-core machine it took over 5 s.
    stall = 15.0 if kind == "docker" else 1.0
    start = time.monotonic()
    (result,) = run_many(make_run, [Item("slow", "t")], tmp_path, stall_timeout=stall)
    took = time.monotonic() - start
    assert result.outcome == f"stalled: no model call or command finished for {stall:g} s"
    assert result.tag == "stalled" and result.final and not result.submitted
    assert took < stall + 20, took
    assert result.trajectory is not None
    saved = load_trajectory(result.trajectory)
    assert saved.outcome == result.outcome
    assert "never" not in str([m.content for m in saved.messages[3:]])
    assert result.steps == 2
    assert alive(token) == []
    if kind == "docker":
        assert containers_left() == []


def test_a_run_past_its_time_limit_ends_with_time_limit_reached(tmp_path: Path) -> None:
    make_run = scripted_run([bash("sleep 0.2")], max_steps=1000)
    start = time.monotonic()
    (result,) = run_many(make_run, [Item("loop")], tmp_path, time_limit=1.0, stall_timeout=5)
    assert result.outcome == "time_limit_reached: the run's wall-clock limit of 1 s"
    assert 1.0 <= time.monotonic() - start < 5
    assert 2 <= result.steps <= 8


def test_a_stall_inside_a_model_call_ends_the_run_before_its_command(tmp_path: Path) -> None:
    token = _token()
    make_run = scripted_run([bash(f"echo {token} > {tmp_path}/ran")], delay=1.5)
    (result,) = run_many(make_run, [Item("slow-model")], tmp_path / "out", stall_timeout=0.5)
    assert result.tag == "stalled"
    assert result.steps == 1  # the model answered, but its command never ran
    assert not (tmp_path / "ran").exists()


def test_runs_that_keep_beating_are_left_alone(tmp_path: Path) -> None:
    make_run = scripted_run(
        [bash("sleep 0.3"), bash("sleep 0.3"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
    )
    results = run_many(make_run, [Item(f"r{i}") for i in range(4)], tmp_path, stall_timeout=0.8)
    assert [r.outcome for r in results] == ["exit:task_complete"] * 4


def test_the_watchdog_checks_every_run_against_its_clocks() -> None:
    killed: list[str] = []
    supervisor = Supervisor(time_limit=10, stall_timeout=2, killer=killed.append)
    try:
        a, b, c = supervisor.open("a"), supervisor.open("b"), supervisor.open("c")
        now = a.started
        b.last = now + 5  # beat recently
        c.started = now - 20
        assert supervisor.check(now + 1) == ["c"]
        assert supervisor.check(now + 3) == ["a"]
        assert supervisor.check(now + 3) == []
        assert a.stopped() == Stalled("no model call or command finished for 2 s")
        assert c.stopped() == TimeLimitReached("the run's wall-clock limit of 10 s")
        assert b.stopped() is None and not a.by_batch
        deadline = time.monotonic() + 5
        while len(killed) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sorted(killed) == ["a", "c"]
        with pytest.raises(ValueError, match="already watched"):
            supervisor.open("b")
    finally:
        supervisor.close()
    with pytest.raises(ValueError, match="positive"):
        Supervisor(stall_timeout=0)


def test_interrupt_kills_only_the_commands_of_its_key_and_those_started_later() -> None:
    env = local_env(timeout=60)
    token = _token()
    done: dict[str, object] = {}

    def work(key: str, command: str) -> None:
        with interruptible(key):
            done[key] = env(Action(command)).unwrap().returncode
            if key == "a":
                done["a-later"] = env(Action("echo later")).unwrap().returncode

    threads = [
        threading.Thread(target=work, args=("a", f"sleep 30; echo {token}")),
        threading.Thread(target=work, args=("b", "sleep 1; echo ok")),
    ]
    for t in threads:
        t.start()
    time.sleep(0.4)
    assert interrupt("a") == 1
    for t in threads:
        t.join(timeout=30)
    assert done == {"a": -9, "a-later": -9, "b": 0}
    assert interrupt("nobody") == 0
    assert alive(token) == []
    # Outside a key, nothing is registered and a finished key is forgotten.
    assert env(Action("echo free")).unwrap().returncode == 0


def test_a_key_belongs_to_its_thread_and_its_block() -> None:
    from four.execute._interrupt import running, stopped

    seen: list[object] = []

    def outside() -> None:  # a thread that never entered a block: no key, no registry
        seen.extend([stopped(), running(os.getpid())])

    with interruptible("main"):
        interrupt("main")
        assert stopped()
        thread = threading.Thread(target=outside)
        thread.start()
        thread.join()
        with interruptible("inner"):
            assert not stopped()
        assert stopped()  # the outer key is back
    assert seen == [False, None] and not stopped() and running(os.getpid()) is None


def test_meter_reports_a_runs_usage_while_it_goes(tmp_path: Path) -> None:
    seen: list[float] = []

    def make_run(ctx: RunContext) -> Path:
        inner = scripted_run(
            [bash("echo a"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")], cost=0.25
        )
        path = inner(ctx)
        seen.append(ctx.watch.usage.known_cost)  # type: ignore[attr-defined]
        return path

    (result,) = run_many(make_run, [Item("m")], tmp_path)
    assert seen == [0.5] and result.cost == 0.5


def test_runs_stop_and_their_commands_die_once_the_lease_runs_out(tmp_path: Path) -> None:
    """A worker that hears nothing from its driver for ``lease`` seconds stops its runs
    (the driver may be running the same items elsewhere by then)."""
    token = _token()
    supervisor = Supervisor(lease=1.0)
    make_run = scripted_run([bash(f"sleep 60; echo {token}"), bash("echo never")])
    renewing = threading.Event()

    def renew() -> None:  # the driver, for a while
        while not renewing.wait(0.2):
            supervisor.renew()

    thread = threading.Thread(target=renew)
    thread.start()
    try:
        from four.batch._attempt import run_attempt

        started = threading.Timer(2.0, renewing.set)  # then the driver goes quiet
        started.start()
        begun = time.monotonic()
        result = run_attempt(make_run, Item("leased"), tmp_path, supervisor)
    finally:
        renewing.set()
        thread.join()
        supervisor.close()
    assert result.outcome == "interrupted: no word from the batch's driver for 1 s"
    assert 2.0 <= time.monotonic() - begun < 30 and not result.final
    assert result.trajectory is not None
    assert load_trajectory(result.trajectory).outcome == result.outcome
    assert alive(token) == []


def test_a_revoked_attempt_is_stopped_and_the_others_go_on() -> None:
    supervisor = Supervisor(lease=60.0)
    kept, revoked = supervisor.open("a#1#x"), supervisor.open("b#1#y")
    supervisor.renew(revoked=("b#1#y", "gone#1#z"))
    assert kept.stopped() is None
    stop = revoked.stopped()
    assert stop is not None and stop.text == "interrupted: the batch gave this attempt up"
    supervisor.close()


def test_a_renewal_after_the_lease_ran_out_does_not_revive_its_runs() -> None:
    """Renewals queued while the worker was paused arrive late: the runs the lapsed
    lease covered stay stopped; runs opened after the renewal go on."""
    supervisor = Supervisor(lease=0.2)
    before = supervisor.open("a#1#x")
    time.sleep(0.3)  # (paused past the lease, nothing looked at it meanwhile)
    supervisor.renew()
    stop = before.stopped()
    assert stop is not None and stop.text.startswith("interrupted: no word from the batch")
    after = supervisor.open("b#1#y")
    assert after.stopped() is None
    supervisor.close()
