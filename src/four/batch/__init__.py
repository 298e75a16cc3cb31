"""Batches: many runs at once, on threads here or on a Ray cluster, recorded and resumable.

    iter_runs(make_run, items, DIR)   yield one RunResult per item as its run ends
    run_many(make_run, items, DIR)    the same, collected in a list
    ThreadPool()                      threads of this process (the default pool)
    RayPool(address=...)              threaded actors of a Ray cluster (``four[ray]``)

``make_run(ctx)`` runs one item; ``ctx`` (a ``RunContext``) carries the item, its
output folder and the supervisor's watch::

    def make_run(ctx):
        return four.run(G, V1, V2, save_trajectory(ctx.output_dir),
                        prompt=ctx.task, watch=ctx.watch)

``DIR/manifest.jsonl`` gets one JSON line per finished item (id, outcome, trajectory,
steps, tokens, cost, wall time, error, the item's other fields); run the batch again
and finished items are skipped. A supervisor thread ends runs past their wall-clock
limit or stalled, killing their commands. ``import four.batch`` never imports Ray.
"""

from four.batch._attempt import MakeRun, RunContext
from four.batch._batch import Progress, iter_runs, run_many
from four.batch._items import Item, folder_name, item_from_json, read_items
from four.batch._manifest import MANIFEST, read_manifest, read_results
from four.batch._pool import Pool, RayPool, Session, Spec, ThreadPool
from four.batch._result import RunResult

__all__ = [
    "MANIFEST",
    "Item",
    "MakeRun",
    "Pool",
    "Progress",
    "RayPool",
    "RunContext",
    "RunResult",
    "Session",
    "Spec",
    "ThreadPool",
    "folder_name",
    "item_from_json",
    "iter_runs",
    "read_items",
    "read_manifest",
    "read_results",
    "run_many",
]
