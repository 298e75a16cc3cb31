"""No quadratic costs: 16,000 distinct NOs processed and audited in bounded memory, the
receipts sharing one exclusion log. (Their time is bench/bench_quaternary.py's: a timed
test fails on a loaded machine, not on slow code.)"""

from __future__ import annotations

import tracemalloc

from four.quaternary import QICTConfig, QICTController, audit_trace, load_receipts, no, rank
from four.quaternary._state import raw_state

N = 16_000


def test_sixteen_thousand_nos_time_and_memory() -> None:
    config = QICTConfig(failure_alphabet={f"reason {i}" for i in range(N)})
    results = [no(f"reason {i}") for i in range(N)]
    tracemalloc.start()
    try:
        controller = QICTController(config)
        for result in results:
            controller.process(result)
        audit = controller.audit()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert audit.valid and audit.evaluations == N and audit.final_rank == 0
    assert peak < 100 * 2**20, peak
    # receipts share one exclusion log instead of copying the set at every step
    logs = {id(raw_state(r.after)[0].log) for r in controller.receipts}
    assert len(logs) == 1
    assert rank(config, controller.receipts[N // 2].after) == N - N // 2 - 1


def test_a_loaded_trace_of_4000_receipts_audits_valid() -> None:
    from four.quaternary import dump_receipts

    config = QICTConfig(failure_alphabet={f"r{i}" for i in range(4000)})
    controller = QICTController(config)
    for i in range(4000):
        controller.process(no(f"r{i}"))
    loaded = load_receipts(dump_receipts(controller.receipts))
    assert audit_trace(config, loaded, head=controller.head).valid
