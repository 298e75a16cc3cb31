"""A batch written to s3:// (a real S3 API server on loopback): each run's files and the
manifest land at the URL, whole; the seal verifies there; four audit, stats, fleet and
watch read the URL; run again, the batch resumes from what the URL says."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from four.batch import Item, run_many
from four.checks import audit
from four.trajectory._destination import Remote
from tests.batch._agents import bash, scripted_run
from tests.batch._s3 import new_bucket, s3_server
from tests.cli._runs import cli

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    with s3_server() as env:
        yield env


@pytest.fixture
def bucket(s3: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    for name, value in s3.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FOUR_CACHE", str(tmp_path / "cache"))  # each test's own copies
    return new_bucket(s3)


def _objects(url: str) -> dict[str, bytes]:
    """Every object under the URL, read back from the server (not any local copy)."""
    import fsspec

    found, root = fsspec.core.url_to_fs(url)
    fs = cast(Any, found)
    return {name[len(root) :].lstrip("/"): fs.cat_file(name) for name in fs.find(root)}


def test_a_batch_lands_at_an_s3_url_and_resumes_from_there(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/evals/today"
    make_run = scripted_run([bash("echo hi"), bash(SUBMIT)], cost=0.1)
    items = [Item(f"t{i}", f"task {i}") for i in range(4)]
    results = run_many(make_run, items, url, max_concurrency=4)
    assert sorted((r.id, r.outcome) for r in results) == [
        (f"t{i}", "exit:task_complete") for i in range(4)
    ]
    stored = _objects(url)
    lines = [json.loads(line) for line in stored["manifest.jsonl"].decode().splitlines()]
    assert sorted(line["id"] for line in lines) == ["t0", "t1", "t2", "t3"]
    for line in lines:  # named from the folder, and there, whole
        assert line["trajectory"].startswith(f"runs/{line['id']}/")
        sealed = stored[line["trajectory"]]
        stream = stored[line["trajectory"].removesuffix(".json") + ".jsonl"]
        assert json.loads(sealed)["outcome"] == "exit:task_complete"
        assert stream.endswith(b"\n")
    # Read back by another machine (a fresh copy): every seal verifies.
    copy = Remote(url, tmp_path / "elsewhere").pull()
    for line in lines:
        assert audit(copy / line["trajectory"]).status == "valid"
    assert abs(sum(line["cost"] for line in lines) - 0.8) < 1e-9
    # Run again on the URL (another local copy): nothing left to do.
    os.environ["FOUR_CACHE"] = str(tmp_path / "cache-2")
    again = run_many(make_run, [*items, Item("t4", "task 4")], url)
    assert [r.id for r in again] == ["t4"]
    assert len(_objects(url)["manifest.jsonl"].decode().splitlines()) == 5


def test_the_readers_take_the_url(bucket: str, tmp_path: Path) -> None:
    url = f"{bucket}/b"
    make_run = scripted_run([bash(SUBMIT)], cost=0.05)
    run_many(make_run, [Item("a"), Item("b")], url)
    env = {k: os.environ[k] for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                      "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}  # fmt: skip
    env["FOUR_CACHE"] = str(tmp_path / "reader")
    audited = cli("audit", url, env=env)
    assert audited.returncode == 0, audited.stderr
    assert "2 valid" in audited.stdout or "valid" in audited.stdout
    stats = cli("stats", "--json", url, env=env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["runs"] == 2
    fleet = cli("fleet", "--json", url, env=env)
    assert fleet.returncode == 0, fleet.stderr
    (folder,) = json.loads(fleet.stdout)
    assert folder["runs"] == 2 and folder["running"] == 0
    watched = cli("watch", "--once", "--json", url, env=env)
    assert watched.returncode == 0, watched.stderr
    assert len(json.loads(watched.stdout)["runs"]) == 2
    one = cli("audit", f"{url}/{_first_trajectory(url)}", env=env)
    assert one.returncode == 0, one.stderr
    missing = cli("stats", f"{bucket}/nothing-here", env=env)
    assert missing.returncode == 2 and "nothing there" in missing.stderr


def _first_trajectory(url: str) -> str:
    line = _objects(url)["manifest.jsonl"].decode().splitlines()[0]
    return str(json.loads(line)["trajectory"])
