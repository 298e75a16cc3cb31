"""Differential property: the pure and compiled cores agree receipt for receipt."""

from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from four.quaternary import (
    ControllerEvent,
    ControllerEventKind,
    QICTConfig,
    ResolutionOutcome,
    TransitionReceipt,
    _accounting_py,
)
from four.quaternary._state import AuditCursor

from .conftest import compiled_module
from .test_stateful import arc_sets, configs, receipt_variants, results

events = st.one_of(
    st.builds(
        ControllerEvent,
        st.just(ControllerEventKind.EVIDENCE_RETURNED),
        st.sampled_from(["lease", "other"]),
    ),
    st.builds(
        ControllerEvent,
        st.just(ControllerEventKind.DEPENDENCY_RESOLVED),
        st.sampled_from(["lease", "other"]),
        st.sampled_from([*ResolutionOutcome, None]),
    ),
    st.builds(
        ControllerEvent,
        st.just(ControllerEventKind.ADVANCE_CLOCK),
        clock=st.integers(0, 5) | st.just(2**70),
    ),
    st.builds(ControllerEvent, st.just(ControllerEventKind.EXPIRE), st.just("lease")),
    st.builds(
        ControllerEvent,
        st.just(ControllerEventKind.INVALIDATE_DEPENDENCY),
        dependency=st.sampled_from(["d0", "d1", "dz"]),
    ),
)
steps = st.lists(st.one_of(st.tuples(results, arc_sets), events), max_size=14)


def build(module: ModuleType, config: QICTConfig, script: list[Any]) -> list[TransitionReceipt]:
    state = config.initial_state()
    prev = module.genesis(config, state)
    receipts: list[TransitionReceipt] = []
    for step in script:
        try:
            if isinstance(step, ControllerEvent):
                lease = state.pending_lease
                if step.lease_id == "lease" and lease is not None:
                    step = dataclasses.replace(step, lease_id=lease.lease_id)
                receipt: TransitionReceipt = module.handle(config, state, step, prev)
            else:
                result, arcs = step
                payload = {0: result.reason, 1: None, 2: result.needed, 3: result.dependency}[
                    int(result.verdict)
                ]
                receipt = module.evaluate(
                    config, state, result.verdict, payload, frozenset(arcs), prev
                )
        except (TypeError, ValueError) as exc:
            receipts.append(exc)  # type: ignore[arg-type]
            continue
        receipts.append(receipt)
        state, prev = receipt.after, receipt.digest
    return receipts


def audit(module: ModuleType, config: QICTConfig, receipts: list[Any], head: bytes | None) -> Any:
    start = config.initial_state()
    cursor = AuditCursor(start, module.rank(config, start))
    module.audit_feed(config, cursor, receipts, 0)
    return module.audit_result(config, cursor, head)


@pytest.fixture
def compiled(accounting: ModuleType) -> ModuleType:
    module = compiled_module()
    if module is None:
        pytest.skip("the compiled accounting core is not built")
    if accounting is not _accounting_py:
        pytest.skip("runs once")
    return module


def test_same_receipts_digests_and_audits(compiled: ModuleType) -> None:
    """Both cores build identical traces; each audits both traces (and tamperings) alike."""

    @given(config=configs(), script=steps)
    def check(config: QICTConfig, script: list[Any]) -> None:
        compare(compiled, config, script)

    check()


def compare(compiled: ModuleType, config: QICTConfig, script: list[Any]) -> None:
    pure_trace = build(_accounting_py, config, script)
    compiled_trace = build(compiled, config, script)
    assert [type(r) for r in pure_trace] == [type(r) for r in compiled_trace]
    assert [str(r) if isinstance(r, Exception) else r for r in pure_trace] == [
        str(r) if isinstance(r, Exception) else r for r in compiled_trace
    ]
    trace = [r for r in pure_trace if not isinstance(r, Exception)]
    other = [r for r in compiled_trace if not isinstance(r, Exception)]
    assert [r.digest for r in trace] == [r.digest for r in other]
    head = trace[-1].digest if trace else None
    for receipts in (trace, other):  # each audited as valid by both implementations
        for module in (_accounting_py, compiled):
            assert audit(module, config, receipts, head).valid
    for i, receipt in enumerate(trace[:6]):
        for variant in receipt_variants(receipt)[:8]:
            tampered = [*trace[:i], variant, *trace[i + 1 :]]
            expected = audit(_accounting_py, config, tampered, head)
            assert audit(compiled, config, tampered, head) == expected
            assert not expected.valid
    for cut in range(len(trace)):
        assert audit(compiled, config, trace[:cut], head) == audit(
            _accounting_py, config, trace[:cut], head
        )
