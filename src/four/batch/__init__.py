"""Batches: many runs at once, on threads here or on a Ray cluster, recorded and resumable.

    iter_runs(make_run, items, DIR)   yield one RunResult per item as its run ends
    run_many(make_run, items, DIR)    the same, collected in a list
    ThreadPool()                      threads of this process (the default pool)
    AsyncPool()                       tasks of one event loop: an async make_run, thousands at once
    AsyncPool(processes=N)            the same over N worker processes (make_run must pickle)
    RayPool(address=...)              threaded actors of a Ray cluster (``four[ray]``)
    read_items(TASKS.jsonl)           items from a JSON Lines file ({id, task, ...})
    read_manifest(DIR)                the latest RunResult of each item

The manual (a run's failure a value, one driver per destination): docs/batch.md.
"""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # names load on first use: `four batch --help` imports none of this
    from four.batch._attempt import MakeRun as MakeRun
    from four.batch._attempt import RunContext as RunContext
    from four.batch._batch import Progress as Progress
    from four.batch._batch import iter_runs as iter_runs
    from four.batch._batch import run_many as run_many
    from four.batch._items import Item as Item
    from four.batch._items import folder_name as folder_name
    from four.batch._items import item_from_json as item_from_json
    from four.batch._items import read_items as read_items
    from four.batch._lock import BatchLocked as BatchLocked
    from four.batch._pool import AsyncPool as AsyncPool
    from four.batch._pool import RayPool as RayPool
    from four.batch._pool import ThreadPool as ThreadPool
    from four.batch._result import MANIFEST as MANIFEST
    from four.batch._result import RunResult as RunResult
    from four.batch._result import read_manifest as read_manifest
    from four.batch._result import read_results as read_results
    from four.batch._sessions import Pool as Pool
    from four.batch._sessions import Session as Session
    from four.batch._sessions import Spec as Spec

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
