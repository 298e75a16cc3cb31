"""Ray for the batch tests: settings every Ray process needs, and a one-node cluster.

Ray tests skip with the reason when Ray is not installed, and fail instead when
FOUR_REQUIRE_SERVICES=1 (as in CI, which installs the ``ray`` extra).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Before Ray is imported, and inherited by every process of a cluster started here:
# no token auth on loopback, no usage stats.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

WORKER_PATH = f"{ROOT / 'src'}{os.pathsep}{ROOT}"
"""What Ray's workers need to import: this checkout's four, and the tests' make_run."""


def need_ray() -> ModuleType:
    """Ray, or a skip (a failure with FOUR_REQUIRE_SERVICES=1) when it is not installed."""
    if importlib.util.find_spec("ray") is None:
        reason = "ray is not installed (pip install -e '.[ray]')"
        if os.environ.get("FOUR_REQUIRE_SERVICES") == "1":
            pytest.fail(f"required service missing: {reason}")
        pytest.skip(reason)
    import ray

    return ray


def ray_init_args(**more: object) -> dict[str, object]:
    """ray.init arguments for a small cluster on this machine, started by this process."""
    return {
        "address": "local",  # never join a stale cluster from an earlier test
        "num_cpus": 2,
        "include_dashboard": False,
        "log_to_driver": False,
        "object_store_memory": 150 * 2**20,
        "runtime_env": {"env_vars": {"PYTHONPATH": WORKER_PATH}},
        # Loopback (Ray rewrites 127.0.0.1 to the routed address, not 127.0.0.2).
        "_node_ip_address": "127.0.0.2",
        **more,
    }


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[ModuleType]:
    """A one-node Ray cluster for the module's tests (2-3 s to start)."""
    ray = need_ray()
    ray.init(**ray_init_args())
    try:
        yield ray
    finally:
        ray.shutdown()
