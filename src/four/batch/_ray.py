"""RayPool's session: runs as calls on threaded Ray actors, a window of calls in flight.

Imported only by ``RayPool.open``. Each actor holds ``make_run`` (shipped once, at its
creation), a ``Supervisor`` (one watchdog thread for its runs) and ``max_concurrency``
threads for runs, plus one control thread (a concurrency group of its own) that takes
stop requests, lease renewals and status polls while every run thread is busy.

How records travel back (``_ship``) and how each item gets exactly one
result, whatever is lost on the way: docs/batch.md ("Past one machine", "Exactly one
result per task").
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

import ray
import ray.exceptions
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from four._outcomes import Crashed, Outcome
from four._types import NO_USAGE, Usage
from four.batch._attempt import attempt_key, newest, run_attempt
from four.batch._items import Item, folder_name
from four.batch._journal import Journal, actor_journal, sweep
from four.batch._result import RunResult, plus, taken, unfinished
from four.batch._ship import STREAM, Landing, Piece, Shipper
from four.batch._supervisor import Supervisor

if TYPE_CHECKING:
    from four.batch._pool import RayPool
    from four.batch._sessions import Spec

READY_WITHIN = 120.0
"""Seconds an actor has to start (answer its first ``where``) before runs go to it anyway."""
PROBE_EVERY = 0.2
"""Seconds between asking a restarting actor whether it is back..."""
MAX_PROBES = 300
"""... for at most about a minute; then it counts as gone."""
STATUS_EVERY = 0.5
"""Seconds between polls of the actors' live cost and records."""
GRACE = 2.0
"""Seconds past a lost attempt's lease before its retry starts (a renewal in flight)."""


class Report(NamedTuple):
    """An actor's status: ``seq`` (acknowledge it in the next poll), who answers
    (``incarnation``: new at each restart), the attempts running, usages changed since
    the last acknowledged report (by attempt key), attempts ended whose end this process
    has not acknowledged, the records it lacks (by attempt key), and the supervisor's
    own cost stop."""

    seq: int
    incarnation: str
    running: tuple[str, ...]
    usages: tuple[tuple[str, Usage], ...]
    ended: tuple[tuple[str, RunResult], ...]
    pieces: tuple[tuple[str, tuple[Piece, ...]], ...]
    stopping: Outcome | None


class _Actor:
    """The actor class (made remote in ``actor_class``)."""

    def __init__(self, spec: Spec, scratch: str | None, lease: float) -> None:
        self.make_run = spec.make_run
        self.supervisor = Supervisor(
            spec.time_limit, spec.stall_timeout, max_cost=spec.max_cost, lease=lease
        )
        self.node = _node_address()
        self.incarnation = uuid.uuid4().hex
        self.lock = threading.Lock()
        self.shipper = Shipper()
        self.running: set[str] = set()
        self.ended: dict[str, RunResult] = {}  # results the driver has not acknowledged
        self.told: dict[str, Usage] = {}  # each run's usage, as acknowledged
        self.telling: dict[str, Usage] = {}  # ... as the last report said
        self.seq = 0
        # A restarted actor first kills what its killed predecessor left running.
        actor_id = str(ray.get_runtime_context().get_actor_id())
        path = actor_journal(actor_id)
        # Each attempt's scratch folder, under one per actor (a predecessor's is dropped:
        # what of it the driver had not got is lost with the attempt).
        self.scratch = Path(scratch or tempfile.gettempdir()) / f"four-ray-{actor_id}.scratch"
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.journal = Journal(path)
        self.cleaned = self.journal.cleaned
        # Then, beside the runs (the actor is up meanwhile), what actors killed for good
        # left on this node: a `docker ps` per dead journal is not worth a later start.
        self.sweeping = threading.Thread(
            target=lambda: self.cleaned.extend(sweep(path)), name="four-sweep", daemon=True
        )
        self.sweeping.start()

    def run(self, item: Item, attempt: int, key: str) -> tuple[RunResult, tuple[Piece, ...]]:
        """The attempt's result (its trajectory's path relative to the batch folder),
        and every record of it the driver lacks."""
        base = self.scratch / key.rsplit("#", 1)[-1]
        self.shipper.track(key, base, f"runs/{folder_name(item.id)}")
        with self.lock:
            self.running.add(key)
        result = run_attempt(self.make_run, item, base, self.supervisor, attempt, self.node, key)
        if result.trajectory is not None and result.trajectory.is_relative_to(base):
            result = replace(result, trajectory=result.trajectory.relative_to(base))
        with self.lock:
            self.ended[key] = result
            self.running.discard(key)
        return result, tuple(self.shipper.final(key))

    def stop(self, outcome: Outcome, kill: bool) -> None:
        self.supervisor.stop(outcome, kill=kill)

    def renew(self, revoked: tuple[str, ...]) -> None:
        self.supervisor.renew(revoked)

    def status(self, spent: float, ack: int, done: tuple[str, ...]) -> Report:
        """Acknowledge report ``ack`` and the ends ``done``; report again."""
        self.supervisor.spent = spent
        self.supervisor.renew()
        if ack == self.seq:
            self.shipper.commit()
            self.told = self.telling
        for key in done:
            self.shipper.drop(key)
            with self.lock:
                self.ended.pop(key, None)
        self.seq += 1
        usages = self.supervisor.live_usages()
        changed = tuple((k, u) for k, u in usages.items() if self.told.get(k) != u)
        self.telling = {**self.told, **usages}
        with self.lock:
            running, ended = tuple(self.running), tuple(self.ended.items())
        pieces = _by_attempt(self.shipper.report({k for k, _ in ended}))
        return Report(
            self.seq, self.incarnation, running, changed, ended, pieces,
            self.supervisor.stopping,
        )  # fmt: skip

    def where(self) -> tuple[str, int, str, str]:
        """Its node's address, its pid, its incarnation, its node's id."""
        node_id = str(ray.get_runtime_context().get_node_id())
        return self.node, os.getpid(), self.incarnation, node_id

    def finish(self) -> list[str]:
        """The batch is over: drop the journal and the scratch; what this incarnation
        cleaned up."""
        self.journal.close()
        self.supervisor.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.sweeping.join(timeout=1)  # (unfinished: the next actor on the node sweeps)
        return list(self.cleaned)


def _by_attempt(pieces: list[tuple[str, Piece]]) -> tuple[tuple[str, tuple[Piece, ...]], ...]:
    grouped: dict[str, list[Piece]] = {}
    for key, piece in pieces:
        grouped.setdefault(key, []).append(piece)
    return tuple((k, tuple(v)) for k, v in grouped.items())


def _node_address() -> str:
    """The address this node registered with (``get_node_ip_address`` would give the
    host's routed address even for a node started on 127.0.0.2)."""
    address = _node(ray.get_runtime_context().get_node_id()).get("NodeManagerAddress")
    return str(address) if address else cast(Callable[[], str], ray.util.get_node_ip_address)()


def cluster_nodes() -> list[dict[str, object]]:
    return cast(Callable[[], list[dict[str, object]]], ray.nodes)()


def _node(node_id: str | None) -> dict[str, object]:
    """What Ray says of the node ``node_id`` ({} when it cannot say)."""
    with contextlib.suppress(Exception):
        return next((n for n in cluster_nodes() if n.get("NodeID") == node_id), {})
    return {}


class _Method(Protocol):
    def remote(self, *args: object) -> ray.ObjectRef[object]: ...


class _Handle(Protocol):
    """What the session uses of an actor handle (Ray's own types are dynamic)."""

    run: _Method
    stop: _Method
    renew: _Method
    status: _Method
    where: _Method
    finish: _Method


@functools.cache
def actor_class() -> object:
    """The remote actor class (made once per process)."""
    control = ray.method(concurrency_group="control")
    for name in ("stop", "renew", "status", "where", "finish"):
        setattr(_Actor, name, control(getattr(_Actor, name)))
    remote = cast(Callable[..., Callable[[type], object]], ray.remote)  # its overloads omit it
    return remote(concurrency_groups={"control": 1})(_Actor)


@dataclass
class _Slot:
    """One actor as the session sees it."""

    handle: _Handle
    capacity: int
    node_id: str | None
    # The attempts in flight on it (by key), each with its usage as the actor last said.
    spending: dict[str, Usage] = field(default_factory=dict)
    healthy: bool = False  # takes runs (once its first `where` answered)
    starting: bool = True  # its first `where` has not answered yet
    probe: ray.ObjectRef[object] | None = None  # a `where` call: at the start, after a failure
    reprobe_at: float | None = None  # when to ask again (the actor is restarting)
    probes: int = 0
    status: ray.ObjectRef[object] | None = None
    asked: float = 0.0  # when the status call was sent
    seq: int = 0  # the last report received (acknowledged by the next poll)
    done: list[str] = field(default_factory=list)  # ends received, to acknowledge
    where: tuple[str, int, str, str] | None = None  # node, pid, incarnation, node id
    gone: str | None = None  # why it counts as gone for good

    @property
    def running(self) -> int:
        return len(self.spending)

    @property
    def probing(self) -> bool:
        """Not known to be gone: being asked whether it is back."""
        return self.probe is not None or self.reprobe_at is not None


class _Queued(NamedTuple):
    """An attempt to make at an item, with what its earlier ones (lost) left."""

    item: Item
    attempt: int
    errors: list[str]
    lost: Usage  # what earlier attempts spent before they were lost
    lost_streams: tuple[str, ...] = ()  # ... and their streams (relative paths)
    not_before: float = 0.0  # (monotonic) a lost attempt's lease runs out

    def given_up(self, outcome: str, final: bool = False) -> RunResult:
        """The item's result, no attempt of it having come back."""
        errors = "; ".join(self.errors) or None
        return unfinished(
            self.item, outcome, self.lost, errors, self.attempt, final, self.lost_streams
        )


@dataclass
class _Call:
    slot: _Slot
    asked: _Queued  # the attempt it makes
    key: str
    streams: set[str] = field(default_factory=set)  # its streams landed (relative paths)
    doubt: str | None = None  # its call failed for a while: the actor's status settles it


class RaySession:
    """A batch on Ray (see ``RayPool``, whose settings it is given)."""

    def __init__(self, pool: RayPool, spec: Spec) -> None:
        self._spec = spec
        self._lease = pool.lease
        self._landing = Landing(spec.output_dir)
        self._started_ray = False
        if not ray.is_initialized():
            cast(Callable[..., object], ray.init)(address=pool.address, **dict(pool.init))
            self._started_ray = True
        nodes = [n for n in cluster_nodes() if n.get("Alive")]
        actors = pool.actors
        count = actors if actors is not None else max(1, len(nodes))
        per_actor = max(1, math.ceil(spec.max_concurrency / count))
        self._slots: list[_Slot] = []
        for i in range(count):
            node_id = str(nodes[i]["NodeID"]) if actors is None and nodes else None
            options: dict[str, object] = {
                "num_cpus": 0,
                "max_concurrency": per_actor,
                "max_restarts": pool.max_restarts,
                "max_task_retries": 0,
            }
            if node_id is not None:  # one per node, pinned (soft placement may stack them)
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
            actor = cast(_Remote, actor_class()).options(**options)
            handle = cast(_Handle, actor.remote(spec, pool.scratch, pool.lease))
            # Runs go to an actor once it answers (each takes at most its share, so
            # runs still spread over all of them): no waiting for the slowest to start.
            self._slots.append(_Slot(handle, per_actor, node_id, probe=handle.where.remote()))
        self._ready_by = time.monotonic() + READY_WITHIN
        self._calls: dict[ray.ObjectRef[object], _Call] = {}
        self._keys: dict[str, _Call] = {}  # every attempt not settled yet, by key
        self._revoked: list[str] = []  # attempts given up on (their actors stop them)
        self._queue: deque[_Queued] = deque()
        self._ready: list[RunResult] = []
        self._stop: Outcome | None = None
        self._stopping: Outcome | None = None
        self._spent = 0.0
        self._polled = 0.0
        # Leases are renewed from a thread of their own: a driver busy with a result
        # (the user's loop body) is still there.
        self._closed = threading.Event()
        self._renewing = threading.Thread(target=self._renew, name="four-lease", daemon=True)
        self._renewing.start()

    # --- Session ---------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._spec.max_concurrency

    @property
    def running(self) -> int:
        return len(self._keys) + len(self._queue) + len(self._ready)

    def submit(self, item: Item) -> None:
        self._queue.append(_Queued(item, 1, [], NO_USAGE))
        self._dispatch()

    def wait(self, timeout: float) -> list[RunResult]:
        self._poll_status()
        self._reprobe()
        self._overdue()
        if not self._ready:
            refs = [*self._calls, *(s.probe for s in self._slots if s.probe is not None)]
            if refs:
                ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
                if ready:  # and whatever else is done by now
                    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                for ref in ready:
                    self._collect(ref)
            elif self._queue or self._keys:  # waiting for an actor, a lease, a status
                time.sleep(min(timeout, PROBE_EVERY))
        self._dispatch()
        ready_results, self._ready = self._ready, []
        return ready_results

    def stop(self, outcome: Outcome, *, kill: bool) -> None:
        self._stop = outcome
        for slot in self._slots:
            if slot.healthy:
                slot.handle.stop.remote(outcome, kill)
        while self._queue:  # queued runs never start
            q = self._queue.popleft()
            self._ready.append(q.given_up(outcome.text))

    def live_usage(self) -> Usage:
        """The runs in flight (as their actors last said), and what lost attempts of
        items not ended yet spent: each counted until a result carries it."""
        spending = [u for slot in self._slots for u in slot.spending.values()]
        return sum((u for u in spending if u is not NO_USAGE), self._lost_usage())

    def running_by_node(self) -> dict[str, int]:
        """The attempts in flight on each node, as its actor said where it is."""
        nodes: dict[str, int] = {}
        for slot in self._slots:
            if slot.spending:
                node = slot.where[0] if slot.where is not None else "?"
                nodes[node] = nodes.get(node, 0) + len(slot.spending)
        return nodes

    def spent(self, cost: float) -> None:
        self._spent = cost

    def stopping(self) -> Outcome | None:
        return self._stopping

    def close(self, wait: bool = True) -> None:
        self._closed.set()
        # (An actor still starting is not waited for: it is killed below, and its journal,
        # if it wrote one, is swept by the next actor on its node.)
        finishing = [s.handle.finish.remote() for s in self._slots if s.healthy]
        if finishing:
            with contextlib.suppress(ray.exceptions.RayError):
                ray.wait(finishing, num_returns=len(finishing), timeout=10 if wait else 1)
        self._renewing.join(timeout=5)
        if self._started_ray:
            ray.shutdown()
            return
        for slot in self._slots:
            cast(Callable[..., None], ray.kill)(slot.handle, no_restart=True)

    # --- inner workings ----------------------------------------------------------------

    def _renew(self) -> None:
        every = min(1.0, self._lease / 4)
        while not self._closed.wait(every):
            revoked = tuple(self._revoked[-1000:])
            for slot in self._slots:
                if slot.gone is None:
                    with contextlib.suppress(Exception):  # (a dead actor: its probe tells)
                        slot.handle.renew.remote(revoked)

    def _dispatch(self) -> None:
        now = time.monotonic()
        while self._queue and self._stop is None:
            free = [s for s in self._slots if s.healthy and s.running < s.capacity]
            if not free:
                if not any(s.healthy or s.probing for s in self._slots):
                    q = self._queue.popleft()
                    why = "; ".join(dict.fromkeys(s.gone for s in self._slots if s.gone))
                    text = "no Ray actor is left to run it" + (f" ({why})" if why else "")
                    self._ready.append(q.given_up(Crashed("batch", text).text))
                    continue
                return
            ready = next((q for q in self._queue if q.not_before <= now), None)
            if ready is None:  # every retry waits for its lost attempt's lease
                return
            self._queue.remove(ready)
            slot = min(free, key=lambda s: s.running / s.capacity)
            key = attempt_key(ready.item, ready.attempt)
            ref = slot.handle.run.remote(ready.item, ready.attempt, key)
            slot.spending[key] = NO_USAGE
            call = _Call(slot, ready, key)
            self._calls[ref] = call
            self._keys[key] = call

    def _collect(self, ref: ray.ObjectRef[object]) -> None:
        call = self._calls.pop(ref, None)
        if call is None:
            self._probed(ref)
            return
        if self._keys.get(call.key) is not call:  # settled meanwhile (by a status)
            return
        try:
            result, pieces = cast(tuple[RunResult, tuple[Piece, ...]], ray.get(ref))
        except ray.exceptions.RayTaskError as exc:  # raised in the actor (run_attempt does not)
            lost = call.asked.lost + self._settle(call)
            streams = (*call.asked.lost_streams, *sorted(call.streams))
            had = call.asked._replace(lost=lost, lost_streams=streams)
            self._ready.append(
                had.given_up(Crashed("batch", first_line(exc.cause or exc)).text, True)
            )
            return
        except ray.exceptions.ActorUnavailableError as exc:
            # For a while only (a restart, a network blip): the attempt may still run.
            # The actor's next status says how it went (or that it is another actor).
            call.doubt = first_line(exc)
            self._unhealthy(call.slot)
            return
        except ray.exceptions.RayError as exc:  # the actor died, or cannot be placed again
            self._actor_failed(call, exc)
            return
        self._ended(call, result, pieces)

    def _ended(self, call: _Call, result: RunResult, pieces: tuple[Piece, ...]) -> None:
        """The attempt's result and its last records are in."""
        self._land(call, pieces)
        self._settle(call)
        call.slot.done.append(call.key)
        if result.trajectory is not None and not result.trajectory.is_absolute():
            result = replace(result, trajectory=self._spec.output_dir / result.trajectory)
        asked = call.asked
        if asked.errors:  # a retry
            error = "; ".join([*asked.errors, *([result.error] if result.error else [])])
            result = replace(result, error=error)
        self._ready.append(plus(result, asked.lost, asked.lost_streams))  # paid for too

    def _settle(self, call: _Call) -> Usage:
        """The attempt is over: what it had spent, as its actor last said."""
        self._keys.pop(call.key, None)
        return call.slot.spending.pop(call.key, NO_USAGE)

    def _land(self, call: _Call, pieces: tuple[Piece, ...]) -> None:
        for path in self._landing.put(pieces):
            if path.endswith(STREAM):
                call.streams.add(path)

    def _unhealthy(self, slot: _Slot) -> None:
        if slot.healthy:
            slot.healthy = False
            slot.probes = 1
            slot.probe = slot.handle.where.remote()  # answers once the actor is back

    def _actor_failed(self, call: _Call, exc: Exception) -> None:
        """The actor died (or could not be reached) with the attempt in flight."""
        slot = call.slot
        self._unhealthy(slot)
        slot.status = None  # a dead actor's last status must not count again
        # Its process is dead for sure when its node lives (Ray saw the process go);
        # on a lost node it may live on (cut off, or paused) until its lease ends.
        node_id = slot.where[3] if slot.where is not None else slot.node_id
        alive = node_id is not None and _node(node_id).get("Alive") is True
        self._lose(call, first_line(exc), sure=alive)

    def _lose(self, call: _Call, why: str, *, sure: bool) -> None:
        """The attempt is lost (``why``): take its run if it had ended, else try again
        (at once when ``sure`` its process is dead, else once its lease is over)."""
        spent = self._settle(call)
        self._revoked.append(call.key)
        asked = call.asked
        errors = [*asked.errors, f"attempt {asked.attempt}: {why}"]
        lost = asked.lost + spent if spent is not NO_USAGE else asked.lost
        lost_streams = (*asked.lost_streams, *sorted(call.streams))
        out = self._spec.output_dir
        done = newest([out / p for p in call.streams], ended=True)
        if done is not None:  # it had ended: its stats count it whole
            node = call.slot.where[0] if call.slot.where is not None else ""
            error = "; ".join([*errors, "its run had ended: its trajectory is taken"])
            result = taken(asked.item, done, asked.attempt, node, error)
            self._ready.append(plus(result, asked.lost, asked.lost_streams))
            return
        wait = 0.0 if sure else time.monotonic() + self._lease + GRACE
        had = _Queued(asked.item, asked.attempt, errors, lost, lost_streams, wait)
        if asked.attempt >= 2 or self._stop is not None:
            reason = self._stop.text if self._stop is not None else None
            text = reason or Crashed("batch", f"its Ray actor died twice: {errors[-1]}").text
            self._ready.append(had.given_up(text))
            return
        self._queue.appendleft(had._replace(attempt=asked.attempt + 1))  # its retry

    def _probed(self, ref: ray.ObjectRef[object]) -> None:
        for slot in self._slots:
            if slot.probe is not None and slot.probe == ref:
                slot.probe = None
                try:
                    where = cast(tuple[str, int, str, str], ray.get(ref))
                except ray.exceptions.ActorUnavailableError as exc:  # restarting: ask again soon
                    if slot.probes < MAX_PROBES:
                        slot.reprobe_at = time.monotonic() + PROBE_EVERY
                    else:  # not back within about a minute: gone
                        slot.starting, slot.gone = False, first_line(exc)
                        self._doubts_lost(slot, slot.gone)
                    return
                except ray.exceptions.RayError as exc:
                    # Gone for good: its node is dead, no restart is left, or it could
                    # not start (its __init__ failed: make_run not importable there...).
                    slot.starting, slot.gone = False, _why_gone(exc)
                    self._doubts_lost(slot, slot.gone)
                    return
                self._answered(slot, where)
                slot.healthy, slot.starting, slot.probes = True, False, 0
                if self._stop is not None:
                    slot.handle.stop.remote(self._stop, True)
                return

    def _answered(self, slot: _Slot, where: tuple[str, int, str, str]) -> None:
        """An actor said who it is: a new incarnation (restarted) lost every attempt
        the old one had (on the same node, its successor killed their commands)."""
        before, slot.where = slot.where, where
        if before is None or before[2] == where[2]:
            return
        slot.seq, slot.done = 0, []
        for call in [c for c in self._keys.values() if c.slot is slot]:
            if call.doubt is not None:  # (the others' calls fail: ActorDiedError)
                self._lose(call, f"{call.doubt} (its actor restarted)", sure=before[0] == where[0])

    def _doubts_lost(self, slot: _Slot, why: str) -> None:
        for call in [c for c in self._keys.values() if c.slot is slot and c.doubt is not None]:
            self._lose(call, f"{call.doubt}; then {why}", sure=False)

    def _overdue(self) -> None:
        """Actors not up within READY_WITHIN get runs anyway (queued by Ray until they are)."""
        if time.monotonic() < self._ready_by:
            return
        for slot in self._slots:
            if slot.starting:
                slot.healthy, slot.starting = True, False
                slot.probe = slot.reprobe_at = None

    def _reprobe(self) -> None:
        now = time.monotonic()
        for slot in self._slots:
            if slot.reprobe_at is not None and now >= slot.reprobe_at:
                slot.reprobe_at = None
                slot.probes += 1
                slot.probe = slot.handle.where.remote()

    def _poll_status(self) -> None:
        now = time.monotonic()
        for slot in self._slots:
            if slot.status is None:
                continue
            ready, _ = ray.wait([slot.status], timeout=0)
            if not ready:
                if now - slot.asked > self._lease:  # no answer: paused, or cut off
                    slot.status = None
                    self._silent(slot)
                continue
            ref, slot.status = slot.status, None
            try:
                report = cast(Report, ray.get(ref))
            except ray.exceptions.RayError:
                continue  # (its calls' own errors tell what happened to it)
            self._reported(slot, report)
        if now - self._polled < STATUS_EVERY:
            return
        self._polled = now
        lost = self._lost_usage().known_cost  # spent, and in no result yet
        for slot in self._slots:
            if slot.status is None and slot.gone is None and (slot.healthy or slot.spending):
                done, slot.done = tuple(slot.done), []
                slot.status = slot.handle.status.remote(self._spent + lost, slot.seq, done)
                slot.asked = now

    def _reported(self, slot: _Slot, report: Report) -> None:
        if slot.where is not None and report.incarnation != slot.where[2]:
            return  # a restarted actor: its `where` tells (and settles the old one's)
        slot.seq = report.seq
        for key, pieces in report.pieces:
            call = self._keys.get(key)
            if call is not None:
                self._land(call, pieces)
        for key, usage in report.usages:
            if key in slot.spending:  # (not one whose result came meanwhile)
                slot.spending[key] = usage
        for key, result in report.ended:
            call = self._keys.get(key)
            if call is None:
                slot.done.append(key)  # had: the actor may forget it
            elif call.doubt is not None:  # its reply was lost: here it is
                self._ended(call, result, ())
        running = set(report.running)
        for call in [c for c in self._keys.values() if c.slot is slot and c.doubt is not None]:
            if call.key not in running and call.key in self._keys:
                self._lose(call, f"{call.doubt} (its actor does not run it)", sure=True)
        if not slot.healthy and slot.gone is None and slot.probe is None:
            slot.healthy = True  # it answers again
        if report.stopping is not None and self._stopping is None:
            self._stopping = report.stopping  # one actor's cost check stops them all
            self.stop(report.stopping, kill=False)

    def _silent(self, slot: _Slot) -> None:
        """An actor has not answered a status call for a lease: every attempt on it
        counts as lost (it stops them itself once it hears nothing for as long)."""
        self._unhealthy(slot)
        for call in [c for c in self._keys.values() if c.slot is slot]:
            self._lose(call, f"its Ray actor did not answer for {self._lease:g} s", sure=False)
        for ref in [r for r, c in self._calls.items() if c.slot is slot]:
            del self._calls[ref]

    def _lost_usage(self) -> Usage:
        """What lost attempts spent, of the items in flight or queued again."""
        lost = [*(c.asked.lost for c in self._keys.values()), *(q.lost for q in self._queue)]
        return sum((u for u in lost if u is not NO_USAGE), NO_USAGE)  # (an add makes a Usage)


class _Remote(Protocol):
    def options(self, **kwargs: object) -> _Remote: ...

    def remote(self, *args: object) -> object: ...


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _why_gone(exc: BaseException) -> str:
    """An actor's failure, short: for one that could not start, the error its creation
    raised (Ray's message ends with it: "ModuleNotFoundError: No module named 'x'")."""
    text = str(exc).strip().splitlines()
    if len(text) > 1 and "creation task" in text[0]:
        return f"its actor could not start: {text[-1].strip()}"
    return first_line(exc)
