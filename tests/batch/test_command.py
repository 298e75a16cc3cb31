"""``four batch``: the agent of ``four run`` on every task of a file, against the
loopback model server; the manifest, resume, the summary, ``four stats`` on its output."""

from __future__ import annotations

import gc
import importlib.util
import json
from pathlib import Path

import pytest

from four.batch import read_manifest
from four.cli import main
from four.cli._batch import batch_command
from four.cli._errors import UsageError
from tests.batch._agents import StepModel, batch_args, serve_many, write_tasks


# litellm makes an HTTP client per thread and drops it unclosed: its sockets are
# garbage-collected with a ResourceWarning (nothing of ours).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_four_batch_runs_every_task_records_them_and_skips_them_next_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FOUR_MODEL", "FOUR_API_BASE", "FOUR_ENV", "FOUR_WORKERS", "FOUR_RAY"):
        monkeypatch.delenv(name, raising=False)
    tasks = write_tasks(tmp_path / "tasks.jsonl", 5)
    out = tmp_path / "out"
    model = StepModel(steps=3)
    with serve_many(model) as server:
        words = [str(tasks), "--model", "test-model", "--api-base", server.url, "-w", "3"]
        assert batch_command(batch_args(*words, "-o", str(out))) == 0
        lines = capsys.readouterr()
        assert "5 runs: exit:task_complete 5" in lines.out
        assert lines.err.count("exit:task_complete") == 5  # a line per result (no terminal)
        latest = read_manifest(out)
        assert sorted(latest) == [f"t{i}" for i in range(5)]
        assert all(r.submitted and r.steps == 3 for r in latest.values())
        assert latest["t2"].fields == {"repo": "r2"}
        calls = model.calls
        assert batch_command(batch_args(*words, "-o", str(out), "--json")) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["ran"] == 0 and summary["unfinished"] == []
        assert model.calls == calls
    from four.cli._stats import summarise

    stats = summarise([str(out)])  # `four stats DIR` on the batch folder
    assert stats.runs == 5 and dict(stats.outcomes) == {"exit:task_complete": 5}
    assert stats.skipped == [str(out / "manifest.jsonl")]  # not a trajectory
    gc.collect()  # litellm's dropped clients go now, under this test's filter


def test_bad_task_files_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "no id"}\n')
    with pytest.raises(UsageError, match='needs an "id"'):
        batch_command(batch_args(str(bad), "--model", "m"))
    assert main(["batch", str(tmp_path / "missing.jsonl"), "--model", "m"]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_without_o_the_batch_is_kept_outside_the_workspace_and_resumed_from_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FOUR_MODEL", "FOUR_API_BASE", "FOUR_ENV", "FOUR_WORKERS", "FOUR_BATCH_DIR"):
        monkeypatch.delenv(name, raising=False)
    workspace, state = tmp_path / "work", tmp_path / "state"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    tasks = write_tasks(workspace / "tasks.jsonl", 2)
    model = StepModel(steps=2)
    with serve_many(model) as server:
        words = [str(tasks), "--model", "test-model", "--api-base", server.url]
        assert batch_command(batch_args(*words)) == 0
        (folder,) = (state / "four" / "batches").iterdir()
        assert folder.name.startswith("tasks-")
        assert sorted(read_manifest(folder)) == ["t0", "t1"]
        assert str(folder / "manifest.jsonl") in capsys.readouterr().out
        assert sorted(p.name for p in workspace.iterdir()) == ["tasks.jsonl"]  # nothing here
        calls = model.calls
        assert batch_command(batch_args(*words)) == 0  # the same file: the same batch, resumed
        assert model.calls == calls and "0 runs" in capsys.readouterr().out
    gc.collect()


def test_a_batch_folder_the_agents_commands_could_read_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FOUR_ENV", raising=False)
    monkeypatch.chdir(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", 1)
    assert main(["batch", str(tasks), "--model", "m", "--api-base", "http://127.0.0.1:9/v1",
                 "-o", "here"]) == 2  # fmt: skip
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("four batch: error: -o here is inside the agent's workspace")
    assert line.endswith("or --output-in-workspace to allow it")
    assert not (tmp_path / "here").exists()


def test_an_object_store_url_whose_package_is_missing_is_one_usage_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fsspec")
    if importlib.util.find_spec("gcsfs") is not None:
        pytest.skip("gcsfs is installed: gs:// URLs can be used here")
    monkeypatch.setenv("FOUR_CACHE", str(tmp_path / "cache"))
    tasks = write_tasks(tmp_path / "tasks.jsonl", 1)
    assert main(["batch", str(tasks), "--model", "m", "--api-base", "http://127.0.0.1:9/v1",
                 "-o", "gs://bucket/evals"]) == 2  # fmt: skip
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("four batch: error: gs://bucket/evals: ")
    assert "gcsfs" in line
