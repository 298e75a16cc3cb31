"""`four run --otel` (on by the standard variable too), `four batch --otel` and `four export
otel`, against the loopback model server and the real receiver."""

from __future__ import annotations

from pathlib import Path

import pytest

from four.cli import main
from four.otel import flush, step_span_id
from four.trajectory import load_trajectory
from tests._server import LoopbackServer, chat
from tests.batch._agents import StepModel, write_tasks
from tests.otel.conftest import Receiver, in_project, nowhere

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _flags(server: LoopbackServer, tmp_path: Path) -> list[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return ["--model", "test-model", "--api-base", server.url, "--cwd", str(work), "-q"]


def test_run_is_traced_when_the_standard_variable_names_a_receiver(
    server: LoopbackServer, receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    server.push(chat("```bash\necho hi\n```"), chat(SUBMIT))
    runs = tmp_path / "runs"
    assert main(["run", "say hi", *_flags(server, tmp_path), "-o", str(runs)]) == 0
    assert flush(60)
    (path,) = runs.glob("*.json")
    record = load_trajectory(path).stats.extra["otel"]
    assert isinstance(record, dict)
    live = receiver.spans(str(record["trace_id"]), 5)
    names = sorted(str(s["name"]) for s in live)
    assert names == ["chat test-model", "chat test-model", "execute_tool bash",
                     "execute_tool bash", "invoke_agent four"]  # fmt: skip


def test_a_run_made_offline_is_exported_later_with_its_recorded_ids_and_times(
    server: LoopbackServer,
    receiver: Receiver,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", nowhere())  # down
    server.push(chat("```bash\necho hi\n```"), chat(SUBMIT))
    runs = tmp_path / "runs"
    assert main(["run", "say hi", *_flags(server, tmp_path), "-o", str(runs)]) == 0
    (path,) = runs.glob("*.json")
    saved = load_trajectory(path)
    record = saved.stats.extra["otel"]
    assert isinstance(record, dict)
    steps = record["steps"]
    assert isinstance(steps, dict)
    in_project(monkeypatch, "offline")
    capsys.readouterr()
    assert main(["export", "otel", str(runs), "--endpoint", receiver.url]) == 0
    assert capsys.readouterr().out.startswith(f"exported 1 runs (5 spans) to {receiver.url}")
    spans = receiver.spans(str(record["trace_id"]), 5, project="offline")
    by_id = {str(s["span_id"]): s for s in spans}
    root = by_id[str(record["span_id"])]
    started = saved.info.started_at
    assert isinstance(started, float)
    assert abs(int(str(root["start_time_unix_nano"])) - round(started * 1e9)) < 1000  # (us)
    trace_id = int(str(record["trace_id"]), 16)
    ops, times = steps["op"], steps["t"]
    assert ops == "ctct" and isinstance(times, list)  # a model call, its command, twice
    for index, op in enumerate(ops):
        span = by_id[f"{step_span_id(trace_id, index):016x}"]  # each step, its id as live
        assert span["parent_span_id"] == record["span_id"]
        assert span["name"] == ("chat test-model" if op == "c" else "execute_tool bash")
        start = times[2 * index]
        assert isinstance(start, int)  # microseconds since the run began
        at = round((started + start / 1e6) * 1e9)
        assert abs(int(str(span["start_time_unix_nano"])) - at) < 1000  # Phoenix keeps us


def test_no_otel_turns_it_off_and_export_says_what_it_could_not_send(
    server: LoopbackServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    down = nowhere()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", down)
    server.push(chat(SUBMIT))
    runs = tmp_path / "runs"
    assert main(["run", "go", *_flags(server, tmp_path), "-o", str(runs), "--no-otel"]) == 0
    (path,) = runs.glob("*.json")
    assert "otel" not in load_trajectory(path).stats.extra
    (runs / "notes.json").write_text("{}")  # no trajectory: skipped, named
    code = main(["export", "otel", str(runs), "--endpoint", down, "--timeout", "30"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"four export: skipped {runs / 'notes.json'}" in err
    assert f"2 of 2 spans of 1 runs were not taken by {down}/v1/traces" in err


def test_batch_sends_each_run_as_its_own_trace(
    server: LoopbackServer, receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.default = StepModel(steps=2)
    tasks = write_tasks(tmp_path / "tasks.jsonl", 3)
    out = tmp_path / "batch"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{receiver.url}/v1/traces")
    assert main(["batch", str(tasks), "-o", str(out), "--otel", *_flags(server, tmp_path)]) == 0
    assert flush(60)
    saved = [load_trajectory(p) for p in sorted(out.rglob("*.json")) if p.parent.name != "batch"]
    records = [r.stats.extra.get("otel") for r in saved]
    traces = {str(r["trace_id"]) for r in records if isinstance(r, dict)}
    assert len(traces) == 3
    for trace in traces:
        spans = receiver.spans(trace, 5)  # a command, then one that submits
        assert sorted(str(s["name"]) for s in spans) == [
            "chat test-model", "chat test-model", "execute_tool bash", "execute_tool bash",
            "invoke_agent four",
        ]  # fmt: skip
