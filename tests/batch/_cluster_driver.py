"""A batch's driver on the three-node cluster (``_cluster``), run as a process of its own
by test_ray_faults.py (which kills it mid-batch): prints a JSON line per result.

argv: the cluster's address, the batch folder (a path or an s3:// URL), the model's
URL, the number of items, the lease in seconds.
"""

from __future__ import annotations

import json
import sys

from tests.batch.conftest import WORKER_PATH  # sets RAY_AUTH_MODE and usage stats first


def main() -> None:
    from four.batch import Item, RayPool, iter_runs
    from tests.batch._agents import PatientServerRun

    address, out, model, count, lease = sys.argv[1:6]
    pool = RayPool(
        address=address,
        lease=float(lease),
        init={"log_to_driver": False, "runtime_env": {"env_vars": {"PYTHONPATH": WORKER_PATH}}},
    )
    items = [Item(f"f{i:02d}", f"faults-{i}") for i in range(int(count))]
    for r in iter_runs(PatientServerRun(model), items, out, pool=pool, max_concurrency=9):
        line = {"id": r.id, "outcome": r.outcome, "node": r.node, "attempts": r.attempts,
                "tokens": r.tokens, "error": r.error}  # fmt: skip
        print("RESULT", json.dumps(line), flush=True)  # (Ray prints to stdout too)


if __name__ == "__main__":
    main()
