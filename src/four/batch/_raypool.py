"""RayPool: a batch's runs on a Ray cluster (Ray is imported only when a batch opens it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from four._checked import check_fields
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

    Records travel: each run writes into a scratch folder on its node (under
    ``scratch``, default the node's temporary folder), and its trajectory, stream and
    whatever else it writes there come back to the batch folder here as the run goes
    (every 0.5 s) and whole when it ends; no node needs to see ``output_dir``.

    An actor that dies (killed, its node lost) is restarted (``max_restarts``, on the
    same node when it is alive) and each run it had in flight is tried once more on a
    live actor: at once when its process is known dead, else once its ``lease`` is over
    (an actor that hears nothing from this process for ``lease`` seconds stops its
    runs), so no item runs twice at once. Its partial stream stays in the batch folder,
    and what it had spent on model calls metered with ``ctx.meter`` (by the actor's last
    status) counts in the item's result and the budget. ``four`` (and whatever
    ``make_run`` needs) must be importable on every node.

    >>> RayPool(address="auto").address
    'auto'
    """

    address: str | None = None
    actors: int | None = None
    max_restarts: int = 4
    init: Mapping[str, object] = field(default_factory=dict)
    scratch: str | None = None
    lease: float = 30.0

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        if not self.lease > 0:
            raise ValueError(f"RayPool: lease={self.lease!r}: give seconds, more than 0")

    def open(self, spec: Spec) -> Session:
        try:
            from four.batch._ray import RaySession  # Ray is imported here, and only here
        except ModuleNotFoundError as exc:
            if exc.name != "ray":
                raise
            raise ImportError("RayPool needs Ray: pip install 'four-loop[ray]'") from exc
        return RaySession(
            self.address, self.actors, self.max_restarts, self.init, spec, self.scratch,
            self.lease,
        )  # fmt: skip
