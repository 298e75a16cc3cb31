"""Batches: many runs at once, on threads here or on a Ray cluster, recorded and resumable.

    iter_runs(make_run, items, DIR)   yield one RunResult per item as its run ends
    run_many(make_run, items, DIR)    the same, collected in a list
    ThreadPool()                      threads of this process (the default pool)
    AsyncPool()                       tasks of one event loop: an async make_run, thousands at once
    AsyncPool(processes=N)            the same over N worker processes (make_run must pickle)
    RayPool(address=...)              threaded actors of a Ray cluster (``four[ray]``)
    read_items(TASKS.jsonl)           items from a JSON Lines file ({id, task, ...})
    read_manifest(DIR)                the latest RunResult of each item

``make_run(ctx)`` runs one item; ``ctx`` (a ``RunContext``) carries the item, its
output folder and the supervisor's watch::

    def make_run(ctx):
        return four.run(ctx.meter(G), V1, V2, save_trajectory(ctx.output_dir),
                        prompt=ctx.task, watch=ctx.watch)

A run's failure is a value: its ``RunResult`` says ``crashed: ...`` (or ``stalled``,
``model_error``...), never an exception that stops the batch.

One driver per batch: a second on the same folder or URL raises ``BatchLocked`` naming
the first (see ``four.batch._lock``); a dead driver's lock is taken over.

``DIR/manifest.jsonl`` gets one JSON line per finished item (id, outcome, trajectory,
steps, tokens, cost, wall time, error, attempts, final, node, the item's other fields);
run the batch again and items whose latest line is final are skipped.

The supervisor, one thread per process: a run past ``time_limit`` or with no model
call or command finished for ``stall_timeout`` seconds ends ``time_limit_reached`` or
``stalled``; its running command is killed (every process of its group and those
carrying its ``FOUR_RUN`` mark; a container's processes from inside), so a blocked V2
returns and the trajectory is saved. A model call blocked in a socket read cannot be
interrupted: the run ends when it returns, so bound it with the model's request
timeout. Batch budgets (``max_cost``, ``max_wall_time``) and Ctrl-C stop scheduling
and end running runs the same way; their manifest lines are not final.

With ``AsyncPool(processes=N)`` each worker process runs its share of the runs on its
own event loop (past a few thousand runs at once, one process's GIL is the bound):
``make_run`` must pickle (defined at a module's top level), a worker ignores Ctrl-C and
is stopped by the batch, and a worker that dies hands back its runs as crashed, not
final; workers end with the batch, and on their own if the batch's process dies.

On Ray: ``make_run`` must pickle (build clients inside it, or cache them per process),
``four`` must import on every node, and ``DIR`` should be on a file system every node
sees. A killed actor is restarted; its runs are tried once more (a finished first
attempt is taken instead) and the new actor kills the commands and containers its
predecessor left. ``import four.batch`` never imports Ray.
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
    from four.batch._manifest import MANIFEST as MANIFEST
    from four.batch._manifest import read_manifest as read_manifest
    from four.batch._manifest import read_results as read_results
    from four.batch._pool import AsyncPool as AsyncPool
    from four.batch._pool import RayPool as RayPool
    from four.batch._pool import ThreadPool as ThreadPool
    from four.batch._result import RunResult as RunResult
    from four.batch._session import Pool as Pool
    from four.batch._session import Session as Session
    from four.batch._session import Spec as Spec

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
