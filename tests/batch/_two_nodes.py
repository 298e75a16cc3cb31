"""A two-node Ray cluster on this host (nodes on 127.0.0.2 and 127.0.0.3), run as a
subprocess by test_ray_cluster.py: one process can join only one cluster.

Runs 40 items over ``RayPool()`` (one actor pinned to each node); once there are 8
results and both nodes gave some, the second node is removed, and its runs must finish
on the first. Prints one JSON object:
the results, and the nodes seen before the removal.
"""

from __future__ import annotations

import json
import sys
import tempfile

from tests.batch.conftest import WORKER_PATH  # sets RAY_AUTH_MODE and usage stats first


def main() -> None:
    from ray.cluster_utils import Cluster

    from four.batch import Item, RayPool, iter_runs
    from tests.batch._agents import StepModel, serve_many, server_run

    store = 80 * 2**20
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "object_store_memory": store,
            "node_ip_address": "127.0.0.2",
            "include_dashboard": False,
        },
    )
    second = cluster.add_node(num_cpus=1, object_store_memory=store, node_ip_address="127.0.0.3")
    import ray

    ray.init(
        address=cluster.address,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": WORKER_PATH}},
    )
    nodes = ray.nodes()  # type: ignore[no-untyped-call]
    out: dict[str, object] = {"nodes": sorted(n["NodeManagerAddress"] for n in nodes)}
    results = []
    try:
        with serve_many(StepModel(steps=5, delay=0.05)) as server:
            items = [Item(f"n{i:02d}", f"two-nodes-{i}") for i in range(40)]
            runs = iter_runs(
                server_run(server.url),
                items,
                sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(),
                pool=RayPool(),
                max_concurrency=8,
            )
            for result in runs:
                results.append(result)
                # Runs go to each actor once it is up: the second node's may start
                # later than the first's (a fresh worker), so wait for its first result.
                seen = sorted({r.node for r in results})
                if "before" not in out and len(results) >= 8 and len(seen) == 2:
                    out["before"] = seen
                    cluster.remove_node(second)
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
    out["results"] = [
        {"id": r.id, "outcome": r.outcome, "node": r.node, "attempts": r.attempts, "error": r.error}
        for r in results
    ]
    print("OUT", json.dumps(out))  # Ray may print its own lines to stdout too


if __name__ == "__main__":
    main()
