"""RayPool's session: runs as calls on threaded Ray actors, a window of calls in flight.

Imported only by ``RayPool.open``. Each actor holds ``make_run`` (shipped once, at its
creation), a ``Supervisor`` (one watchdog thread for its runs) and ``max_concurrency``
threads for runs, plus one control thread (a concurrency group of its own) that takes
stop requests and status polls while every run thread is busy. Ray's own retries are
off: a run whose actor dies is tried once more here, on a live actor, so a half-done
run is never replayed silently; its partial trajectory stays where it was written.
What a lost attempt had spent on metered model calls (as the actor's last status said)
goes with the item: into its lost result, or added to its retry's result (unless the
retry took the first attempt's finished trajectory, whose stats count it already).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

import ray
import ray.exceptions
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from four._outcomes import Crashed, Outcome
from four._types import NO_USAGE, Usage
from four.batch._attempt import MakeRun, item_of, recovered, run_attempt
from four.batch._items import Item
from four.batch._journal import Journal, actor_journal, sweep
from four.batch._result import RunResult
from four.batch._supervisor import Supervisor

if TYPE_CHECKING:
    from four.batch._session import Spec

READY_WITHIN = 120.0
"""Seconds an actor has to start (answer its first ``where``) before runs go to it anyway."""
PROBE_EVERY = 0.2
"""Seconds between asking a restarting actor whether it is back..."""
MAX_PROBES = 300
"""... for at most about a minute; then it counts as gone."""
STATUS_EVERY = 0.5
"""Seconds between polls of the actors' live cost (for the budget and the progress)."""


class _Actor:
    """The actor class (made remote in ``_remote_actor``)."""

    def __init__(
        self,
        make_run: MakeRun,
        root: str,
        time_limit: float | None,
        stall_timeout: float | None,
        max_cost: float | None,
    ) -> None:
        self.make_run = make_run
        self.root = Path(root)
        self.supervisor = Supervisor(time_limit, stall_timeout, max_cost=max_cost)
        self.node = _node_address()
        self.told: dict[str, Usage] = {}  # each live run's usage, as the last status said
        # A restarted actor first kills what its killed predecessor left running.
        actor_id = ray.get_runtime_context().get_actor_id()
        path = actor_journal(str(actor_id))
        self.journal = Journal(path)
        self.cleaned = self.journal.open()
        # Then, beside the runs (the actor is up meanwhile), what actors killed for good
        # left on this node: a `docker ps` per dead journal is not worth a later start.
        self.sweeping = threading.Thread(
            target=self._sweep, args=(path,), name="four-sweep", daemon=True
        )
        self.sweeping.start()

    def _sweep(self, own: Path) -> None:
        self.cleaned.extend(sweep(own))

    def run(self, item: Item, attempt: int, since: float | None) -> tuple[RunResult, bool]:
        """The attempt's result, and whether it was recovered: a retry (``since`` given)
        first looks for the trajectory of a first attempt that finished."""
        if since is not None:
            done = recovered(item, self.root, attempt, self.node, since)
            if done is not None:
                return done, True
        return run_attempt(
            self.make_run, item, self.root, self.supervisor, attempt, self.node
        ), False

    def stop(self, outcome: Outcome, kill: bool) -> None:
        self.supervisor.stop(outcome, kill=kill)

    def status(self, spent: float) -> tuple[tuple[tuple[str, Usage], ...], Outcome | None]:
        """The live runs whose usage changed since the last status (by item id), and the
        supervisor's own cost stop, if any."""
        self.supervisor.spent = spent
        runs = {item_of(key): u for key, u in self.supervisor.live_usages().items()}
        changed = tuple((i, u) for i, u in runs.items() if self.told.get(i) != u)
        self.told = runs
        return changed, self.supervisor.stopping

    def where(self) -> tuple[str, int]:
        return self.node, os.getpid()

    def finish(self) -> list[str]:
        """The batch is over: drop the journal; what this incarnation cleaned up."""
        self.journal.close()
        self.supervisor.close()
        self.sweeping.join(timeout=1)  # (unfinished: the next actor on the node sweeps)
        return list(self.cleaned)


def _node_address() -> str:
    """The address this node registered with (``get_node_ip_address`` would give the
    host's routed address even for a node started on 127.0.0.2)."""
    me = ray.get_runtime_context().get_node_id()
    with contextlib.suppress(Exception):
        for node in cast(Callable[[], list[dict[str, object]]], ray.nodes)():
            if node.get("NodeID") == me:
                return str(node.get("NodeManagerAddress"))
    return cast(Callable[[], str], ray.util.get_node_ip_address)()


class _Method(Protocol):
    def remote(self, *args: object) -> ray.ObjectRef[object]: ...


class _Handle(Protocol):
    """What the session uses of an actor handle (Ray's own types are dynamic)."""

    run: _Method
    stop: _Method
    status: _Method
    where: _Method
    finish: _Method


def _remote_actor() -> object:
    control = ray.method(concurrency_group="control")
    for name in ("stop", "status", "where", "finish"):
        setattr(_Actor, name, control(getattr(_Actor, name)))
    remote = cast(Callable[..., Callable[[type], object]], ray.remote)  # its overloads omit it
    return remote(concurrency_groups={"control": 1})(_Actor)


_ACTOR: object | None = None


@dataclass
class _Slot:
    """One actor as the session sees it."""

    handle: _Handle
    capacity: int
    node_id: str | None
    # The items in flight on it, each with its usage as the actor last said.
    spending: dict[str, Usage] = field(default_factory=dict)
    healthy: bool = False  # takes runs (once its first `where` answered)
    starting: bool = True  # its first `where` has not answered yet
    probe: ray.ObjectRef[object] | None = None  # a `where` call: at the start, after a failure
    reprobe_at: float | None = None  # when to ask again (the actor is restarting)
    probes: int = 0
    status: ray.ObjectRef[object] | None = None
    where: tuple[str, int] | None = None
    gone: str | None = None  # why it counts as gone for good

    @property
    def running(self) -> int:
        return len(self.spending)

    @property
    def probing(self) -> bool:
        """Not known to be gone: being asked whether it is back."""
        return self.probe is not None or self.reprobe_at is not None


@dataclass
class _Call:
    slot: _Slot
    item: Item
    attempt: int
    errors: list[str] = field(default_factory=list)
    since: float = 0.0  # when the first attempt was sent (epoch seconds)
    lost: Usage = NO_USAGE  # what an earlier attempt spent before its actor died


_Queued = tuple[Item, int, list[str], float, Usage]


class RaySession:
    """A batch on Ray (see ``RayPool``, whose settings it is given)."""

    def __init__(
        self,
        address: str | None,
        actors: int | None,
        max_restarts: int,
        init: Mapping[str, object],
        spec: Spec,
    ) -> None:
        global _ACTOR
        self._spec = spec
        self._started_ray = False
        if not ray.is_initialized():
            cast(Callable[..., object], ray.init)(address=address, **dict(init))
            self._started_ray = True
        if _ACTOR is None:
            _ACTOR = _remote_actor()
        listed = cast(Callable[[], list[dict[str, object]]], ray.nodes)()
        nodes = [n for n in listed if n.get("Alive")]
        count = actors if actors is not None else max(1, len(nodes))
        per_actor = max(1, math.ceil(spec.max_concurrency / count))
        self._slots: list[_Slot] = []
        for i in range(count):
            node_id = str(nodes[i]["NodeID"]) if actors is None and nodes else None
            options: dict[str, object] = {
                "num_cpus": 0,
                "max_concurrency": per_actor,
                "max_restarts": max_restarts,
                "max_task_retries": 0,
            }
            if node_id is not None:  # one per node, pinned (soft placement may stack them)
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
            handle = cast(
                _Handle,
                cast(_Remote, _ACTOR)
                .options(**options)
                .remote(
                    spec.make_run,
                    str(spec.output_dir),
                    spec.time_limit,
                    spec.stall_timeout,
                    spec.max_cost,
                ),
            )
            # Runs go to an actor once it answers (each takes at most its share, so
            # runs still spread over all of them): no waiting for the slowest to start.
            self._slots.append(_Slot(handle, per_actor, node_id, probe=handle.where.remote()))
        self._ready_by = time.monotonic() + READY_WITHIN
        self._calls: dict[ray.ObjectRef[object], _Call] = {}
        self._queue: deque[_Queued] = deque()
        self._ready: list[RunResult] = []
        self._stop: Outcome | None = None
        self._stopping: Outcome | None = None
        self._spent = 0.0
        self._polled = 0.0

    # --- Session ---------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._spec.max_concurrency

    @property
    def running(self) -> int:
        return len(self._calls) + len(self._queue) + len(self._ready)

    def submit(self, item: Item) -> None:
        self._queue.append((item, 1, [], 0.0, NO_USAGE))
        self._dispatch()

    def wait(self, timeout: float) -> list[RunResult]:
        self._poll_status()
        self._reprobe()
        self._overdue()
        if not self._ready:
            refs = [*self._calls, *self._probes()]
            if refs:
                ready, _ = ray.wait(refs, num_returns=1, timeout=timeout)
                if ready:  # and whatever else is done by now
                    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                for ref in ready:
                    self._collect(ref)
            elif self._queue:  # waiting for an actor to come back
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
            item, attempt, errors, _, lost = self._queue.popleft()
            self._ready.append(self._lost(item, attempt, errors, outcome.text, lost))

    def live_usage(self) -> Usage:
        """The runs in flight (as their actors last said), and what lost attempts of
        items not ended yet spent: each counted until a result carries it."""
        total = self._lost_usage()
        for slot in self._slots:
            for usage in slot.spending.values():
                if usage is not NO_USAGE:
                    total += usage
        return total

    def spent(self, cost: float) -> None:
        self._spent = cost

    def stopping(self) -> Outcome | None:
        return self._stopping

    def close(self, wait: bool = True) -> None:
        # (An actor still starting is not waited for: it is killed below, and its journal,
        # if it wrote one, is swept by the next actor on its node.)
        finishing = [s.handle.finish.remote() for s in self._slots if s.healthy]
        if finishing:
            with contextlib.suppress(ray.exceptions.RayError):
                ray.wait(finishing, num_returns=len(finishing), timeout=10 if wait else 1)
        if self._started_ray:
            ray.shutdown()
            return
        for slot in self._slots:
            cast(Callable[..., None], ray.kill)(slot.handle, no_restart=True)

    # --- inner workings ----------------------------------------------------------------

    def _dispatch(self) -> None:
        while self._queue and self._stop is None:
            free = [s for s in self._slots if s.healthy and s.running < s.capacity]
            if not free:
                if not any(s.healthy or s.probing for s in self._slots):
                    item, attempt, errors, _, lost = self._queue.popleft()
                    why = "; ".join(dict.fromkeys(s.gone for s in self._slots if s.gone))
                    text = "no Ray actor is left to run it" + (f" ({why})" if why else "")
                    text = Crashed("batch", text).text
                    self._ready.append(self._lost(item, attempt, errors, text, lost))
                    continue
                return
            slot = min(free, key=lambda s: s.running / s.capacity)
            item, attempt, errors, since, lost = self._queue.popleft()
            # A retry first looks for the trajectory of a first attempt that finished.
            ref = slot.handle.run.remote(item, attempt, since if attempt > 1 else None)
            slot.spending[item.id] = NO_USAGE
            self._calls[ref] = _Call(slot, item, attempt, errors, since or time.time(), lost)

    def _collect(self, ref: ray.ObjectRef[object]) -> None:
        call = self._calls.pop(ref, None)
        if call is None:
            self._probed(ref)
            return
        spent = call.slot.spending.pop(call.item.id, NO_USAGE)
        try:
            result, was_recovered = cast(tuple[RunResult, bool], ray.get(ref))
        except ray.exceptions.RayTaskError as exc:  # raised in the actor (run_attempt does not)
            text = Crashed("batch", _first_line(exc.cause or exc)).text
            lost = call.lost + spent
            self._ready.append(
                self._lost(call.item, call.attempt, call.errors, text, lost, final=True)
            )
            return
        except ray.exceptions.RayError as exc:  # the actor died, or cannot be placed again
            self._actor_failed(call, exc, spent)
            return
        if call.errors:  # a retry
            error = "; ".join([*call.errors, *([result.error] if result.error else [])])
            result = replace(result, error=error)
            # Both attempts were paid for, unless the retry took the first attempt's
            # finished trajectory (whose stats count it already).
            if not was_recovered:
                lost = call.lost
                result = replace(
                    result,
                    prompt_tokens=result.prompt_tokens + lost.prompt_tokens,
                    completion_tokens=result.completion_tokens + lost.completion_tokens,
                    cost=result.cost + lost.known_cost,
                )
        self._ready.append(result)

    def _actor_failed(self, call: _Call, exc: Exception, spent: Usage) -> None:
        """The actor died (or could not be reached) with the run in flight, which had
        ``spent`` by the actor's last status: that stays with the item."""
        slot = call.slot
        if slot.healthy:
            slot.healthy = False
            slot.probes = 1
            slot.probe = slot.handle.where.remote()  # answers once the actor is back
            slot.status = None  # a dead actor's last status must not count again
        errors = [*call.errors, f"attempt {call.attempt}: {_first_line(exc)}"]
        lost = call.lost + spent if spent is not NO_USAGE else call.lost
        if call.attempt >= 2 or self._stop is not None:
            reason = self._stop.text if self._stop is not None else None
            text = reason or Crashed("batch", f"its Ray actor died twice: {errors[-1]}").text
            self._ready.append(self._lost(call.item, call.attempt, errors, text, lost))
            return
        self._queue.appendleft((call.item, call.attempt + 1, errors, call.since, lost))

    def _probes(self) -> list[ray.ObjectRef[object]]:
        return [s.probe for s in self._slots if s.probe is not None]

    def _probed(self, ref: ray.ObjectRef[object]) -> None:
        for slot in self._slots:
            if slot.probe is not None and slot.probe == ref:
                slot.probe = None
                try:
                    where = ray.get(ref)
                except ray.exceptions.ActorUnavailableError as exc:  # restarting: ask again soon
                    if slot.probes < MAX_PROBES:
                        slot.reprobe_at = time.monotonic() + PROBE_EVERY
                    else:  # not back within about a minute: gone
                        slot.starting, slot.gone = False, _first_line(exc)
                    return
                except ray.exceptions.RayError as exc:
                    # Gone for good: its node is dead, no restart is left, or it could
                    # not start (its __init__ failed: make_run not importable there...).
                    slot.starting, slot.gone = False, _why_gone(exc)
                    return
                slot.healthy, slot.starting, slot.probes = True, False, 0
                slot.where = cast(tuple[str, int], where)
                if self._stop is not None:
                    slot.handle.stop.remote(self._stop, True)
                return

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
                continue
            try:
                said = ray.get(slot.status)
            except ray.exceptions.RayError:
                said = ((), None)
            runs, stopping = cast(tuple[tuple[tuple[str, Usage], ...], Outcome | None], said)
            slot.status = None
            for item_id, usage in runs:
                if item_id in slot.spending:  # (not one whose result came meanwhile)
                    slot.spending[item_id] = usage
            if stopping is not None and self._stopping is None:
                self._stopping = stopping  # one actor's cost check stops them all
                self.stop(stopping, kill=False)
        if now - self._polled < STATUS_EVERY:
            return
        self._polled = now
        lost = self._lost_usage().known_cost  # spent, and in no result yet
        for slot in self._slots:
            if slot.healthy and slot.status is None:
                slot.status = slot.handle.status.remote(self._spent + lost)

    def _lost_usage(self) -> Usage:
        """What lost attempts spent, of the items in flight or queued again."""
        total = NO_USAGE
        for lost in [*(c.lost for c in self._calls.values()), *(q[4] for q in self._queue)]:
            if lost is not NO_USAGE:
                total += lost
        return total

    def _lost(
        self,
        item: Item,
        attempt: int,
        errors: list[str],
        outcome: str,
        usage: Usage = NO_USAGE,
        *,
        final: bool = False,
    ) -> RunResult:
        """The item's result with no trajectory: with what its lost attempts spent."""
        return RunResult(
            item.id,
            outcome,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost=usage.known_cost,
            error="; ".join(errors) or None,
            attempts=attempt,
            final=final,
            fields=item.fields,
        )


class _Remote(Protocol):
    def options(self, **kwargs: object) -> _Remote: ...

    def remote(self, *args: object) -> object: ...


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _why_gone(exc: BaseException) -> str:
    """An actor's failure, short: for one that could not start, the error its creation
    raised (Ray's message ends with it: "ModuleNotFoundError: No module named 'x'")."""
    text = str(exc).strip().splitlines()
    if len(text) > 1 and "creation task" in text[0]:
        return f"its actor could not start: {text[-1].strip()}"
    return _first_line(exc)
