"""`four watch`'s judgement on files: heartbeats under the seal, the states a run is in,
and the safety of its actions (a lock per run, the retry budget, only the recorded
driver killed). The end-to-end rescues with real `four run` processes are in
tests/cli/test_watch.py."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from four import Assistant, Stopped, System, User
from four._types import JSON, Message, RunInfo
from four.checks._audit import audit
from four.observe._rescue import _locked, rescue, stop_driver
from four.observe._watch import (
    Observed,
    Policy,
    classify,
    driver_state,
    judge,
    observe,
    survey,
)
from four.trajectory._driver import Driver, boot_id, process_start, this_driver
from four.trajectory._reseal import NotResealable, seal_stream
from four.trajectory._save import TrajectorySink

TURN: list[Message] = [Assistant("```bash\nls\n```"), User("a b", "observation", 0)]


def stream(
    folder: Path, messages: Sequence[Message], *, beats: int = 1, cli: dict[str, JSON] | None = None
) -> TrajectorySink:
    """An open run (as a killed driver leaves it) with ``messages`` and heartbeats."""
    info = RunInfo({"cli": cli or {"attempt": 1}}, 10, 3, time.time())
    sink = TrajectorySink(folder, info)
    for m in [System("s"), User("count the files", "task"), *messages]:
        sink.append(m)
        for _ in range(beats):
            sink.beat()
    return sink


DEAD_DRIVER = """
import sys, time
from pathlib import Path
from four import Assistant, System, User
from four._types import JSON, Message, RunInfo
from four.trajectory._save import TrajectorySink
n = int(sys.argv[2])
info = RunInfo({"cli": {"attempt": n}} if n else {}, 10, 3, time.time())
sink = TrajectorySink(Path(sys.argv[1]), info)
for m in [System("s"), User("t", "task"), Assistant("```bash\\nls\\n```")]:
    sink.append(m)
print(sink.jsonl)
"""


def dead_stream(folder: Path, attempt: int = 1) -> Path:
    """A run whose driver (another process) has died: its stream, unsealed (attempt 0:
    a run of a program of one's own, with no settings of `four run`)."""
    done = subprocess.run(
        [sys.executable, "-c", DEAD_DRIVER, str(folder), str(attempt)],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip())


def run_of(sink: TrajectorySink) -> Observed:
    found = observe(sink.jsonl)
    assert found is not None
    return found


# --- heartbeats, the seal, and sealing from outside ----------------------------------


def test_heartbeats_are_checked_where_they_stand_and_a_killed_prefix_audits(tmp_path: Path) -> None:
    sink = stream(tmp_path, TURN, beats=2)
    text = sink.jsonl.read_text()
    assert text.count('"type": "beat"') == 8  # two after each of 4 messages
    assert audit(sink.jsonl).valid  # a prefix, with its heartbeats
    edited = tmp_path / "edited.jsonl"
    lines = text.splitlines(keepends=True)
    beat = next(i for i, line in enumerate(lines) if '"beat"' in line)
    record = json.loads(lines[beat])
    record["t"] += 100.0  # a heartbeat moved later
    lines[beat] = json.dumps(record) + "\n"
    edited.write_text("".join(lines))
    report = audit(edited)
    assert not report.valid and "heartbeat" in report.errors[0]


def test_the_stream_names_its_driver_under_the_seal(tmp_path: Path) -> None:
    sink = stream(tmp_path, TURN)
    run = run_of(sink)
    assert run.driver == this_driver()
    assert run.driver.pid == os.getpid() and run.driver.host == platform.node()
    assert run.driver.start == process_start(os.getpid())


def test_a_dead_drivers_stream_is_sealed_stopped_and_both_files_audit(tmp_path: Path) -> None:
    sink = stream(tmp_path, TURN)
    with open(sink.jsonl, "a") as f:
        f.write('{"type": "message", "t": 1.0, "mess')  # the line in flight at the kill
    path = seal_stream(sink.jsonl, Stopped("looping: the same command"))
    document = json.loads(path.read_text())
    assert document["outcome"] == "stopped: looping: the same command"
    assert document["outcome_detail"] == {"kind": "stopped", "reason": "looping: the same command"}
    assert len(document["messages"]) == 4 and document["stats"]["steps"] == 1
    assert audit(path).valid and audit(sink.jsonl).valid
    with pytest.raises(NotResealable, match="sealed already"):
        seal_stream(sink.jsonl, Stopped("again"))


# --- the states ------------------------------------------------------------------------


def test_the_states_of_open_runs(tmp_path: Path) -> None:
    policy = Policy(stall_factor=5, stall_floor=10, repeats=3, not_found=2, lost=30)
    run = run_of(stream(tmp_path, TURN))
    now = run.last_sign
    assert classify(run, "alive", now, policy).state == "running"
    assert classify(run, "gone", now, policy).state == "dead"
    assert classify(run, "elsewhere", now + 5, policy).state == "running"
    assert classify(run, "elsewhere", now + 31, policy).state == "dead"
    stalled = classify(run, "alive", now + 11, policy)
    assert stalled.state == "stalled" and "limit 10 s" in stalled.why
    loop = run_of(stream(tmp_path, TURN * 3))
    assert (
        classify(loop, "alive", now, policy).why == "the same command and output 3 times in a row"
    )
    missing: list[Message] = [
        Assistant("```bash\nfoo\n```"),
        User("foo: command not found", "observation", 127),
    ]
    varied: list[Message] = [
        *missing,
        Assistant("```bash\nbar\n```"),
        User("bar: not found", "observation", 127),
    ]
    assert (
        "2 commands in a row not found"
        in classify(run_of(stream(tmp_path, varied)), "alive", now, policy).why
    )
    timed = run_of(stream(tmp_path, TURN, cli={"timeout": 20.0}))
    assert classify(timed, "alive", timed.started_at + 49, policy).state == "stalled"
    assert classify(timed, "alive", timed.started_at + 51, policy).state == "over_budget"


def test_the_stall_limit_follows_the_runs_own_pace(tmp_path: Path) -> None:
    run = run_of(stream(tmp_path, TURN))
    steps = replace(  # 20 s a step
        run, messages=run.messages + tuple(TURN), message_times=(0.0, 0.0, 10.0, 10.5, 30.0, 30.5)
    )
    policy = Policy(stall_factor=3, stall_floor=1)
    assert classify(steps, "alive", steps.started_at + 30.5 + 59, policy).state == "running"
    assert classify(steps, "alive", steps.started_at + 30.5 + 61, policy).state == "stalled"


def test_sealed_runs_and_the_errors_worth_another_attempt(tmp_path: Path) -> None:
    run = replace(run_of(stream(tmp_path, TURN)), sealed=True)
    policy = Policy()
    for outcome, state in [
        ("exit:task_complete", "finished"),
        ("model_error: rate_limit: slow down", "failed"),
        ("model_error: server: 502", "failed"),
        ("model_error: authentication: bad key", "finished"),
        ("model_error: bad_request: no such field", "finished"),
        ("stopped: stalled: no step for 90 s", "failed"),
        ("stopped: looping: the same command", "finished"),
    ]:
        assert classify(replace(run, outcome=outcome), "gone", 0.0, policy).state == state


def test_a_resumed_run_is_linked_to_its_next_attempt(tmp_path: Path) -> None:
    first = stream(tmp_path, TURN)
    second = stream(tmp_path, [], cli={"attempt": 2, "resumes": str(first.jsonl.resolve())})
    found = {r.stream: r for r in survey(tmp_path)}
    assert found[first.jsonl].resumed_by == str(second.jsonl)
    assert classify(found[first.jsonl], "gone", time.time(), Policy()).state == "resumed"
    assert found[second.jsonl].attempt == 2


def test_a_driver_is_judged_by_pid_and_start_time() -> None:
    me = this_driver()
    assert driver_state(me) == "alive"
    assert driver_state(replace(me, start=(me.start or 0) + 1)) == "gone"  # a reused pid
    assert driver_state(replace(me, host="elsewhere.example")) == "elsewhere"
    assert driver_state(None) == "elsewhere"
    done = subprocess.Popen(["true"])
    done.wait()
    assert driver_state(replace(me, pid=done.pid)) == "gone"


# --- acting safely -------------------------------------------------------------------


def test_a_process_that_only_reuses_the_pid_is_never_killed(tmp_path: Path) -> None:
    stream = tmp_path / "run.jsonl"
    stream.write_text("")
    sleeper = subprocess.Popen(["sh", "-c", f"exec sleep 30 >> {stream}"])  # as a driver
    try:
        start = process_start(sleeper.pid)
        assert start is not None
        other = Driver(platform.node(), sleeper.pid, start + 1, boot_id())
        said = stop_driver(other, stream)
        assert said == f"pid {sleeper.pid} is another process now: not touched"
        assert sleeper.poll() is None
        time.sleep(0.2)  # exec'd, its stream open
        assert stop_driver(Driver(platform.node(), sleeper.pid, start, boot_id()), stream) is None
        assert sleeper.wait(timeout=10) == -9
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_locked_run_is_left_to_the_watcher_that_holds_it(tmp_path: Path) -> None:
    sink = stream(tmp_path, TURN)
    verdict = classify(run_of(sink), "gone", time.time(), Policy())
    with _locked(sink.jsonl) as held:
        assert held
        done = rescue(verdict, Policy())
    assert done.action == "skipped" and "lock" in done.detail
    assert not (tmp_path / "watch.jsonl").exists()


def test_the_retry_budget_is_kept(tmp_path: Path) -> None:
    path = dead_stream(tmp_path, attempt=3)
    policy = Policy(attempts=3)
    (run,) = survey(tmp_path)
    verdict = classify(run, driver_state(run.driver), time.time(), policy)
    assert verdict.state == "dead"
    done = rescue(verdict, policy)
    assert done.action == "gave_up" and done.detail == "3 attempts of 3"
    (run,) = survey(tmp_path)  # sealed stopped now, with no retry left
    verdict = classify(run, driver_state(run.driver), time.time(), policy)
    assert verdict.state == "finished" and "no retry left" in verdict.why
    assert rescue(verdict, policy).action == "none"
    log = [json.loads(x) for x in (tmp_path / "watch.jsonl").read_text().splitlines()]
    assert [e["action"] for e in log] == ["gave_up"]  # logged once
    sealed = json.loads(path.with_suffix(".json").read_text())
    assert sealed["outcome"].startswith("stopped: dead: not sealed")
    assert audit(path).valid and audit(path.with_suffix(".json")).valid


def test_an_attempt_that_died_before_writing_counts_against_the_budget(tmp_path: Path) -> None:
    path = dead_stream(tmp_path)
    gone = subprocess.Popen(["true"])
    start = process_start(gone.pid)
    gone.wait()
    entry = {"action": "resumed", "run": path.name, "pid": gone.pid, "pid_start": start}
    (tmp_path / "watch.jsonl").write_text(json.dumps(entry) + "\n")
    (run,) = survey(tmp_path)
    assert run.resumed_by is None and run.tries == 1  # its attempt never began
    policy = Policy(attempts=2)
    done = rescue(classify(run, driver_state(run.driver), time.time(), policy), policy)
    assert done.action == "gave_up" and done.detail == "2 attempts of 2"


def test_signed_heartbeats_and_sealing_a_signed_stream_needs_its_key(tmp_path: Path) -> None:
    from four.trajectory import SigningKey

    key = SigningKey.generate()
    sink = TrajectorySink(tmp_path, RunInfo({}, 10, 3, time.time()), key)
    for m in [System("s"), User("t", "task"), *TURN]:
        sink.append(m)
        sink.beat()
    beats = [json.loads(x) for x in sink.jsonl.read_text().splitlines() if '"beat"' in x]
    assert len(beats) == 4 and all("signature" in b for b in beats)
    assert audit(sink.jsonl, public_key=key.public).valid
    with pytest.raises(NotResealable, match="give its key"):
        seal_stream(sink.jsonl, Stopped("stalled"))
    with pytest.raises(NotResealable, match="give its key"):
        seal_stream(sink.jsonl, Stopped("stalled"), SigningKey.generate())
    path = seal_stream(sink.jsonl, Stopped("stalled"), key)
    assert audit(path, public_key=key.public).valid
    assert audit(sink.jsonl, public_key=key.public).valid


def test_a_new_attempt_gets_the_steps_and_time_its_predecessor_left(tmp_path: Path) -> None:
    from four.cli import build_parser
    from four.cli._options import RunOptions, options
    from four.cli._run import INTERRUPTED, resumed

    argv = ["run", "t", "-m", "m", "--max-steps", "10", "--timeout", "100", "--cwd", str(tmp_path)]
    settings = {**options(build_parser().parse_args(argv), tty=False).record(), "attempt": 2}
    info = RunInfo({"cli": settings}, 10, 3, time.time(), resumed_from=4)
    sink = TrajectorySink(tmp_path, info)
    earlier = [System("s"), User("count the files", "task"), *TURN]  # attempt 1's
    for m in [*earlier, *TURN, Assistant("```bash\nsleep 9\n```")]:
        sink.append(m)
    opts, history, extra = resumed(str(sink.jsonl), mode="quiet", json=False)
    assert isinstance(opts, RunOptions) and extra == {}
    assert opts.task == "count the files"
    assert history[-1] == User(INTERRUPTED, "observation")
    assert opts.max_steps == 8 and opts.timeout is not None and 99 < opts.timeout <= 100
    assert opts.output_dir == str(tmp_path.resolve()) and opts.attempt == 3
    assert opts.resumes == str(sink.jsonl.resolve())


def test_a_run_of_a_program_of_ones_own_is_never_acted_on(tmp_path: Path) -> None:
    path = dead_stream(tmp_path, attempt=0)
    (run,) = survey(tmp_path)
    verdict = judge(run, time.time(), Policy())
    assert verdict.state == "dead"
    for _ in range(2):
        done = rescue(verdict, Policy())
        assert done.action == "failed" and "no settings" in done.detail
    log = (tmp_path / "watch.jsonl").read_text().splitlines()
    assert len(log) == 1  # said once, not on every pass
    assert not path.with_suffix(".json").exists()  # not sealed from outside


def test_a_resumed_history_answers_each_call_the_stopped_run_left_open() -> None:
    from four._types import ToolCall, ToolResult
    from four.cli._run import INTERRUPTED, closed

    calls = (ToolCall("c1", "bash", '{"command": "ls"}'), ToolCall("c2", "bash", "{}"))
    turn = Assistant("", tool_calls=calls)
    history: tuple[Message, ...] = (User("t", "task"), turn)
    assert closed(history)[2:] == tuple(ToolResult(c.id, INTERRUPTED, "bash") for c in calls)
    half = (*history, ToolResult("c1", "out", "bash"))
    assert closed(half)[3:] == (ToolResult("c2", INTERRUPTED, "bash"),)
    done = (*half, ToolResult("c2", "out", "bash"))
    assert closed(done) == done
