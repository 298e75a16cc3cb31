"""RayPool: a batch's runs on a Ray cluster (Ray is imported only when a batch opens it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from four.batch._session import Session, Spec


@dataclass(frozen=True, slots=True)
class RayPool:
    """Runs on a Ray cluster, in threaded actors: never one Ray task per run.

    ``address`` goes to ``ray.init`` when Ray is not initialised yet: ``"auto"`` joins a
    running cluster, ``"local"`` starts one in this process (and shuts it down after
    the batch), ``"ray://host:10001"`` is a Ray client, None lets Ray choose. If this
    process is already connected, that cluster is used and never shut down.
    ``actors`` is the number of actors (default: one per alive node, each pinned to its
    node); the batch's ``max_concurrency`` is shared among them, each running its share
    in threads, with one supervisor thread per actor. ``init`` adds keyword arguments for
    ``ray.init`` (``object_store_memory``, ``runtime_env``...).

    An actor that dies (killed, its node lost) is restarted (``max_restarts``, on the
    same node when it is alive) and each run it had in flight is tried once more on a
    live actor; its partial trajectory stays, and what it had spent on model calls
    metered with ``ctx.meter`` (by the actor's last status, every 0.5 s) counts in the
    item's result and the budget. ``four`` (and whatever ``make_run`` needs)
    must be importable on every node, and ``output_dir`` should be a folder every node
    sees (a shared file system), or each node keeps the trajectories it wrote; the
    manifest is always written by this process.

    >>> RayPool(address="auto").address
    'auto'
    """

    address: str | None = None
    actors: int | None = None
    max_restarts: int = 4
    init: Mapping[str, object] = field(default_factory=dict)

    def open(self, spec: Spec) -> Session:
        try:
            from four.batch._ray import RaySession  # Ray is imported here, and only here
        except ModuleNotFoundError as exc:
            if exc.name != "ray":
                raise
            raise ImportError("RayPool needs Ray: pip install 'four-loop[ray]'") from exc
        return RaySession(self.address, self.actors, self.max_restarts, self.init, spec)
