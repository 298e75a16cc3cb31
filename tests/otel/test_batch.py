"""Many runs at once: a batch of 1,000 runs arrives whole at the real receiver."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from returns.result import Result, Success

from four import Finished, regex_parse, run, save_trajectory, scripted_invoke
from four.batch import RunContext, ThreadPool, run_many
from four.otel import flush, otel_watch
from four.trajectory import load_trajectory
from four.types import Action, ExecutionError, Observation, Submitted
from tests.otel.conftest import Receiver, in_project

RUNS = 1000


def test_a_batch_of_a_thousand_runs_is_exported_without_loss(
    receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_project(monkeypatch, "batch-of-1000")

    def execute(action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return Success(Observation("<returncode>0</returncode>", 0))  # no process: quick

    def make_run(ctx: RunContext) -> Path:
        G = scripted_invoke(["```bash\ntrue\n```", "done"])
        watch = otel_watch(receiver.url, then=ctx.watch)
        return run(G, regex_parse(finish_on_plain_text=True), execute,
                   save_trajectory(ctx.output_dir), prompt=ctx.task, watch=watch)  # fmt: skip

    items = [{"id": f"t{i}", "task": f"task {i}"} for i in range(RUNS)]
    results = run_many(make_run, items, tmp_path, pool=ThreadPool(8))
    assert Counter(r.outcome for r in results) == {Finished().text: RUNS}
    assert flush(120)
    sender = otel_watch(receiver.url).sender
    assert (sender.sent, sender.dropped, sender.failed) == (4 * RUNS, 0, 0)
    traces = set()
    for result in results:
        assert result.trajectory is not None
        record = load_trajectory(result.trajectory).stats.extra["otel"]
        assert isinstance(record, dict)
        traces.add(record["trace_id"])
    assert len(traces) == RUNS
    receiver.spans(None, RUNS, project="batch-of-1000", timeout=600, roots=True)
    spans = receiver.spans(None, 4 * RUNS, project="batch-of-1000", timeout=300)
    assert len(spans) == 4 * RUNS  # each run: two model calls, one command, the run
    roots = [s for s in spans if not s.get("parent_span_id")]
    assert {str(s["trace_id"]) for s in roots} == traces
    assert Counter(str(s["name"]) for s in spans) == {
        "invoke_agent four": RUNS, "chat scripted": 2 * RUNS, "execute_tool bash": RUNS,
    }  # fmt: skip
