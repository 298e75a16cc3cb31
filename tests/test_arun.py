"""arun: the same loop awaited, with async and plain components; cancellation and Ctrl-C
end it ``interrupted`` with its commands killed and its trajectory sealed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from returns.result import Success

from four import (
    Action,
    Assistant,
    Crashed,
    Message,
    Outcome,
    arun,
    load_trajectory,
    local_env,
    regex_parse,
    run,
    save_trajectory,
    scripted_invoke,
)
from four.types import EXIT_SIGNAL
from tests._doubles import FakeEnv, line_parse

ROOT = Path(__file__).resolve().parents[1]


def _alive(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return found.stdout.split()


def test_arun_with_plain_components_saves_the_same_trajectory_as_run(tmp_path: Path) -> None:
    script = ["```bash\necho one\n```", "```bash\necho two\n```", EXIT_SIGNAL]
    paths = [
        run(scripted_invoke(script), regex_parse(), local_env(), save_trajectory(tmp_path / "a"),
            "s", "p"),
        asyncio.run(arun(scripted_invoke(script), regex_parse(), local_env(),
                         save_trajectory(tmp_path / "b"), "s", "p")),
    ]  # fmt: skip
    plain, awaited = (load_trajectory(p) for p in paths)
    assert awaited.outcome == plain.outcome == "exit:task_complete"
    assert [m.content for m in awaited.messages] == [m.content for m in plain.messages]


def test_many_async_runs_share_one_event_loop(tmp_path: Path) -> None:
    """Async G and V2 on one loop: 200 runs with 0.2 s of model latency take about 0.4 s,
    not 200 x 0.4 s."""

    async def G(messages: Sequence[Message]) -> Success[Assistant]:
        await asyncio.sleep(0.2)
        return Success(Assistant("$ ls" if len(messages) < 3 else "DONE"))

    env = FakeEnv()

    async def V2(action: Action) -> object:
        return env(action)

    def keep(messages: Sequence[Message], outcome: Outcome) -> str:
        return outcome.text

    async def many() -> list[str]:
        runs = [arun(G, line_parse, V2, keep, "s", f"task {i}") for i in range(200)]  # type: ignore[arg-type]
        return await asyncio.gather(*runs)

    started = time.monotonic()
    outcomes = asyncio.run(many())
    assert outcomes == ["exit:task_complete"] * 200
    assert time.monotonic() - started < 20  # a bound against serial execution (80 s)


def test_cancelling_the_task_ends_the_run_interrupted_and_kills_its_command(
    tmp_path: Path,
) -> None:
    """A plain V2 runs in a worker thread: the cancellation kills its command there."""
    marker = f"sleep 3{os.getpid() % 1000}.17"

    async def cancel_mid_command() -> None:
        task = asyncio.ensure_future(
            arun(scripted_invoke([f"```bash\n{marker}\n```"]), regex_parse(),
                 local_env(timeout=60), save_trajectory(tmp_path), "s", "p")
        )  # fmt: skip
        for _ in range(200):
            await asyncio.sleep(0.05)
            if _alive(marker):
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_mid_command())
    assert load_trajectory(next(tmp_path.glob("*.json"))).outcome == "interrupted: CancelledError"
    deadline = time.monotonic() + 5
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(marker)


def test_ctrl_c_under_asyncio_run_seals_the_trajectory(tmp_path: Path) -> None:
    marker = f"sleep 4{os.getpid() % 1000}.3"
    program = textwrap.dedent(f"""
        import asyncio, sys
        from four import arun, scripted_invoke, regex_parse, local_env, save_trajectory
        print("started", flush=True)
        asyncio.run(arun(scripted_invoke(["```bash\\n{marker}\\n```"]), regex_parse(),
                         local_env(timeout=60), save_trajectory(sys.argv[1]), "s", "p"))
    """)
    child = subprocess.Popen(
        [sys.executable, "-c", program, str(tmp_path)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    with child:  # killed if the test fails: no process or pipe outlives it
        assert child.stdout is not None and child.stdout.readline() == "started\n"
        deadline = time.monotonic() + 60
        while not _alive(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(marker), "the command never started"
        time.sleep(0.2)  # the command is in flight, its trajectory stream open
        child.send_signal(signal.SIGINT)
        try:
            _, err = child.communicate(timeout=30)
        finally:
            child.kill()
    assert child.returncode != 0 and "KeyboardInterrupt" in err
    (saved,) = tmp_path.glob("*.json")
    assert json.loads(saved.read_text())["outcome"].startswith("interrupted")
    deadline = time.monotonic() + 5
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(marker)


@pytest.mark.parametrize("driver", ["run", "arun"])
@pytest.mark.parametrize(
    ("component", "returns"),
    [("G", "just text"), ("V1", ["echo hi"]), ("V2", None)],
)
def test_a_component_returning_no_result_ends_the_run_crashed_naming_it(
    driver: str, component: str, returns: object
) -> None:
    seen: list[Outcome] = []

    def emit(messages: Sequence[Message], outcome: Outcome) -> None:
        seen.append(outcome)

    parts: dict[str, object] = {
        "G": scripted_invoke(["$ echo hi"]),
        "V1": line_parse,
        "V2": FakeEnv(),
    }
    parts[component] = lambda *_: returns
    args = (parts["G"], parts["V1"], parts["V2"], emit, "s", "p")
    with pytest.raises(TypeError, match=f"^{component} returned {type(returns).__name__}"):
        if driver == "run":
            run(*args)  # type: ignore[arg-type]
        else:
            asyncio.run(arun(*args))  # type: ignore[arg-type]
    (outcome,) = seen
    assert isinstance(outcome, Crashed) and outcome.component == component
    assert "wrap the value in returns.result.Success or Failure" in outcome.error


_GOOD = {"G": scripted_invoke(["DONE"]), "V1": line_parse, "V2": FakeEnv(), "emit": print}


@pytest.mark.parametrize("driver", ["run", "arun"])
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"G": None}, "G=None is not a function"),
        ({"V2": "echo hi"}, "V2='echo hi' is not a function"),
        ({"max_steps": 0}, "max_steps=0: give a whole number of at least 1"),
        ({"max_steps": -1}, "max_steps=-1: give a whole number"),
        ({"max_steps": 2.5}, "max_steps=2.5: give a whole number"),
        ({"max_steps": "5"}, "max_steps='5': give a whole number"),
        ({"max_steps": True}, "max_steps=True: give a whole number"),
        ({"max_format_errors": -1}, "max_format_errors=-1: give a whole number of at least 0"),
        ({"prompt": None}, "prompt=None: give a str"),
        ({"system": 3}, "system=3: give a str"),
        ({"resume": "hello"}, "resume must be a sequence of messages"),
        ({"resume": [1]}, "resume holds 1, which is not a Message"),
        ({"check": object()}, "check must be a Verify"),
        ({"watch": object()}, "watch must have beat"),
        ({"max_step": 5}, "unexpected keyword argument 'max_step'"),
    ],
)
def test_wrong_arguments_are_refused_before_anything_runs(
    driver: str, change: dict[str, object], message: str
) -> None:
    env = FakeEnv()
    kwargs: dict[str, object] = {**_GOOD, "V2": env, "prompt": "p", **change}
    with pytest.raises((TypeError, ValueError), match=message):
        if driver == "run":
            run(**kwargs)  # type: ignore[arg-type]
        else:
            asyncio.run(arun(**kwargs))  # type: ignore[arg-type]
    assert env.seen == []


def test_a_failing_emit_fails_arun_as_it_fails_run() -> None:
    def emit(messages: Sequence[Message], outcome: Outcome) -> Path:
        raise OSError("disk full")

    G, V1, V2 = scripted_invoke(["DONE"]), line_parse, FakeEnv()
    with pytest.raises(Exception) as plain:
        run(G, V1, V2, emit, prompt="p")
    with pytest.raises(Exception) as awaited:
        asyncio.run(arun(scripted_invoke(["DONE"]), V1, FakeEnv(), emit, prompt="p"))
    assert type(awaited.value) is type(plain.value)
    assert "disk full" in str(awaited.value) and str(awaited.value) == str(plain.value)


def _ends_at_once(n: int, folder: Path) -> list[Path]:
    """``n`` runs on one loop whose documents are all sealed in the same moment."""

    async def G(messages: Sequence[Message]) -> Success[Assistant]:
        await asyncio.sleep(0.05)
        return Success(Assistant("DONE"))

    emit = save_trajectory(folder)

    async def many() -> list[Path]:
        return await asyncio.gather(
            *(arun(G, line_parse, FakeEnv(), emit, "s", f"task {i}") for i in range(n))
        )

    return asyncio.run(many())


def test_runs_ending_together_each_leave_their_whole_sealed_document(tmp_path: Path) -> None:
    from four import audit

    paths = _ends_at_once(300, tmp_path)
    assert len(set(paths)) == 300 and all(p.is_file() for p in paths)
    assert sorted(tmp_path.glob("*.json")) == sorted(paths)
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file is left behind
    tasks = {load_trajectory(p).messages[1].content for p in paths}
    assert tasks == {f"task {i}" for i in range(300)}
    assert all(audit(p).valid and audit(p).finished for p in paths)


def _file_system(folder: Path) -> str:
    return subprocess.run(["stat", "-f", "-c", "%T", str(folder)], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


def test_on_a_file_system_in_memory_the_seal_hands_nothing_to_a_thread(tmp_path: Path) -> None:
    """An fsync on tmpfs never waits, so there a run is sealed on the loop (each hand-off
    to the durable thread costs a busy loop its GIL); on a disk the thread takes it. The
    documents are the same: whole, sealed, no temporary file left."""
    memory = Path("/dev/shm")
    if not memory.is_dir() or _file_system(memory) != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    if _file_system(tmp_path) in ("tmpfs", "ramfs"):
        pytest.skip("the temporary folder is in memory too")
    script = textwrap.dedent(
        """
        import sys, threading
        from pathlib import Path
        sys.path.insert(0, sys.argv[3])
        from tests.test_arun import _ends_at_once
        for folder in sys.argv[1:3]:
            paths = _ends_at_once(20, Path(folder))
            durable = [t for t in threading.enumerate() if t.name == "four-durable"]
            print(len(paths), bool(durable))
        """
    )
    in_memory = memory / f"four-test-{os.getpid()}-{time.monotonic_ns()}"
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, str(in_memory), str(tmp_path / "disk"), str(ROOT)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n")[:2] == ["20 False", "20 True"]
        from four import audit

        for folder in (in_memory, tmp_path / "disk"):
            paths = sorted(folder.glob("*.json"))
            assert len(paths) == 20 and all(audit(p).valid for p in paths)
            assert not list(folder.glob(".*.tmp"))
    finally:
        subprocess.run(["rm", "-rf", str(in_memory)], check=False)


def test_a_forked_child_seals_its_runs_as_its_parent_does(tmp_path: Path) -> None:
    """The disk's waits happen in a thread of the process; a child forked after its
    parent sealed runs (the thread not copied) seals its own."""
    _ends_at_once(3, tmp_path / "parent")
    pid = os.fork()
    if pid == 0:  # the child: a run sealed within the parent's timeout, or exit 1
        code = 1
        try:
            (path,) = _ends_at_once(1, tmp_path / "child")
            code = 0 if path.is_file() else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if ended[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's run never sealed")
    assert os.waitstatus_to_exitcode(ended[1]) == 0
    (saved,) = (tmp_path / "child").glob("*.json")
    assert load_trajectory(saved).outcome == "exit:task_complete"


def test_a_rename_the_os_refuses_fails_that_run_as_run_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait on the disk happens off the loop; its error is still the run's error,
    the same ``TrajectoryNotSaved`` that ``run`` raises, naming the stream kept."""
    from four.trajectory import TrajectoryNotSaved

    def refuse(src: object, dst: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "replace", refuse)
    G, V2 = scripted_invoke(["DONE"]), FakeEnv()
    with pytest.raises(TrajectoryNotSaved) as plain:
        run(G, line_parse, V2, save_trajectory(tmp_path / "a"), prompt="p")
    with pytest.raises(TrajectoryNotSaved) as awaited:
        asyncio.run(arun(scripted_invoke(["DONE"]), line_parse, FakeEnv(),
                         save_trajectory(tmp_path / "b"), prompt="p"))  # fmt: skip
    for error, folder in ((plain.value, tmp_path / "a"), (awaited.value, tmp_path / "b")):
        assert str(error) == (
            f"invalid cross-device link: the run could not be saved in {folder} "
            f"({error.kept} keeps 3 of 3 messages)"
        )
    assert awaited.value.kept is not None and awaited.value.kept.is_file()
    assert not list((tmp_path / "b").glob(".*.tmp"))


def test_a_run_cancelled_while_it_is_sealed_still_leaves_its_document(tmp_path: Path) -> None:
    async def G(messages: Sequence[Message]) -> Success[Assistant]:
        return Success(Assistant("DONE"))

    async def cancel_at_the_seal() -> None:
        task = asyncio.ensure_future(arun(G, line_parse, FakeEnv(), save_trajectory(tmp_path),
                                          "s", "p"))  # fmt: skip
        for _ in range(1000):  # until the document is written under its temporary name
            await asyncio.sleep(0)
            if list(tmp_path.glob(".*.tmp")) or list(tmp_path.glob("*.json")):
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_at_the_seal())
    (saved,) = tmp_path.glob("*.json")
    assert load_trajectory(saved).outcome == "exit:task_complete"
    assert not list(tmp_path.glob(".*.tmp"))


def test_arun_reads_the_clock_it_is_given_as_run_does(tmp_path: Path) -> None:
    from tests.test_loop import Ticks

    clock = Ticks(50.0)
    path = asyncio.run(arun(scripted_invoke(["DONE"]), line_parse, FakeEnv(),
                            save_trajectory(tmp_path), "s", "p", clock=clock))  # fmt: skip
    stats = load_trajectory(path).stats
    assert (stats.started_at, stats.ended_at, clock.reads) == (51.5, 53.0, 2)
