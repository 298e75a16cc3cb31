"""The supervisor of a batch's runs in one process: one watchdog thread for all of them,
killing a stopped run's commands (``four.execute``'s ``interrupt``; docs/batch.md)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from four._outcomes import CostLimitReached, Interrupted, Outcome, Stalled, TimeLimitReached
from four._types import NO_USAGE, Usage
from four.execute._interrupt import interrupt


def cost_limit_reached(max_cost: float) -> CostLimitReached:
    """The outcome of runs stopped by the batch's cost budget."""
    return CostLimitReached(f"the batch's cost limit of {max_cost:g} USD")


@dataclass(eq=False, slots=True)
class RunWatch:
    """One run's view of the supervisor: implements ``four``'s ``Watch`` protocol.

    ``stop`` is the outcome the run is to end with (None while it may go on); ``by_batch``
    says the batch, not the run, asked for it (Ctrl-C, a batch budget). ``usage`` is
    what the run's metered model calls have used so far (see ``RunContext.meter``).
    """

    key: str
    supervisor: Supervisor
    started: float
    last: float  # when a model call or a command last finished
    stop: Outcome | None = None
    by_batch: bool = False
    usage: Usage = NO_USAGE

    def beat(self) -> None:  # a model call or a command finished
        self.last = time.monotonic()

    def stopped(self) -> Outcome | None:
        """The outcome to end with now, or None to go on."""
        if self.stop is None:
            self.supervisor.check_lease()  # (before a step: a process resumed after a pause)
        return self.stop

    def charge(self, used: Usage | None, /) -> None:
        """What a model call of the run used, counted: once the batch's cost budget is
        spent, every run stops (each over by at most the call it was making)."""
        if used is not None:
            self.usage += used
            self.supervisor.charged()

    def refusal(self) -> None:
        """No call is refused here: a run the batch stops ends at its next step (``stopped``)."""
        return None


class Supervisor:
    """Watches the runs of one process (a thread pool, or one Ray actor): ``time_limit``
    and ``stall_timeout`` per run, and a ``lease`` past which, with no ``renew`` from the
    driver, every run is stopped (a worker cut off never runs beside its retry).

    >>> s = Supervisor(time_limit=None, stall_timeout=None)
    >>> w = s.open("run-1"); w.stopped() is None
    True
    >>> s.stop(TimeLimitReached("batch wall time spent"), kill=False)
    >>> w.stopped().text
    'time_limit_reached: batch wall time spent'
    >>> s.done(w); s.close()
    """

    def __init__(
        self,
        time_limit: float | None = None,
        stall_timeout: float | None = None,
        *,
        max_cost: float | None = None,
        lease: float | None = None,
        killer: Callable[[str], object] = interrupt,
    ) -> None:
        for name, value in (("time_limit", time_limit), ("stall_timeout", stall_timeout)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, not {value}")
        self.time_limit = time_limit
        self.stall_timeout = stall_timeout
        self.max_cost = max_cost
        self.spent = 0.0
        """What the batch spent outside the runs watched here (finished runs, earlier ones)."""
        self._kill = killer
        self._lock = threading.Lock()
        self._watches: dict[str, RunWatch] = {}
        self.stopping: Outcome | None = None
        """The outcome every run is to end with (a batch-wide stop: runs opened later too)."""
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self.lease = lease
        self._lease_until = time.monotonic() + lease if lease is not None else None
        limits = [v for v in (time_limit, stall_timeout, lease) if v is not None]
        if limits:  # the watchdog looks ten times per limit, within [10 ms, 1 s]
            tick = min(1.0, max(0.01, min(limits) / 10))
            self._thread = threading.Thread(
                target=self._watchdog, args=(tick,), name="four-supervisor", daemon=True
            )
            self._thread.start()

    def open(self, key: str) -> RunWatch:
        """Start watching a run; ``key`` is unique among the runs being watched."""
        now = time.monotonic()
        watch = RunWatch(key, self, now, now)
        with self._lock:
            if key in self._watches:
                raise ValueError(f"the run {key!r} is already watched")
            self._watches[key] = watch
            if self.stopping is not None:
                watch.stop, watch.by_batch = self.stopping, True
        return watch

    def done(self, watch: RunWatch) -> None:  # the run ended
        with self._lock:
            self._watches.pop(watch.key, None)

    def stop(self, outcome: Outcome, *, kill: bool, keys: Sequence[str] | None = None) -> None:
        """End runs with ``outcome`` (all of them, and any opened later, when ``keys`` is
        None), at their next step; with ``kill``, their running commands are killed now.

        A run already stopped keeps its first outcome. Thread-safe.
        """
        with self._lock:
            if keys is None:
                self.stopping = outcome
                targets = list(self._watches.values())
            else:
                targets = [w for k in keys if (w := self._watches.get(k)) is not None]
            for watch in targets:
                if watch.stop is None:
                    watch.stop, watch.by_batch = outcome, True
        if kill:
            self._kill_all([w.key for w in targets])

    def renew(self, revoked: Collection[str] = ()) -> None:
        """Word from the driver: the lease goes on, and the runs ``revoked`` (attempts
        it gave up on, by key) are stopped and their commands killed. A lease already
        over stays over for the runs it covered (renewals sent while this process was
        paused arrive late, all at once: the driver may have given their runs up)."""
        if self.lease is not None:
            self.check_lease()
            self._lease_until = time.monotonic() + self.lease
        if revoked:
            with self._lock:
                keys = [k for k in revoked if k in self._watches]
            if keys:
                self.stop(Interrupted("the batch gave this attempt up"), kill=True, keys=keys)

    def check_lease(self) -> None:
        """Stop every run once the lease has run out."""
        until = self._lease_until
        if until is None or time.monotonic() <= until:
            return
        with self._lock:
            going = [k for k, w in self._watches.items() if w.stop is None]
        if going:
            reason = f"no word from the batch's driver for {self.lease:g} s"
            self.stop(Interrupted(reason), kill=True, keys=going)

    def charged(self) -> None:
        """A metered call ended: once the batch's cost budget is spent, every run stops."""
        budget = self.max_cost if self.stopping is None else None
        if budget is not None and self.spent + self.live_usage().known_cost >= budget:
            self.stop(cost_limit_reached(budget), kill=False)

    def live_usage(self) -> Usage:
        """What the metered model calls of the runs being watched have used so far."""
        return sum(self.live_usages().values(), NO_USAGE)

    def live_usages(self) -> dict[str, Usage]:  # each metered run's, by its key
        with self._lock:
            watches = list(self._watches.values())
        return {w.key: w.usage for w in watches if w.usage is not NO_USAGE}

    def close(self) -> None:  # the watchdog ends (runs still watched are left as they are)
        self._closed.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    # --- the watchdog --------------------------------------------------------------

    def _watchdog(self, tick: float) -> None:
        while not self._closed.wait(tick):
            self.check(time.monotonic())

    def check(self, now: float) -> list[str]:
        """Stop the runs over a limit at ``now`` (what the watchdog does every tick);
        returns their keys."""
        self.check_lease()
        over: list[RunWatch] = []
        with self._lock:
            for watch in self._watches.values():
                if watch.stop is None and (reason := self._over(watch, now)) is not None:
                    watch.stop = reason
                    over.append(watch)
        if over:
            self._kill_all([w.key for w in over])
        return [w.key for w in over]

    def _over(self, watch: RunWatch, now: float) -> Outcome | None:
        if self.time_limit is not None and now - watch.started >= self.time_limit:
            return TimeLimitReached(f"the run's wall-clock limit of {self.time_limit:g} s")
        if self.stall_timeout is not None and now - watch.last >= self.stall_timeout:
            return Stalled(f"no model call or command finished for {self.stall_timeout:g} s")
        return None

    def _kill_all(self, keys: list[str]) -> None:
        """In a thread of its own: a container's kill can take a while."""
        if not keys:
            return

        def kill() -> None:
            for key in keys:
                self._kill(key)

        threading.Thread(target=kill, name="four-supervisor-kill", daemon=True).start()
