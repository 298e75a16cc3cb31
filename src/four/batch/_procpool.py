"""``AsyncPool(processes=N)`` (docs/batch.md): N fresh interpreters (``spawn``: safe beside
threads), each hosting an ``AsyncSession``, with two pipes: commands in (the items, stop,
the budget, close), reports out (results, live usage, its own cost stop)."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection as mpc
import os
import pickle
import queue
import signal
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path

from four._outcomes import Crashed, Interrupted, Outcome
from four._types import NO_USAGE, Usage
from four.batch._attempt import NODE
from four.batch._items import Item
from four.batch._journal import Journal, clean_up
from four.batch._result import RunResult, unfinished
from four.batch._sessions import AsyncSession, Spec

READY_WITHIN = 120.0
"""Seconds a worker has to start and load ``make_run`` before the batch gives up."""
TICK = 0.05
"""Seconds a busy worker waits for a result before it looks at its commands again."""
STATUS_EVERY = 0.25
"""Seconds between a worker's reports of its live usage (when it changed): the batch
looks at its budgets as often."""
CLOSE_WITHIN = 60.0
"""Seconds ``close()`` gives the workers to end (15 without ``wait``) before killing them."""
ORPHAN_WAIT = 30.0
"""Seconds a worker whose batch process died gives its runs to end and seal."""


# --- the messages ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stop:
    outcome: Outcome
    kill: bool


@dataclass(frozen=True, slots=True)
class _Spent:
    cost: float  # the batch's spend beyond this worker's live runs


@dataclass(frozen=True, slots=True)
class _Close:
    wait: bool


_Command = Item | _Stop | _Spent | _Close
"""What the batch sends a worker (an ``Item`` is a run to start), a list per message."""


@dataclass(frozen=True, slots=True)
class _Report:
    results: tuple[RunResult, ...]
    stopping: Outcome | None
    runs: tuple[tuple[str, Usage], ...] = ()  # live runs whose usage changed, by item id


_Said = _Report | str
"""What a worker sends the batch: first an empty report (ready) or why make_run did not
load, then reports."""


# --- the batch's side -------------------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    """One worker process as the batch sees it."""

    number: int
    process: BaseProcess
    commands: mpc.Connection
    reports: mpc.Connection
    journal: Path
    running: dict[str, Item] = field(default_factory=dict)
    spending: dict[str, Usage] = field(default_factory=dict)  # its live runs' usage
    outbox: list[_Command] = field(default_factory=list)
    told_spent: float | None = None
    alive: bool = True

    @property
    def usage(self) -> Usage:  # its live runs', by its last report
        return sum(self.spending.values(), NO_USAGE)


class ProcessSession:
    """A batch on ``processes`` worker processes (see ``AsyncPool``)."""

    def __init__(self, spec: Spec, processes: int, gc_threshold: int | None) -> None:
        self._spec = spec
        self._where = f"AsyncPool(processes={processes})"
        try:
            blob = pickle.dumps(spec)  # (its make_run is what may not pickle)
        except Exception as exc:
            raise TypeError(
                f"{self._where}: make_run must pickle to reach the worker processes (start "
                "method spawn): define it at a module's top level, not inside a function or "
                f"as a lambda ({type(exc).__name__}: {exc})"
            ) from None
        self._ready: list[RunResult] = []
        self._stop: Outcome | None = None
        self._stopping: Outcome | None = None
        self._spent = 0.0
        self._closed = False
        self._workers: list[_Worker] = []
        context = multiprocessing.get_context("spawn")
        tag = f"four-procs-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            for number in range(1, processes + 1):
                journal = Path(tempfile.gettempdir()) / f"{tag}-{number}.journal"
                commands_in, commands = context.Pipe(duplex=False)
                reports, reports_out = context.Pipe(duplex=False)
                process = context.Process(
                    target=_worker_main,
                    args=(blob, gc_threshold, journal, commands_in, reports_out),
                    name=f"four-batch-worker-{number}",
                    daemon=True,  # ended at this interpreter's exit, should close be skipped
                )
                # SIGINT blocked while it starts (the mask carries over exec), until it
                # sets its own handler; a Ctrl-C meanwhile waits here for the unblock.
                blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                try:
                    process.start()
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                commands_in.close()  # ours closed: the worker sees EOF if we die...
                reports_out.close()  # ... and we see EOF if it dies
                self._workers.append(_Worker(number, process, commands, reports, journal))
            self._await_ready()
        except BaseException:
            self._kill_all()
            raise

    # --- Session ---------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        return self._spec.max_concurrency

    @property
    def running(self) -> int:
        return sum(len(w.running) for w in self._workers) + len(self._ready)

    def submit(self, item: Item) -> None:
        live = [w for w in self._workers if w.alive]
        if not live:
            why = Crashed("batch", "no worker process is left to run it").text
            self._ready.append(unfinished(item, why, error=why))
            return
        worker = min(live, key=lambda w: len(w.running))  # the least loaded
        worker.running[item.id] = item
        worker.outbox.append(item)  # sent with the next wait, stop or close: one message

    def wait(self, timeout: float) -> list[RunResult]:
        self._flush()
        if not self._ready and self.running:
            self._receive(timeout)
        self._receive(0)  # whatever else is there by now
        ready, self._ready = self._ready, []
        return ready

    def stop(self, outcome: Outcome, *, kill: bool) -> None:
        self._stop = outcome
        for worker in self._workers:
            worker.outbox.append(_Stop(outcome, kill))
        self._flush()

    def running_by_node(self) -> dict[str, int]:
        running = sum(len(w.running) for w in self._workers)
        return {NODE: running} if running else {}

    def live_usage(self) -> Usage:
        return sum((w.usage for w in self._workers if w.alive), NO_USAGE)

    def spent(self, cost: float) -> None:
        self._spent = cost  # told to the workers at the next wait

    def stopping(self) -> Outcome | None:
        return self._stopping

    def close(self, wait: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        for worker in self._workers:
            worker.outbox.append(_Close(wait))
        self._flush()
        deadline = time.monotonic() + (CLOSE_WITHIN if wait else 15.0)
        for worker in self._workers:
            if worker.alive:
                worker.process.join(max(0.0, deadline - time.monotonic()))
        self._kill_all()

    # --- inner workings ----------------------------------------------------------------

    def _await_ready(self) -> None:
        """Wait until every worker has loaded make_run; raise if one cannot."""
        deadline = time.monotonic() + READY_WITHIN
        for worker in self._workers:
            try:  # (a worker that died closed its end of the pipe: EOF)
                if not worker.reports.poll(max(0.0, deadline - time.monotonic())):
                    raise RuntimeError(
                        f"{self._where}: worker process {worker.number} not ready within "
                        f"{READY_WITHIN:g} s"
                    )
                said: _Said = worker.reports.recv()
            except (EOFError, OSError):
                worker.process.join(5)
                raise RuntimeError(
                    f"{self._where}: worker process {worker.number} "
                    f"{_ended(worker.process)} before it was ready (its error is above; a "
                    'script starting worker processes needs `if __name__ == "__main__":`)'
                ) from None
            if isinstance(said, str):
                raise TypeError(
                    f"{self._where}: worker process {worker.number} cannot load make_run "
                    f"({said}): define it in a module the workers import (a "
                    'script\'s own functions need its `if __name__ == "__main__":` guard)'
                )

    def _flush(self) -> None:
        """Send each live worker its commands; with a cost budget, with what the rest of
        the batch spent when it changed (the runs that ended, the other workers' live runs)."""
        live = self.live_usage().known_cost
        for worker in self._workers:
            others = self._spent + live - worker.usage.known_cost
            if self._spec.max_cost is not None and worker.told_spent != others:
                worker.told_spent = others
                worker.outbox.append(_Spent(others))
            if worker.outbox and worker.alive:
                message, worker.outbox = worker.outbox, []
                with contextlib.suppress(OSError):  # dead: the next wait hears of it
                    worker.commands.send(message)
            worker.outbox.clear()

    def _receive(self, timeout: float) -> None:
        live = [w for w in self._workers if w.alive]
        for worker in _heard(live, timeout) if live else ():
            try:
                while worker.reports.poll():
                    self._take(worker, worker.reports.recv())
            except (EOFError, OSError):
                self._died(worker)
                continue
            if not worker.process.is_alive():
                self._died(worker)

    def _take(self, worker: _Worker, said: _Report) -> None:
        worker.spending.update(said.runs)
        for result in said.results:
            worker.running.pop(result.id, None)
            worker.spending.pop(result.id, None)
            self._ready.append(result)
        if said.stopping is not None and self._stop is None and self._stopping is None:
            self._stopping = said.stopping  # one worker's cost check stops them all
            self.stop(said.stopping, kill=False)

    def _died(self, worker: _Worker) -> None:
        """The worker ended: its runs in flight come back crashed, with what each spent by
        the worker's last report (so the budget counts it); what it left running is
        killed."""
        worker.alive = False
        worker.process.join(5)
        why = f"worker process {worker.number} died ({_ended(worker.process)})"
        text = Crashed("batch", f"{why} with the run in flight").text
        for item in worker.running.values():
            spent = worker.spending.get(item.id, NO_USAGE)
            self._ready.append(unfinished(item, text, spent, why))
        worker.running.clear()
        worker.spending.clear()
        clean_up(worker.journal)  # a worker that ended well removed it: nothing to do
        worker.journal.unlink(missing_ok=True)
        worker.commands.close()
        worker.reports.close()
        with contextlib.suppress(ValueError):  # still running (a kill it ignored)
            worker.process.close()

    def _kill_all(self) -> None:
        """End every worker still up (after close's grace, or a failed start)."""
        for worker in self._workers:
            if worker.alive:  # (else released already)
                worker.process.kill()
                self._died(worker)


def _heard(workers: list[_Worker], timeout: float) -> list[_Worker]:
    """The workers that sent a report or whose process ended, within ``timeout`` s."""
    by_handle: dict[object, _Worker] = {}
    for w in workers:
        by_handle[w.reports] = by_handle[w.process.sentinel] = w
    ready = mpc.wait([h for w in workers for h in (w.reports, w.process.sentinel)], timeout)
    return list(dict.fromkeys(by_handle[h] for h in ready))


def _ended(process: BaseProcess) -> str:
    code = process.exitcode
    if code is None:
        return "still running"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


# --- the worker's side ------------------------------------------------------------------


def _worker_main(
    blob: bytes,
    gc_threshold: int | None,
    journal_path: Path,
    commands: mpc.Connection,
    reports: mpc.Connection,
) -> None:
    """A worker process: load the spec, open an in-process AsyncPool, relay. The spec
    comes pickled, so a ``make_run`` it cannot load is a message, not a dead process."""
    # Ctrl-C is the batch's to handle: it stops us. A handler, not SIG_IGN, so the
    # commands the runs start get the default back at their exec.
    signal.signal(signal.SIGINT, lambda signum, frame: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        spec: Spec = pickle.loads(blob)
    except Exception as exc:
        reports.send(f"{type(exc).__name__}: {exc}")
        return
    journal = Journal(journal_path)  # what a SIGKILL leaves running, for the batch to kill
    session = AsyncSession(spec, gc_threshold)
    try:
        reports.send(_Report((), None))
        _relay(session, commands, reports)
    finally:
        journal.close()


def _relay(session: AsyncSession, commands: mpc.Connection, reports: mpc.Connection) -> None:
    """A worker's loop between its pipes and its in-process session (one thread uses the
    session; another sends the reports, so a full pipe never stops the commands)."""
    outbox: queue.SimpleQueue[_Report | None] = queue.SimpleQueue()

    def send() -> None:
        while (report := outbox.get()) is not None:
            try:
                reports.send(report)
            except OSError:  # the batch's process is gone: the loop sees it too
                return

    sender = threading.Thread(target=send, name="four-worker-reports", daemon=True)
    sender.start()
    told: Outcome | None = None
    told_runs: dict[str, Usage] = {}
    told_at = 0.0
    closing: _Close | None = None
    orphaned = False
    while closing is None:
        try:  # every command that has arrived
            heard = commands.poll(0 if session.running else STATUS_EVERY)
            while heard:
                message: list[_Command] = commands.recv()
                for command in message:
                    if isinstance(command, Item):
                        session.submit(command)
                    elif isinstance(command, _Stop):
                        session.stop(command.outcome, kill=command.kill)
                    elif isinstance(command, _Spent):
                        session.spent(command.cost)
                    else:
                        closing = command
                heard = commands.poll(0)
        except (EOFError, OSError):  # the batch's process is gone
            orphaned = True
            break
        done = session.wait(TICK) if session.running else []
        now = time.monotonic()
        if done or now - told_at >= STATUS_EVERY:
            stopping, runs = session.stopping(), session.live_usages()
            changed = tuple((i, u) for i, u in runs.items() if told_runs.get(i) != u)
            if done or changed or stopping != told:
                outbox.put(_Report(tuple(done), stopping, changed))
                told, told_runs = stopping, runs
            told_at = now
    if orphaned:
        session.stop(Interrupted("the batch's process died"), kill=True)
        deadline = time.monotonic() + ORPHAN_WAIT
        while session.running and time.monotonic() < deadline:
            session.wait(TICK)
        session.close(wait=False)
    else:
        session.close(wait=closing is not None and closing.wait)
    outbox.put(None)
    sender.join(timeout=5)
