"""The thread pool end to end: 200 runs against the loopback model server, resume,
failures as values, the manifest."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from four.batch import Item, Progress, RunContext, RunResult, iter_runs, read_manifest, run_many
from four.trajectory import load_trajectory
from tests.batch._agents import StepModel, alive, manifest_lines, serve_many, server_run


def test_200_runs_of_5_steps_through_the_thread_pool(tmp_path: Path) -> None:
    model = StepModel(steps=5, delay=0.02)
    marker = f"batch200-{time.monotonic_ns()}"
    items = [
        Item(f"task-{i:03d}", f"{marker}-{i}", {"fail": True} if i % 50 == 7 else {"n": i})
        for i in range(200)
    ]
    seen: list[Progress] = []
    with serve_many(model) as server:
        results = run_many(
            server_run(server.url), items, tmp_path, max_concurrency=50, on_progress=seen.append
        )
    assert len(results) == 200
    assert 10 <= model.peak <= 50
    by_id = {r.id: r for r in results}
    assert set(by_id) == {i.id for i in items}
    failed = {i for i, r in by_id.items() if not r.submitted}
    assert failed == {"task-007", "task-057", "task-107", "task-157"}, {
        i: by_id[i].outcome for i in failed
    }
    for key in failed:
        r = by_id[key]
        assert r.outcome == f"crashed: make_run: RuntimeError: setup failed for {key}"
        assert r.trajectory is None and r.final
    for item in items:
        r = by_id[item.id]
        if item.id in failed:
            continue
        assert r.outcome == "exit:task_complete", r
        assert r.steps == 5 and r.prompt_tokens == 50 and r.completion_tokens == 25
        assert r.fields == {"n": item.fields["n"]}
        assert r.trajectory is not None and r.trajectory.parent == tmp_path / "runs" / item.id
        saved = load_trajectory(r.trajectory)
        assert saved.outcome == "exit:task_complete"
        assert item.task in saved.messages[-1].content
    lines = manifest_lines(tmp_path)
    assert len(lines) == 200 and {line["id"] for line in lines} == set(by_id)
    assert read_manifest(tmp_path) == by_id
    assert seen[-1].done == 200 and seen[-1].failed == 4 and seen[-1].running == 0
    assert max(p.running for p in seen) <= 50
    assert alive(marker) == []


def test_a_second_invocation_skips_finished_items_and_reruns_the_others(tmp_path: Path) -> None:
    model = StepModel(steps=2)
    items = [Item(f"t{i}", f"task {i}") for i in range(6)]
    with serve_many(model) as server:
        first = run_many(server_run(server.url), items[:4], tmp_path, max_concurrency=3)
        assert len(first) == 4
        # Mark t1 as cut short by its batch: a later invocation runs it again.
        lines = (tmp_path / "manifest.jsonl").read_text().splitlines()
        edited = [json.loads(line) for line in lines]
        for line in edited:
            if line["id"] == "t1":
                line["final"] = False
        (tmp_path / "manifest.jsonl").write_text(
            "".join(json.dumps(line) + "\n" for line in edited) + '{"id": "t9", "outc'
        )
        calls = model.calls
        second = run_many(server_run(server.url), items, tmp_path, max_concurrency=3)
    assert sorted(r.id for r in second) == ["t1", "t4", "t5"]
    assert model.calls - calls == 3 * 2
    latest = read_manifest(tmp_path)
    assert sorted(latest) == [f"t{i}" for i in range(6)]  # the torn line is ignored
    assert all(r.final and r.submitted for r in latest.values())
    assert len(list((tmp_path / "runs" / "t1").glob("*.json"))) == 2  # both kept


def test_resume_false_runs_everything_again(tmp_path: Path) -> None:
    from four import Finished

    items = [Item("a"), Item("b")]
    assert len(run_many(lambda ctx: Finished(), items, tmp_path)) == 2
    assert run_many(lambda ctx: Finished(), items, tmp_path) == []
    assert len(run_many(lambda ctx: Finished(), items, tmp_path, resume=False)) == 2
    assert len(manifest_lines(tmp_path)) == 4


def test_items_may_be_json_objects_and_ids_must_be_unique(tmp_path: Path) -> None:
    from four import Finished

    out = run_many(lambda ctx: Finished(ctx.task), [{"id": 1, "task": "t", "x": [1]}], tmp_path)
    assert out[0].id == "1" and out[0].fields == {"x": [1]}
    with pytest.raises(ValueError, match="appears twice"):
        run_many(lambda ctx: Finished(), [Item("a"), Item("b"), Item("a")], tmp_path / "2")
    with pytest.raises(ValueError, match="max_concurrency"):
        run_many(lambda ctx: Finished(), [], tmp_path, max_concurrency=0)


def test_ids_that_clean_to_one_name_each_get_their_own_folder(tmp_path: Path) -> None:
    """``a/b`` is cleaned to ``a_b-<16 hex>``; an id spelled as that cleaned name, and
    ids that clean alike (``a:b``, ``a b``), still get folders of their own."""
    from four import Finished
    from four.batch import folder_name

    ids = ["a/b", folder_name("a/b"), "a:b", "a b", "a_b", ".", ".."]
    names = {folder_name(i) for i in ids}
    assert len(names) == len(ids) and not names & {".", "..", ""}
    assert all("/" not in name for name in names)

    def one(ctx: RunContext) -> Finished:
        Path(ctx.output_dir).mkdir(parents=True, exist_ok=True)
        with open(Path(ctx.output_dir, "id.txt"), "x") as f:  # "x": a shared folder fails
            f.write(ctx.id)
        return Finished()

    assert len(run_many(one, [Item(i, i) for i in ids], tmp_path)) == len(ids)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(names)
    for i in ids:
        assert (tmp_path / "runs" / folder_name(i) / "id.txt").read_text() == i


def test_two_batches_cannot_write_one_folder(tmp_path: Path) -> None:
    from four import Finished

    first = iter_runs(lambda ctx: Finished(), [Item("a"), Item("b")], tmp_path, max_concurrency=1)
    assert isinstance(next(first), RunResult)
    with pytest.raises(RuntimeError, match=f"is being run by pid {os.getpid()} on "):
        run_many(lambda ctx: Finished(), [Item("c")], tmp_path)
    assert len(list(first)) == 1


def test_read_saved_reads_a_sealed_trajectory_up_to_its_messages(tmp_path: Path) -> None:
    import dataclasses

    from four import Assistant, Usage, run, save_trajectory, scripted_invoke
    from four.batch._result import read_saved
    from tests._doubles import FakeEnv, line_parse

    big = "x" * 300_000  # messages far past the first block read, never needed
    G = scripted_invoke([Assistant(f"$ echo {big}", usage=Usage(3, 4, 0.5)), "$ submit done"])
    path = run(G, line_parse, FakeEnv(), save_trajectory(tmp_path), prompt=big)
    saved = read_saved(path)
    assert saved is not None and saved.path == path
    assert (saved.outcome, saved.steps, saved.usage.prompt_tokens, saved.usage.cost) == (
        "exit:task_complete",
        2,
        3,
        0.5,
    )
    stream = path.with_suffix(".jsonl")
    assert read_saved(stream) == dataclasses.replace(saved, path=stream)
    # The same document in another layout (indented, messages first) is read whole.
    document = json.loads(path.read_text())
    other = tmp_path / "other.json"
    other.write_text(json.dumps(dict(reversed(document.items())), indent=2))
    assert read_saved(other) == dataclasses.replace(saved, path=other)
    # Not a trajectory, cut short, or missing: None.
    (tmp_path / "list.json").write_text("[1, 2]")
    cut = tmp_path / "cut.json"
    cut.write_text(path.read_text()[:200])
    for bad in ("list.json", "cut.json", "missing.json"):
        assert read_saved(tmp_path / bad) is None


def _metered_run(ctx: RunContext) -> Path:
    from four import Assistant, Usage, run, save_trajectory, scripted_invoke
    from tests._doubles import FakeEnv, line_parse

    n = int(ctx.task)
    G = scripted_invoke([Assistant("$ echo hi", usage=Usage(n, 2 * n, n / 8)), "$ submit done"])
    return run(G, line_parse, FakeEnv(), save_trajectory(ctx.output_dir), prompt=ctx.task)


async def _ametered_run(ctx: RunContext) -> Path:
    import asyncio

    return await asyncio.to_thread(_metered_run, ctx)


@pytest.mark.parametrize("make_run", [_metered_run, _ametered_run], ids=["threads", "async"])
def test_a_result_is_what_its_sealed_document_says_without_reading_it_back(
    tmp_path: Path, make_run: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run sealed in the batch's process is not read back for its result (ten thousand
    runs ending together read less): its outcome, steps and usage are the document's."""
    import four.batch._result as result_module
    from four.batch._result import read_saved

    def no_reading(path: Path) -> None:
        raise AssertionError(f"{path} was read back")

    items = [Item(f"t{i}", str(i)) for i in range(1, 9)]
    with monkeypatch.context() as patched:
        patched.setattr(result_module, "load_head", no_reading)
        results = run_many(make_run, items, tmp_path, max_concurrency=4)  # type: ignore[arg-type]
    assert len(results) == 8
    for r in results:
        assert r.trajectory is not None
        saved = read_saved(r.trajectory)  # now read from the file
        assert saved is not None
        n = int(r.id[1:])
        assert (r.outcome, r.steps) == (saved.outcome, saved.steps) == ("exit:task_complete", 2)
        assert (
            (r.prompt_tokens, r.completion_tokens, r.cost)
            == ((saved.usage.prompt_tokens, saved.usage.completion_tokens, saved.usage.cost))
            == (n, 2 * n, n / 8)
        )
