"""`four stats DIR`: outcomes, distributions, frequent format errors and failing commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from four.cli import main
from four.cli._stats import summarise, trajectory_files
from tests.cli._runs import cli, make_run, priced, sample_run


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    sample_run(folder)
    make_run(folder / "nested", [priced("```bash\nfail x\n```", cost=0.01)] * 3, max_steps=3)
    make_run(folder, [priced("hmm"), priced("hmm"), priced("hmm")])
    killed = make_run(folder / "killed", ["```bash\nfail x\n```", "DONE"])
    killed.unlink()  # only the .jsonl stream is left, without its end record: a kill -9
    stream = killed.with_suffix(".jsonl")
    stream.write_text("".join(stream.read_text().splitlines(keepends=True)[:-1]))
    (folder / "preds.json").write_text('{"x": {"model_patch": ""}}')
    return folder


def test_files_prefer_the_sealed_document(runs: Path) -> None:
    files = list(trajectory_files([runs]))
    assert sum(f.suffix == ".jsonl" for f in files) == 1  # only the killed run's stream
    assert len(files) == 5  # 4 runs and preds.json


def test_summary_counts(runs: Path) -> None:
    s = summarise([runs])
    assert s.runs == 4 and len(s.skipped) == 1 and s.skipped[0].endswith("preds.json")
    assert s.outcomes == {
        "exit:task_complete": 1,
        "max_steps_reached": 1,
        "repeated_format_error": 1,
        "unfinished": 1,
    }
    assert sorted(s.steps) == [2, 3, 3, 6]
    assert s.failing_commands.most_common(1) == [("fail x", 4)]
    # the third "hmm" ended the run before any feedback: two format errors there, one in sample
    assert s.format_errors.most_common() == [
        ("Format error: put your command in a ```bash block.", 3)
    ]


def test_stats_json_as_subprocess(runs: Path) -> None:
    done = cli("stats", "--json", str(runs))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["runs"] == 4
    assert data["steps"]["max"] == 6 and data["steps"]["median"] == 3
    assert data["cost"]["total"] == pytest.approx(0.007 + 0.03 + 0.003)
    assert data["failing_commands"][0] == ["fail x", 4]


def test_stats_text(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(runs), "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("runs: 4  (1 files skipped: not readable trajectories)")
    assert "repeated_format_error" in out and "25.0%" in out
    assert "median" in out and "p90" in out
    bars = out.split("steps per run\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [(b.split()[0], b.split()[-1]) for b in bars] == [
        ("2-2", "1"),
        ("3-3", "2"),
        ("4-4", "0"),
        ("5-5", "0"),
        ("6-6", "1"),
    ]
    assert bars[1].count("█") == 30 and bars[0].count("█") == 15
    assert "      4  fail x" in out
    assert "fail cannot open" not in out  # --top 1


def test_stats_on_nothing_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(tmp_path)]) == 1
    assert capsys.readouterr().out.strip() == "runs: 0"


def test_stats_on_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    done = cli("stats", str(tmp_path / "nope"))
    assert done.returncode == 2 and "neither a folder nor a file" in done.stderr
