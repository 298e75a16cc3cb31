"""emit: streaming JSON Lines, sealed documents, unique names, loading every format."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from four import (
    Assistant,
    Finished,
    Message,
    ToolCall,
    ToolResult,
    User,
    load_trajectory,
    replay_invoke,
    run,
    save_trajectory,
    scripted_invoke,
)
from four._types import NO_USAGE, RunInfo, RunStats
from four.trajectory import FORMAT, TrajectoryError
from tests._doubles import FakeEnv, line_parse

ROOT = Path(__file__).resolve().parents[1]


def test_document_has_format_outcome_messages_and_run_facts(tmp_path: Path) -> None:
    path = run(
        scripted_invoke(["$ a", "DONE b"]),
        line_parse,
        FakeEnv(),
        save_trajectory(tmp_path),
        "s",
        "p",
    )
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT
    assert data["outcome"] == "exit:task_complete"
    assert data["outcome_detail"] == {"kind": "exit:task_complete", "output": "b"}
    assert [m["role"] for m in data["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert len(data["timestamps"]) == 5
    assert data["info"]["components"]["V2"]["type"].endswith("FakeEnv")
    assert data["info"]["max_steps"] == 100
    assert data["stats"]["steps"] == 2 and data["stats"]["wall_time"] >= 0
    stream = path.with_suffix(".jsonl")
    assert data["stream"] == stream.name
    assert load_trajectory(stream).messages == load_trajectory(path).messages


def test_sixty_four_concurrent_runs_give_sixty_four_files(tmp_path: Path) -> None:
    emit = save_trajectory(tmp_path)
    paths: list[Path] = []
    lock = threading.Lock()

    def one() -> None:
        p = run(scripted_invoke(["$ x", "DONE"]), line_parse, FakeEnv(), emit, "s", "p")
        with lock:
            paths.append(p)

    threads = [threading.Thread(target=one) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(paths)) == 64
    assert len(list(tmp_path.glob("*.json"))) == 64
    assert len(list(tmp_path.glob("*.jsonl"))) == 64
    assert not list(tmp_path.glob(".*.tmp"))


def test_killed_process_leaves_every_completed_step(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path[:0] = [{str(ROOT / "src")!r}, {str(ROOT)!r}]
        from four import run, save_trajectory, scripted_invoke
        from tests._doubles import FakeEnv, line_parse

        class Killer(FakeEnv):
            def __call__(self, action):
                if action.command == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                return super().__call__(action)

        run(scripted_invoke(["$ one", "$ two", "$ kill"]), line_parse, Killer(),
            save_trajectory({str(tmp_path)!r}), "s", "p")
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not list(tmp_path.glob("*.json"))
    (stream,) = tmp_path.glob("*.jsonl")
    trajectory = load_trajectory(stream)
    assert trajectory.outcome is None
    assert User("ran one", "observation", 0) in trajectory.messages
    assert User("ran two", "observation", 0) in trajectory.messages
    last = trajectory.messages[-1]
    assert isinstance(last, Assistant) and last.content == "$ kill"


def test_a_half_written_last_line_is_ignored(tmp_path: Path) -> None:
    path = run(
        scripted_invoke(["DONE"]), line_parse, FakeEnv(), save_trajectory(tmp_path), "s", "p"
    )
    stream = path.with_suffix(".jsonl")
    with stream.open("a") as f:
        f.write('{"type": "message", "message": {"role": "us')
    assert len(load_trajectory(stream).messages) == 3


def test_tool_calls_and_metadata_round_trip(tmp_path: Path) -> None:
    turn = Assistant(
        "thinking aloud",
        (ToolCall("c1", "bash", '{"command": "ls"}'),),
        reasoning="hidden",
        thinking=({"type": "thinking", "thinking": "t", "signature": "s"},),
        finish_reason="tool_calls",
        model="m",
    )
    messages: list[Message] = [User("hi"), turn, ToolResult("c1", "out")]
    path = save_trajectory(tmp_path)(messages, Finished("x"))
    loaded = load_trajectory(path).messages
    assert list(loaded) == messages


def test_unicode_and_lone_surrogates_survive(tmp_path: Path) -> None:
    weird = "snow \u2603 and a lone surrogate \udcff and NUL \x00"
    path = save_trajectory(tmp_path)([User(weird)], Finished())
    assert load_trajectory(path).messages == (User(weird),)


def test_load_mini_swe_agent_v2_and_v1(tmp_path: Path) -> None:
    v2 = {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"exit_status": "Submitted", "submission": "ok"},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "task"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                    }
                ],
                "extra": {"cost": 0.1},
            },
            {"role": "tool", "tool_call_id": "t1", "content": "a b"},
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
        ],
    }
    p2 = tmp_path / "x.traj.json"
    p2.write_text(json.dumps(v2))
    t2 = load_trajectory(p2)
    assert t2.outcome == "Submitted" and t2.format == "mini-swe-agent-1.1"
    assert t2.messages[1] == User("task")
    assert t2.messages[2].tool_calls[0].name == "bash"  # type: ignore[union-attr]
    assert len(t2.messages) == 4
    p1 = tmp_path / "old.traj.json"
    p1.write_text(
        json.dumps(
            [{"role": "user", "content": "t"}, {"role": "assistant", "content": "```bash\nls\n```"}]
        )
    )
    assert [m.content for m in replay_invoke(p1).replies] == ["```bash\nls\n```"]  # type: ignore[union-attr]


def test_replay_reproduces_a_saved_run(tmp_path: Path) -> None:
    first = run(
        scripted_invoke(["$ a", "$ b", "DONE c"]),
        line_parse,
        FakeEnv(),
        save_trajectory(tmp_path / "1"),
        "s",
        "p",
    )
    env = FakeEnv()
    second = run(replay_invoke(first), line_parse, env, save_trajectory(tmp_path / "2"), "s", "p")
    assert env.seen == ["a", "b"]
    assert load_trajectory(second).messages == load_trajectory(first).messages


@pytest.mark.parametrize(
    ("content", "error"),
    [("not json", "line 1 is not JSON"), ('{"a": 1}', "has no message list")],
)
def test_bad_files_give_clear_errors(tmp_path: Path, content: str, error: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(TrajectoryError, match=error):
        load_trajectory(p)
    with pytest.raises(TrajectoryError, match="line 1 is not JSON"):
        (tmp_path / "bad.jsonl").write_text("garbage\n")
        load_trajectory(tmp_path / "bad.jsonl")


def test_final_write_is_atomic_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        save_trajectory(tmp_path)([User("x")], Finished())
    assert not list(tmp_path.glob("*.json")) and not list(tmp_path.glob(".*"))
    assert len(list(tmp_path.glob("*.jsonl"))) == 1


def test_the_document_is_on_disk_before_it_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync folder" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync file")
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    save_trajectory(tmp_path)([User("x")], Finished())
    assert events == ["fsync file", "replace", "fsync folder"]


def test_short_writes_are_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write

    def halves(fd: int, data: bytes | memoryview) -> int:  # a signal, or a nearly full disk
        return real_write(fd, data[: max(1, len(data) // 2)])

    monkeypatch.setattr(os, "write", halves)
    path = run(scripted_invoke(["$ x", "DONE y"]), line_parse, FakeEnv(), save_trajectory(tmp_path))
    monkeypatch.undo()
    whole = load_trajectory(path)
    assert whole.outcome == "exit:task_complete" and len(whole.messages) == 5
    streamed = load_trajectory(path.with_suffix(".jsonl"))
    assert streamed.messages == whole.messages


def test_sealing_twice_replaces_the_document(tmp_path: Path) -> None:
    sink = save_trajectory(tmp_path).open(RunInfo({}, 1, 1, 0.0))
    sink.append(User("x"))
    first = sink.close([User("x")], Finished("a"), RunStats(0, NO_USAGE, 0.0, 1.0))
    again = sink.close([User("x")], Finished("b"), RunStats(0, NO_USAGE, 0.0, 1.0))
    assert first == again and load_trajectory(again).outcome == "exit:task_complete"
    assert json.loads(again.read_text())["outcome_detail"]["output"] == "b"
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".jsonl"]


def test_component_settings_are_recorded_with_secrets_masked() -> None:
    from dataclasses import dataclass

    from four._describe import describe

    @dataclass(frozen=True)
    class Model:
        api_key: str = "sk-123"
        access_token: str = "t"
        token_limit: int = 5
        max_tokens: int = 7

    described = describe(Model())
    assert isinstance(described, dict)
    assert described["api_key"] == described["access_token"] == "***"
    assert described["token_limit"] == 5 and described["max_tokens"] == 7
    writer = describe(save_trajectory("/tmp/four-runs"))
    assert isinstance(writer, dict) and writer["output_dir"] == "/tmp/four-runs"  # not a repr


def test_described_sequences_and_classes() -> None:
    from dataclasses import dataclass, field
    from pathlib import Path

    from four._describe import describe

    @dataclass(frozen=True)
    class Inner:
        depth: int = 1

    @dataclass(frozen=True)
    class Outer:
        names: tuple[str, ...] = ("a", "b")
        mixed: list[object] = field(default_factory=lambda: [1, None, Path("/x"), Inner()])
        kinds: frozenset[str] = frozenset({"k"})

    inner = {"type": f"{Inner.__module__}.{Inner.__qualname__}", "depth": 1}
    assert describe(Outer()) == {
        "type": f"{Outer.__module__}.{Outer.__qualname__}",
        "names": ["a", "b"],
        "mixed": [1, None, "/x", inner],
        "kinds": ["k"],
    }
    assert describe(Outer) == f"{Outer.__module__}.{Outer.__qualname__}"  # the class: a name


def test_stream_records_come_whole_even_for_a_run_with_no_message(tmp_path: Path) -> None:
    writer = save_trajectory(tmp_path)
    sink = writer.open(RunInfo({}, 3, 3, 0.0))
    path = sink.close([], Finished(), RunStats(0, NO_USAGE, 0.0, 0.0))
    records = [json.loads(line) for line in sink.jsonl.read_text().splitlines()]
    assert [r["type"] for r in records] == ["start", "end"]
    assert load_trajectory(path).outcome == "exit:task_complete"
    sink = writer.open(RunInfo({}, 3, 3, 0.0))
    sink.append(User("hi"))
    lines = sink.jsonl.read_text().splitlines()  # written through, before the run ends
    assert [json.loads(line)["type"] for line in lines] == ["start", "message"]
    del sink  # dropped without close: its descriptor is closed, the stream stays readable
    (stream,) = [p for p in tmp_path.glob("*.jsonl") if p != path.with_suffix(".jsonl")]
    assert load_trajectory(stream).outcome is None
