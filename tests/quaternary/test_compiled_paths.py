"""The compiled core's own paths: a run of NOs ending in a YES or a HOLD is built and
audited in C (the reference module is never consulted), every other receipt shape is
built and audited as the reference does, and the audit of long runs of NOs reports
exactly what the reference audit reports."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from four.quaternary import (
    ComputeNeed,
    EvaluationReceipt,
    EvidenceNeed,
    QICTConfig,
    QICTController,
    ResolutionOutcome,
    TransitionReceipt,
    _accounting,
    _accounting_py,
    iff,
    maybe,
    no,
    yes,
)
from four.quaternary._state import AuditCursor, evolve, set_prefix

CONFIG = QICTConfig(
    failure_alphabet={"f0", "f1", "f2"},
    evidence_alphabet={"g0", "g1"},
    compute_alphabet={"k0", "k1"},
    dependency_alphabet={"d0", "d1", "d2"},
    admissible_dependencies={"d0", "d1"},
    lease_ticks=3,
)
Step = Callable[[QICTController], object]


def _lease(controller: QICTController) -> str:
    lease = controller.state.pending_lease
    assert lease is not None
    return lease.lease_id


def _evidence(name: str) -> Step:
    return lambda c: c.process(maybe(EvidenceNeed(name)))


def _compute(name: str) -> Step:
    return lambda c: c.process(maybe(ComputeNeed(name)))


def _returned(c: QICTController) -> object:
    return c.evidence_returned(_lease(c))


def _resolved(outcome: ResolutionOutcome) -> Step:
    return lambda c: c.resolve_dependency(_lease(c), outcome)


RUN: list[Step] = [
    lambda c: c.process(no("f0")),
    _compute("k0"),
    _evidence("g0"),
    lambda c: c.advance_clock(1),
    _returned,
    lambda c: c.process(iff("d0")),
    _resolved(ResolutionOutcome.HOLDS),
    lambda c: c.process(no("f1")),
]
ENDINGS: dict[str, list[Step]] = {
    "accept": [lambda c: c.process(yes())],
    "bind, fail, accept": [
        lambda c: c.process(iff("d1")),
        _resolved(ResolutionOutcome.FAILS),
        lambda c: c.process(yes()),
    ],
    "repeated failure": [lambda c: c.process(no("f0"))],
    "unknown failure": [lambda c: c.process(no("zz"))],
    "repeated evidence": [_evidence("g0")],
    "repeated compute": [_compute("k0")],
    "untyped maybe": [lambda c: c.process(maybe("free text"))],
    "inadmissible dependency": [lambda c: c.process(iff("d2"))],
    "repeated dependency": [lambda c: c.process(iff("d0"))],
    "clock expires lease": [_evidence("g1"), lambda c: c.advance_clock(9)],
    "clock stands still": [_evidence("g1"), lambda c: c.advance_clock(0)],
    "expire": [_evidence("g1"), lambda c: c.expire(_lease(c))],
    "wrong lease": [_evidence("g1"), lambda c: c.evidence_returned("nope")],
    "evidence for a dependency": [lambda c: c.process(iff("d1")), _returned],
    "resolution of evidence": [_evidence("g1"), _resolved(ResolutionOutcome.HOLDS)],
    "no pending lease": [lambda c: c.evidence_returned("x")],
    "invalidate resolved": [lambda c: c.invalidate_dependency("d0")],
    "invalidate unknown": [lambda c: c.invalidate_dependency("dz")],
}


# Tests of the compiled core alone: the autouse ``accounting`` fixture takes just "c".
only_c = pytest.mark.parametrize("accounting", ["c"], indirect=True)


@pytest.fixture
def compiled(accounting: ModuleType) -> ModuleType:
    assert accounting is not _accounting_py
    return accounting


@pytest.fixture
def no_reference(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make any use of the reference transitions or audit fail the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the compiled core fell back to the reference module")

    for name in ("_evaluation_transition", "_audit_one"):
        monkeypatch.setattr(_accounting_py, name, refuse)
    yield


def _run(ending: list[Step]) -> QICTController:
    controller = QICTController(CONFIG)
    for step in [*RUN, *ending]:
        step(controller)
    return controller


@only_c
@pytest.mark.parametrize("ending", ["accept", "repeated failure", "unknown failure"])
def test_runs_of_nos_are_built_and_audited_in_c(
    compiled: ModuleType, ending: str, no_reference: None
) -> None:
    controller = QICTController(CONFIG)
    for step in [lambda c: c.process(no("f0")), lambda c: c.process(no("f1")), *ENDINGS[ending]]:
        step(controller)
    result = controller.audit()
    assert result.valid, result.errors
    assert result.evaluations == len(controller.receipts)


@only_c
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_every_receipt_shape_audits_valid(compiled: ModuleType, ending: str) -> None:
    controller = _run(ENDINGS[ending])
    result = controller.audit()
    assert result.valid, result.errors
    evaluations = sum(isinstance(r, EvaluationReceipt) for r in controller.receipts)
    assert result.evaluations == evaluations


@only_c
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_compiled_traces_equal_reference_traces(
    compiled: ModuleType, ending: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _run(ENDINGS[ending]).receipts
    monkeypatch.setattr(_accounting, "evaluate", _accounting_py.evaluate)
    monkeypatch.setattr(_accounting, "handle", _accounting_py.handle)
    reference = _run(ENDINGS[ending]).receipts
    assert built == reference
    assert [r.digest for r in built] == [r.digest for r in reference]


# --------------------------------------------------------------------------- runs of NOs


def _nos(reasons: list[str]) -> tuple[QICTConfig, list[TransitionReceipt]]:
    config = QICTConfig(failure_alphabet=set(reasons))
    controller = QICTController(config)
    for reason in reasons:
        controller.process(no(reason))
    return config, list(controller.receipts)


def _audit(module: ModuleType, config: QICTConfig, receipts: list[Any]) -> Any:
    start = config.initial_state()
    cursor = AuditCursor(start, module.rank(config, start))
    module.audit_feed(config, cursor, receipts, 0)
    return module.audit_result(config, cursor, receipts[-1].digest if receipts else None)


# reasons of 3 to 200 characters
REASONS = [f"r{i}:" + "x" * (i * 7 % 61 if i % 9 else 150 + i) for i in range(37)]


@only_c
def test_runs_of_nos_chain_like_the_reference(compiled: ModuleType) -> None:
    config, receipts = _nos(REASONS)
    assert [r.digest for r in receipts] == [
        _accounting_py.receipt_digest(prev, r)
        for prev, r in zip(
            [_accounting_py.genesis(config, config.initial_state())]
            + [r.digest for r in receipts[:-1]],
            receipts,
            strict=True,
        )
    ]
    result = _audit(compiled, config, receipts)
    assert result.valid and result.evaluations == len(REASONS) and result.final_rank == 0


def _tamperings(receipt: Any) -> list[Any]:
    after = receipt.after
    return [
        dataclasses.replace(receipt, digest=bytes([receipt.digest[0] ^ 1]) + receipt.digest[1:]),
        dataclasses.replace(receipt, payload=receipt.payload + "!"),
        dataclasses.replace(receipt, evaluation_index=receipt.evaluation_index + 1),
        dataclasses.replace(
            receipt, after=dataclasses.replace(after, compute_budget=after.compute_budget + 1)
        ),
    ]


@only_c
@pytest.mark.parametrize("position", [0, 1, 3, 4, 5, 7, 8, 17, 35, 36])
def test_tampered_runs_of_nos_report_what_the_reference_reports(
    compiled: ModuleType, position: int
) -> None:
    config, receipts = _nos(REASONS)
    for variant in _tamperings(receipts[position]):
        tampered = [*receipts[:position], variant, *receipts[position + 1 :]]
        expected = _audit(_accounting_py, config, tampered)
        assert not expected.valid
        assert _audit(compiled, config, tampered) == expected
    twice = list(receipts)
    for at in (position, (position + 2) % len(receipts)):
        twice[at] = _tamperings(receipts[at])[0]
    assert _audit(compiled, config, twice) == _audit(_accounting_py, config, twice)


def test_rank_counts_with_keys_outside_the_alphabet(accounting: ModuleType) -> None:
    """A log may hold keys outside an alphabet (a tighter admissible alphabet, or a
    hand-built state): counts at any length, in any order, match a direct count."""
    config = QICTConfig(failure_alphabet={"a", "b", "c", "d"}, admissible_failures={"a", "c"})
    prefix = set_prefix(frozenset({"b"}))
    prefixes = [prefix]
    for key in ["a", "z", "c", "y", "d"]:
        prefix = prefix.added(key)
        prefixes.append(prefix)
    initial = config.initial_state()
    states = [
        evolve(
            initial,
            exclusions=p,
            evidence_budget=0,
            compute_budget=0,
            dependency_budget=0,
            candidate_disposition=None,
            evaluation_count=0,
            clock=0,
        )
        for p in prefixes
    ]
    for order in (states, states[::-1], states[::2] + states[1::2]):
        for state in order:
            members = state.exclusions
            assert accounting.rank(config, state) == len(config.failure_alphabet - members)
            assert accounting.admissible_rank(config, state) == len(
                (config.admissible_failures or frozenset()) - members
            )


FINGERPRINTED = {
    "empty": QICTConfig(),
    "unicode": QICTConfig(
        failure_alphabet={"a" * 9, "a" * 10, "b", "", "é", "\u4e2d\u6587"},
        evidence_alphabet={"g"},
        compute_alphabet={"k1", "k2"},
        dependency_alphabet={"d0", "d1"},
        evidence_budget=0,
        compute_budget=2,
        admissible_failures={"b", "é"},
        admissible_dependencies=set(),
    ),
    "surrogate": QICTConfig(failure_alphabet={"a", "\ud800"}),
    "huge ticks": QICTConfig(compute_alphabet={"k"}, lease_ticks=2**70),
    "large": QICTConfig(failure_alphabet={f"reason {i}" for i in range(3000)}, lease_ticks=7),
}


@pytest.mark.parametrize("name", sorted(FINGERPRINTED))
def test_fingerprint_is_cached_and_tells_configs_apart(accounting: ModuleType, name: str) -> None:
    """Surrogates and ints beyond 64 bits have a fingerprint; equal configs share it,
    the one config object computes it once, and different configs differ."""
    config = FINGERPRINTED[name]
    _accounting_py._fingerprinted.cache_clear()
    digest = accounting.fingerprint(config)
    assert accounting.fingerprint(config) is digest
    assert accounting.fingerprint(dataclasses.replace(config)) == digest
    digests = {accounting.fingerprint(other) for other in FINGERPRINTED.values()}
    assert len(digests) == len(FINGERPRINTED)
