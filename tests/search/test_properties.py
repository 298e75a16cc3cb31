"""Laws of a search, over drawn checks and models: the controller's bound holds per
attempt, so a task costs at most K x (initial_rank + 1) judgements whatever the check
says; and every search's group record audits valid."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from four import regex_parse, save_trajectory
from four.checks import Claim, Verifier, verify
from four.execute import local_env
from four.invoke import scripted_invoke
from four.quaternary import CheckResult, ComputeNeed, maybe, no, rank, yes
from four.search import Attempt, Search, audit_group

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
WORK = "```bash\ntrue\n```"

verdicts = st.one_of(
    st.sampled_from(["a", "b", "c", "d", "e"]).map(lambda reason: no(f"failed: {reason}")),
    st.just(yes()),
    st.sampled_from(["x", "y"]).map(lambda step: maybe(ComputeNeed(step))),
)


def _check(drawn: Sequence[CheckResult]) -> Callable[[Claim], CheckResult]:
    said: Iterator[CheckResult] = iter(drawn)

    def check(claim: Claim) -> CheckResult:
        return next(said, no("failed: a"))  # then the same reason again and again

    return check


@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(1, 4),
    failures=st.integers(0, 3),
    compute=st.integers(0, 2),
    retries=st.integers(1, 3),
    checks=st.lists(st.lists(verdicts, max_size=10), min_size=4, max_size=4),
    replies=st.lists(
        st.lists(st.sampled_from([SUBMIT, WORK]), max_size=12), min_size=4, max_size=4
    ),
)
def test_a_task_costs_at_most_k_times_initial_rank_plus_one_judgements(
    k: int,
    failures: int,
    compute: int,
    retries: int,
    checks: list[list[CheckResult]],
    replies: list[list[str]],
) -> None:
    def verifier(index: int) -> Verifier:
        return verify(
            _check(checks[index - 1]),
            failures=failures,
            compute=compute,
            compute_steps=2,
            retries_per_reason=retries,
        )

    config = verifier(1).config()
    initial = rank(config, config.initial_state())
    with tempfile.TemporaryDirectory() as folder:
        work, runs = Path(folder, "work"), Path(folder, "runs")
        work.mkdir()

        def make(a: Attempt) -> Path:
            return a.run(
                scripted_invoke([*replies[a.index - 1], SUBMIT] * 4),
                regex_parse(),
                local_env(cwd=a.cwd),
                save_trajectory(runs),
                max_steps=12,
                check=verifier(a.index),
            )

        search: Search[Path] = Search(k, "t", workspace=work, loop_repeats=0)
        search.run(make)
        assert 1 <= len(search.members) <= k
        found = audit_group(search.record or "")
        assert found.valid, found.errors
        assert found.evaluations <= found.bound <= k * (initial + 1)
        accepted = [m.link.index for m in search.members if m.accepted]
        assert accepted in ([], [len(search.members)])  # the first accepted ends it
