"""For any model, any check and any number of retries per reason: the run ends, the judging stays within initial_rank + 1,
the stored receipts audit as valid, and any edit to one of them audits as invalid."""

from __future__ import annotations

import json
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given
from hypothesis import strategies as st

from four import audit, load_trajectory, run, save_trajectory, scripted_invoke
from four.checks import Claim, verify
from four.quaternary import CheckResult, ComputeNeed, EvidenceNeed, iff, maybe, no, yes
from tests._doubles import FakeEnv, line_parse

REPLIES = st.lists(
    st.sampled_from(["DONE out", "$ ls", "prose", "$ submit final"]), min_size=1, max_size=12
)
VERDICTS = st.lists(
    st.one_of(
        st.builds(no, st.sampled_from(["r1", "r2", "r3", "r4"])),
        st.just(yes()),
        st.builds(lambda e: maybe(EvidenceNeed(e)), st.sampled_from(["logs", "unknown"])),
        st.builds(lambda s: maybe(ComputeNeed(s)), st.sampled_from(["s1", "s2", "s3"])),
        st.builds(iff, st.sampled_from(["dep", "other"])),
    ),
    min_size=1,
    max_size=12,
)


def edits(value: object, path: tuple[object, ...] = ()) -> list[tuple[tuple[object, ...], object]]:
    """Every leaf of a JSON value, with a changed value for it."""
    if isinstance(value, dict):
        return [e for k, v in value.items() for e in edits(v, (*path, k))]
    if isinstance(value, list):
        return [e for i, v in enumerate(value) for e in edits(v, (*path, i))]
    if isinstance(value, bool):
        return [(path, not value)]
    if isinstance(value, int | float):
        return [(path, value + 1)]
    if isinstance(value, str):
        return [(path, value + "x")]
    return [(path, 0)]


def setting(document: object, path: tuple[object, ...], new: object) -> object:
    copy = json.loads(json.dumps(document))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


@given(
    REPLIES,
    VERDICTS,
    st.integers(1, 8),
    st.integers(0, 3),
    st.integers(0, 2),
    st.integers(1, 3),
    st.data(),
)
def test_verified_runs_are_bounded_and_auditable(
    replies: list[str],
    results: list[CheckResult],
    max_steps: int,
    failures: int,
    compute: int,
    retries: int,
    data: st.DataObject,
) -> None:
    calls = 0

    def check(claim: Claim) -> CheckResult:
        nonlocal calls
        calls += 1
        return results[(calls - 1) % len(results)]

    verifier = verify(
        check,
        failures=failures,
        compute=compute,
        compute_steps=2,
        evidence={"logs": "ls"},
        dependencies={"dep": lambda claim: calls % 2 == 0 or None},
        retries_per_reason=retries,
    )
    # F (each reason's slot and its retries) + evidence + compute + dependencies
    rank0 = failures * retries + 1 + compute + 1
    assert len(verifier.config().failure_alphabet) == failures * retries
    with TemporaryDirectory() as tmp:
        path = run(
            scripted_invoke(replies),
            line_parse,
            FakeEnv(),
            save_trajectory(tmp),
            "s",
            "p",
            max_steps,
            check=verifier,
        )
        assert calls <= rank0 + 1
        result = audit(path)
        assert result.valid, result.errors
        assert result.evaluations == calls and result.initial_rank == rank0
        document = json.loads(Path(path).read_text())
        receipts = document["stats"]["verdicts"]["receipts"]
        leaves = edits(receipts)
        if calls and leaves:
            where, new = data.draw(st.sampled_from(leaves))
            edited = setting(document, ("stats", "verdicts", "receipts", *where), new)
            target = Path(tmp) / "edited.json"
            target.write_text(json.dumps(edited))
            assert not audit(load_trajectory(target)).valid, where
