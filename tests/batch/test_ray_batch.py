"""RayPool on a one-node cluster: the 200-run batch with an actor killed mid-batch,
and the supervisor inside an actor."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from four.batch import Item, RayPool, RunContext, RunResult, iter_runs, read_manifest, run_many
from four.trajectory import load_trajectory
from tests.batch._agents import (
    CannotStart,
    SavedThenHangs,
    SlowSecondStart,
    SlowThenQuick,
    StepModel,
    alive,
    async_scripted_run,
    bash,
    commands_running,
    manifest_lines,
    scripted_run,
    serve_many,
    server_run,
)
from tests.batch.conftest import ROOT, WORKER_PATH, need_ray


def _actor_pids() -> list[int]:
    """Our actors' worker processes: children of the raylet this process started (not
    their own children caught between fork and exec, nor another cluster's actors: other
    test runs may share the machine)."""
    return [pid for pid in alive("ray::_Actor") if _ppid(_ppid(pid)) == os.getpid()]


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def test_200_runs_through_ray_with_an_actor_killed_mid_batch(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    model = StepModel(steps=5, delay=0.02)
    marker = f"raybatch-{time.monotonic_ns()}"
    items = [Item(f"r{i:03d}", f"{marker}-{i}") for i in range(200)]
    results = []
    killed: list[int] = []
    with serve_many(model) as server:
        for result in iter_runs(
            server_run(server.url), items, tmp_path, pool=RayPool(actors=2), max_concurrency=50
        ):
            results.append(result)
            if len(results) == 30:
                pids = _actor_pids()
                assert len(pids) == 2, pids
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
    assert killed
    assert len(results) == 200
    assert sorted(r.id for r in results) == [i.id for i in items]
    assert all(r.outcome == "exit:task_complete" and r.steps == 5 for r in results), [
        r for r in results if not r.submitted
    ][:3]
    retried = [r for r in results if r.attempts == 2]
    assert retried, "the killed actor had runs in flight"
    for r in retried:
        assert r.error is not None and "attempt 1: Actor" in r.error
        assert r.final
        assert r.trajectory is not None and load_trajectory(r.trajectory).outcome == r.outcome
        # Attempt 1 left a partial trajectory, or none (its call was still queued at
        # the actor), or a finished one (killed before its result came back: taken).
        streams = sorted((tmp_path / "runs" / r.id).glob("*.jsonl"))
        others = [p for p in streams if r.trajectory not in (p, p.with_suffix(".json"))]
        assert len(streams) == 1 + len(others) and len(others) <= 1
        for stream in others:  # kept, readable, unfinished
            assert not stream.with_suffix(".json").exists()
            # (empty when the kill came between creating the file and its first line)
            if stream.stat().st_size:
                assert load_trajectory(stream).outcome is None
    assert len(manifest_lines(tmp_path)) == 200
    assert read_manifest(tmp_path) == {r.id: r for r in results}
    assert alive(marker) == []
    assert len(_actor_pids()) == 0 or all(pid not in killed for pid in _actor_pids())


def test_runs_go_to_the_first_actor_up_and_spread_once_the_second_is(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    items = [Item(f"s{i:02d}") for i in range(40)]
    ended: list[tuple[float, RunResult]] = []
    for result in iter_runs(
        SlowSecondStart(str(flags), delay=3.0),
        items,
        tmp_path / "out",
        pool=RayPool(actors=2),
        max_concurrency=4,
    ):
        ended.append((time.time(), result))
    assert len(ended) == 40 and all(r.outcome == "exit:task_complete" for _, r in ended)
    slow_pid, up_at = (flags / "up").read_text().split()
    # Runs ended on the first actor while the second was still starting...
    assert ended[0][0] < float(up_at)
    # ... which each actor took at most its share of (2), so the second got runs too.
    pids = {(tmp_path / "out" / "runs" / r.id / "pid").read_text() for _, r in ended}
    assert len(pids) == 2 and slow_pid in pids


def test_actors_that_cannot_start_fail_the_runs_with_the_reason(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    items = [Item("a"), Item("b"), Item("c")]
    results = run_many(CannotStart("no way"), items, tmp_path, pool=RayPool(actors=2))
    why = "its actor could not start: RuntimeError: no way"
    assert [r.outcome for r in results] == [
        f"crashed: batch: no Ray actor is left to run it ({why})"
    ] * 3
    assert len(manifest_lines(tmp_path)) == 3


def test_async_runs_are_hosted_by_ray_actors(tmp_path: Path, ray_cluster: ModuleType) -> None:
    """An async make_run (awaiting four.arun) runs on a Ray actor too: each actor thread
    runs it on an event loop of its own."""
    make_run = async_scripted_run(
        [bash("true"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")]
    )
    items = [Item(f"a{i}") for i in range(6)]
    results = run_many(make_run, items, tmp_path, pool=RayPool(), max_concurrency=6)
    assert sorted(r.id for r in results) == [i.id for i in items]
    assert {(r.outcome, r.steps, r.node) for r in results} == {
        ("exit:task_complete", 2, "127.0.0.2")
    }


def test_the_supervisor_stops_a_stalled_run_inside_an_actor(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    token = f"raystall-{time.monotonic_ns()}"
    make_run = scripted_run([bash(f"sleep 60; echo {token}"), bash("echo never")])
    start = time.monotonic()
    (result,) = run_many(make_run, [Item("stuck")], tmp_path, pool=RayPool(), stall_timeout=1)
    assert result.outcome == "stalled: no model call or command finished for 1 s"
    assert time.monotonic() - start < 30
    assert result.node == "127.0.0.2" and result.trajectory is not None
    assert load_trajectory(result.trajectory).outcome == result.outcome
    assert alive(token) == []


def test_a_killed_actors_commands_are_killed_by_its_successor(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    token = f"rayorphan-{time.monotonic_ns()}"
    runs = iter_runs(SlowThenQuick(token), [Item("orphan")], tmp_path, pool=RayPool())
    result: list[RunResult] = []

    def consume() -> None:
        result.extend(runs)

    thread = threading.Thread(target=consume)
    thread.start()
    deadline = time.monotonic() + 60
    # Killed once its stream's last message (the command) has reached the batch folder.
    while not _landed(tmp_path / "runs" / "orphan", token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(f"echo {token}")
    (actor,) = _actor_pids()
    os.kill(actor, signal.SIGKILL)
    thread.join(timeout=90)
    assert not thread.is_alive()
    (r,) = result
    assert r.attempts == 2 and r.submitted, r
    assert alive(token) == []  # the restarted actor killed the orphaned sleep
    (partial,) = [p for p in (tmp_path / "runs" / "orphan").glob("*.jsonl") if p != r.trajectory
                  and p.with_suffix(".json") != r.trajectory]  # fmt: skip
    kept = load_trajectory(partial)
    assert kept.outcome is None and token in kept.messages[-1].content


def _landed(folder: Path, text: str) -> bool:
    return any(text in p.read_text() for p in folder.glob("*.jsonl"))


def _kill_the_actor_each_time(
    make_run: Callable[[RunContext], Path], out: Path, *ready: Callable[[float], bool]
) -> tuple[RunResult, list[float]]:
    """Run one item on one actor; each time ``ready`` holds of the batch's cost so far
    (``Progress.cost``: results, live runs, lost attempts), kill the actor. The result,
    and every cost the batch said meanwhile."""
    costs = [0.0]
    runs = iter_runs(
        make_run, [Item("paid")], out, pool=RayPool(), on_progress=lambda p: costs.append(p.cost)
    )
    result: list[RunResult] = []
    thread = threading.Thread(target=lambda: result.extend(runs))
    thread.start()
    for condition in ready:
        deadline = time.monotonic() + 60
        while not condition(costs[-1]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert condition(costs[-1]), costs[-1]
        (actor,) = _actor_pids()
        os.kill(actor, signal.SIGKILL)
    thread.join(timeout=90)
    assert not thread.is_alive()
    (r,) = result
    (line,) = manifest_lines(out)
    assert (line["cost"], line["tokens"]) == (r.cost, r.tokens)
    return r, costs


def test_a_retried_run_counts_what_its_killed_first_attempt_spent(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    token = f"raypaid-{time.monotonic_ns()}"
    # Attempt 1: a model call (0.25) then `sleep 60`, killed; attempt 2: one call, submits.
    r, costs = _kill_the_actor_each_time(
        SlowThenQuick(token, cost=0.25), tmp_path, lambda cost: cost == 0.25
    )
    assert r.attempts == 2 and r.submitted, r
    assert (r.cost, r.prompt_tokens, r.completion_tokens) == (0.5, 20, 10)  # both paid for
    assert max(costs) == 0.5  # the lost 0.25 counted once while attempt 2 ran
    assert r.trajectory is not None  # (whose own stats count attempt 2 only)
    usage = load_trajectory(r.trajectory).stats.usage
    assert (usage.cost, usage.prompt_tokens) == (0.25, 10)
    assert alive(token) == []


def test_a_run_lost_for_good_carries_what_both_attempts_spent(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    token = f"raylost-{time.monotonic_ns()}"
    sleeping = f"echo {token}"
    # Each attempt: a model call (0.25), then `sleep 60`; the actor is killed in both.
    # Before the second kill, the batch counts the lost 0.25 and attempt 2's 0.25.
    r, costs = _kill_the_actor_each_time(
        scripted_run([bash(f"sleep 60; {sleeping}")], cost=0.25),
        tmp_path,
        lambda cost: cost == 0.25 and bool(commands_running(sleeping)),
        lambda cost: cost == 0.5 and bool(commands_running(sleeping)),
    )
    assert r.outcome.startswith("crashed: batch: its Ray actor died twice: "), r
    assert r.attempts == 2 and not r.final and r.trajectory is None
    assert (r.cost, r.prompt_tokens, r.completion_tokens) == (0.5, 20, 10)
    assert max(costs) == 0.5


def test_a_recovered_first_attempt_is_counted_once(tmp_path: Path, ray_cluster: ModuleType) -> None:
    saved = tmp_path / "runs" / "paid" / "saved"
    # Attempt 1 saves its trajectory (a call of 0.25), then its actor is killed before
    # the result comes back: its trajectory reached the batch folder, and is taken (no
    # second attempt runs).
    r, costs = _kill_the_actor_each_time(
        SavedThenHangs(cost=0.25), tmp_path, lambda cost: cost == 0.25 and saved.exists()
    )
    assert r.attempts == 1 and r.submitted, r
    assert r.error is not None and r.error.startswith("attempt 1: Actor")
    assert r.error.endswith("its run had ended: its trajectory is taken")
    assert r.trajectory is not None and r.trajectory.name == Path(saved.read_text()).name
    assert r.trajectory.parent == saved.parent
    assert (r.cost, r.prompt_tokens, r.completion_tokens) == (0.25, 10, 5)
    assert max(costs) == 0.25


DRIVER = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background shell ignores it
from four.batch import Item, RayPool, run_many
from tests.batch._agents import bash, scripted_run
from tests.batch.conftest import ray_init_args
token, out = sys.argv[1:3]
init = ray_init_args()
init.pop("address")
pool = RayPool(address="local", init=init)
try:
    run_many(scripted_run([bash(f"sleep 60; echo {token}")]), [Item(f"i{n}") for n in range(6)],
             out, max_concurrency=3, pool=pool)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""


def test_ctrl_c_on_a_ray_batch_saves_records_and_kills_everything(tmp_path: Path) -> None:
    need_ray()
    token = f"rayint-{time.monotonic_ns()}"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    with subprocess.Popen(
        [sys.executable, str(script), token, str(tmp_path / "out")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": WORKER_PATH},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a terminal's Ctrl-C goes to the whole process group
    ) as proc:
        try:
            deadline = time.monotonic() + 90
            while len(commands_running(f"echo {token}")) < 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(commands_running(f"echo {token}")) == 3, proc.poll()
            os.killpg(proc.pid, signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    assert stdout.strip() == "interrupted", stderr[-2000:]
    assert alive(token) == []
    lines = manifest_lines(tmp_path / "out")
    assert len(lines) == 3
    for line in lines:
        assert line["outcome"] == "interrupted: batch interrupted" and line["final"] is False
        assert load_trajectory(str(line["trajectory"])).outcome == line["outcome"]


def test_a_status_reply_lost_is_sent_again_until_acknowledged(
    tmp_path: Path, ray_cluster: ModuleType
) -> None:
    """The actor counts a report as had only once the next poll acknowledges it: a reply
    lost on the way (the actor alive) is sent again, usage and records alike. A revoked
    attempt stops, its commands killed."""
    from four.batch._ray import Report, actor_class
    from four.batch._sessions import Spec

    token = f"raystatus-{time.monotonic_ns()}"
    make_run = scripted_run([bash(f"sleep 60; echo {token}")], cost=0.25)
    actor = (
        cast(Any, actor_class())
        .options(max_concurrency=2)
        .remote(Spec(make_run, tmp_path, 2), str(tmp_path / "scratch"), 60.0)
    )
    key = "p#1#abcd"
    ran = actor.run.remote(Item("p"), 1, key)
    seq, got = 0, None
    deadline = time.monotonic() + 60
    while got is None and time.monotonic() < deadline:
        report = cast(Report, ray_cluster.get(actor.status.remote(0.0, seq, ())))
        seq = report.seq
        streams = [p for _, ps in report.pieces for p in ps if token.encode() in p.data]
        if report.usages and streams:
            got = report
        time.sleep(0.1)
    assert got is not None
    assert [(k, u.known_cost) for k, u in got.usages] == [(key, 0.25)]
    # That reply is lost: the next poll acknowledges the one before.
    again = cast(Report, ray_cluster.get(actor.status.remote(0.0, got.seq - 1, ())))
    assert [(k, u.known_cost) for k, u in again.usages] == [(key, 0.25)]
    assert [p.data for _, ps in again.pieces for p in ps] == [
        p.data for _, ps in got.pieces for p in ps
    ]
    # Acknowledged: nothing is sent twice.
    quiet = cast(Report, ray_cluster.get(actor.status.remote(0.0, again.seq, ())))
    assert quiet.usages == () and quiet.pieces == () and quiet.running == (key,)
    actor.renew.remote((key,))
    result, _ = ray_cluster.get(ran, timeout=60)
    assert result.outcome == "interrupted: the batch gave this attempt up" and not result.final
    assert alive(token) == []
    ray_cluster.kill(actor)
