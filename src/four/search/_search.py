"""``attempts``: the search a judge's NO drives. Up to K independent attempts at a task,
each from a pristine copy of the starting workspace, each its own sealed trajectory
linked to the others, until the check accepts one.

The first attempt samples as the caller's G does by default (``first_temperature``, 0:
the most likely reply); each later one samples at ``temperature`` with its own seed
(``seed + index - 1``), so any attempt can be run again as it was. An attempt that ends
without an accepted submission (held by the judge, out of steps, looping, its replies
unreadable, its share of the budget spent, its model call failed after G's retries: a
request timed out, a server error) starts the next one while attempts and budget remain;
an accepted one ends the search, and so does any end that another attempt would meet as
well (the environment broken, the model refusing the key or unknown, Ctrl-C, a crash).

The result is the first accepted attempt; with none, the last one that ran. The user's
workspace is left alone while the attempts run, and then holds the result's work, and
only that (see ``Pristine``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypedDict, TypeVar, Unpack, cast, get_args

from four import _arguments as arguments
from four._checked import check_fields, checked
from four._outcomes import (
    Accepted,
    CostLimitReached,
    Finished,
    Held,
    Interrupted,
    ModelFailed,
    Outcome,
    RepeatedFormatError,
    StepsExhausted,
    Stopped,
    TimeLimitReached,
)
from four._sigint import deferred
from four._types import JSON, NO_USAGE, ModelErrorKind, Usage, Watch
from four.search._attempt import LOOPING, Attempt
from four.search._budget import Budget, Spend
from four.search._group import FORMAT, trajectory_seal, write_record
from four.search._link import AttemptLink, Ended, task_digest
from four.search._recap import recap, summary
from four.search._workspace import Pristine

if TYPE_CHECKING:
    from four.trajectory._sign import SigningKey

T = TypeVar("T")

DEFAULT_TEMPERATURE = 0.7
"""The temperature of every attempt after the first: the sampling Qwen2.5's own
generation settings recommend, random enough that a second attempt is not the first
again, not so random that a small model's commands fall apart."""


class SearchOptions(TypedDict, total=False):
    """How a search is made (``Search(k, task, **options)``, ``attempts``), each optional:

    ``workspace`` the folder copied for each attempt (None: none); ``keep`` folders in it
    neither copied nor touched; ``seed`` (0) and ``temperature`` (``DEFAULT_TEMPERATURE``)
    of attempts after the first, ``first_temperature`` (0) the first's; ``budget`` of all
    attempts together; ``workers`` (1) attempts at once; ``record_dir`` where the group
    record goes (default: beside the first trajectory); ``signing_key`` that signs it;
    ``loop_repeats`` (3; 0: never) the same command and output in a row (or rounds of the
    same 2 to 4 commands and outputs) that stop an attempt; ``scratch`` where the copies go
    (the system's temporary folder); ``keep_copies`` (False) to keep them; ``watch`` asked
    by every attempt's run; ``on_start``, ``on_end`` told of each attempt as it starts and
    ends; ``recap`` (False) to tell each attempt after the first what the ones that ended
    before it did (their commands, the files they changed, how they ended, the check's last
    word: see ``Attempt.prompt``; off by default: on the built-in model it did not help).
    """

    workspace: str | os.PathLike[str] | None
    keep: tuple[str | os.PathLike[str], ...]
    seed: int
    temperature: float
    first_temperature: float
    budget: Budget | None
    workers: int
    record_dir: str | os.PathLike[str] | None
    signing_key: SigningKey | None
    loop_repeats: int
    scratch: str | os.PathLike[str] | None
    keep_copies: bool
    watch: Watch | None
    on_start: Callable[[Attempt], None] | None
    on_end: Callable[[Member[object]], None] | None
    recap: bool


ANOTHER_ACCEPTED = "another attempt was accepted"
_OUTCOMES: tuple[type, ...] = get_args(Outcome)


@dataclass(frozen=True, slots=True)
class Member(Generic[T]):
    """One attempt that ran: its link, how it ended, what its run returned, its sealed
    trajectory (None if its recorder names no file) and what it spent."""

    link: AttemptLink
    outcome: Outcome
    saved: T | None
    path: Path | None
    steps: int
    usage: Usage
    seconds: float

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run

    @property
    def accepted(self) -> bool:
        return isinstance(self.outcome, Accepted)


CONFIGURATION_ERRORS = frozenset(
    {ModelErrorKind.AUTHENTICATION, ModelErrorKind.PERMISSION, ModelErrorKind.NOT_FOUND}
)
"""Model errors every attempt would meet alike (the key refused, the model unknown): they
end the search. Any other model error (a request timed out, a server error, a request
the provider refused for its history) ends only its attempt: the next one starts afresh,
with another history and sampling, as a user who wants the task done would try again."""


@checked
def next_attempt(outcome: Outcome) -> bool:
    """Whether an attempt that ended ``outcome`` leaves the task to another attempt: the
    judge held it, its steps (or its share of a budget) ran out, it looped, its replies
    could not be read, or its model call failed for a reason another attempt may not
    meet (a timeout, a server error after G's retries, a history over the context).
    Anything else ends the search: accepted, submitted with no check to judge it, or an
    end every attempt would meet (a broken environment, ``CONFIGURATION_ERRORS``,
    Ctrl-C, a crash).

    >>> next_attempt(Held("repeated failure: ...")), next_attempt(Accepted("42"))
    (True, False)
    >>> next_attempt(ModelFailed("timeout: no reply in 600 s"))
    True
    >>> next_attempt(ModelFailed("authentication: invalid api key"))
    False
    """
    match outcome:
        case Held() | StepsExhausted() | RepeatedFormatError():
            return True
        case CostLimitReached() | TimeLimitReached():
            return True  # the run's own share; the search's budget is asked apart
        case Stopped(reason):
            return reason.startswith(LOOPING)
        case ModelFailed(error):
            return error.split(":", 1)[0].strip() not in CONFIGURATION_ERRORS
    return False


class Search(Generic[T]):
    """A search's state: its members as they end, its result, its group record. See
    ``attempts``; ``run`` and ``arun`` drive it, once."""

    def __init__(self, k: int, task: str, **options: Unpack[SearchOptions]) -> None:
        workspace = options.get("workspace")
        seed, workers = options.get("seed", 0), options.get("workers", 1)
        temperature = options.get("temperature", DEFAULT_TEMPERATURE)
        first_temperature = options.get("first_temperature", 0.0)
        loop_repeats, budget = options.get("loop_repeats", 3), options.get("budget")
        arguments.count("attempts", "k", k, minimum=1)
        arguments.text("attempts", "task", task, empty=True)
        arguments.path("attempts", "workspace", workspace, optional=True)
        arguments.count("attempts", "seed", seed, minimum=0)
        arguments.amount("attempts", "temperature", temperature)
        arguments.amount("attempts", "first_temperature", first_temperature)
        arguments.count("attempts", "workers", workers, minimum=1)
        arguments.count("attempts", "loop_repeats", loop_repeats, minimum=0)
        if budget is not None and not isinstance(budget, Budget):
            raise TypeError(
                f"attempts: budget must be a Budget, e.g. Budget(steps=40); got {budget!r:.60}"
            )
        self.k, self.task, self.seed = k, task, seed
        self.temperature, self.first_temperature = float(temperature), float(first_temperature)
        self.budget = budget or Budget()
        self.workers = workers
        self.workspace = None if workspace is None else Path(workspace)
        self.keep = options.get("keep", ())
        self.scratch = options.get("scratch")
        self.keep_copies = options.get("keep_copies", False)
        self.copies: Path | None = None
        self.lost: str | None = None
        """Why the user's folder was left as it was although an attempt is the result:
        that attempt's own commands deleted its copy (a path seen in a traceback)."""
        """With ``keep_copies``: the folder holding each attempt's copy (``attempt-<i>``)
        after the search, for a look at what every attempt did."""
        self.signing_key = options.get("signing_key")
        self.loop_repeats = loop_repeats
        self.watch = options.get("watch")
        self.on_start = options.get("on_start")
        self.on_end: Callable[[Member[T]], None] | None = options.get("on_end")  # type: ignore[assignment]
        self.recap = options.get("recap", False)
        arguments.flag("attempts", "recap", self.recap)
        self._summaries: dict[int, str] = {}
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.group = f"{stamp}-{os.urandom(6).hex()}"
        self.digest = task_digest(task)
        self.members: list[Member[T]] = []
        self.ended: str | None = None
        """Why the search ended (None while it runs): ``accepted``, ``finished``,
        ``attempts spent``, ``budget spent: ...``, ``stopped: <outcome>``,
        ``interrupted``, ``crashed: ...``."""
        self.record: Path | None = None
        """The group record, once the first attempt's trajectory has a folder."""
        record_dir = options.get("record_dir")
        self.record_dir = None if record_dir is None else Path(record_dir)
        self.spend = Spend(self.budget)
        self.started_at = time.time()
        self._pristine: Pristine | None = None
        self._running: dict[int, tuple[Attempt, Hashable]] = {}
        self._lock = threading.Lock()
        self._winner: int | None = None
        self._interrupted = False
        self._driven = False

    # --- what it found --------------------------------------------------------------------

    @property
    def result(self) -> Member[T] | None:
        """The first accepted attempt; with none, the last one that ran (None: none ran)."""
        accepted = [m for m in self.members if m.accepted]
        if accepted:
            return min(accepted, key=lambda m: m.link.index)
        return self.members[-1] if self.members else None

    @property
    def accepted(self) -> bool:
        return any(m.accepted for m in self.members)

    @property
    def usage(self) -> Usage:
        total = NO_USAGE
        for member in self.members:
            total += member.usage
        return total

    # --- the drivers ------------------------------------------------------------------------

    def run(self, make: Callable[[Attempt], T]) -> Search[T]:
        """Run the attempts (``workers`` at a time, on threads) until one is accepted."""
        self._begin()
        try:
            if self.workers == 1:
                self._one_by_one(make)
            else:
                self._side_by_side(make)
        except BaseException as exc:
            self._finish(_why(exc))
            raise
        self._finish(self.ended or "attempts spent")
        return self

    async def arun(self, make: Callable[[Attempt], Awaitable[T]]) -> Search[T]:
        """``run`` for an ``async def make`` (``await a.arun(...)``): ``workers`` at a time,
        as tasks of the running event loop: ``await Search(k, task, ...).arun(make)``."""
        from four.execute._interrupt import interruptible

        self._begin()

        async def one(attempt: Attempt) -> Member[T] | None:
            key = object()
            with interruptible(key):
                self._running[attempt.index] = (attempt, key)
                try:
                    saved = await make(attempt)
                except BaseException as exc:
                    self._add(attempt, None, exc)
                    raise
                finally:
                    self._running.pop(attempt.index, None)
            return self._add(attempt, saved, None)

        tasks: set[asyncio.Task[Member[T] | None]] = set()
        try:
            index, after = 0, None
            while True:
                while len(tasks) < self.workers and self.ended is None:
                    index += 1
                    if (attempt := self._new(index, after)) is None:
                        break
                    tasks.add(asyncio.ensure_future(one(attempt)))
                if not tasks:
                    break
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                tasks -= done
                for task in done:
                    member = task.result()
                    if member is not None and self.workers == 1:
                        after = member.outcome.text
        except BaseException as exc:
            self._stop_all(Interrupted(type(exc).__name__))
            if not isinstance(exc, Exception):  # cancelled: each run ends interrupted, sealed
                for task in tasks:
                    task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
            self._finish(_why(exc))
            raise
        self._finish(self.ended or "attempts spent")
        return self

    def _one_by_one(self, make: Callable[[Attempt], T]) -> None:
        after: str | None = None
        for index in range(1, self.k + 1):
            attempt = self._new(index, after)
            if attempt is None:
                return
            try:
                saved = make(attempt)
            except BaseException as exc:
                self._add(attempt, None, exc)
                raise
            member = self._add(attempt, saved, None)
            if self.ended is not None:
                return
            after = member.outcome.text if member is not None else after

    def _side_by_side(self, make: Callable[[Attempt], T]) -> None:
        from four.execute._interrupt import interruptible

        def one(attempt: Attempt, key: Hashable) -> Member[T] | None:
            with interruptible(key):
                try:
                    saved = make(attempt)
                except BaseException as exc:
                    self._add(attempt, None, exc)
                    raise
                finally:
                    self._running.pop(attempt.index, None)
            return self._add(attempt, saved, None)

        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="four-attempt")
        pending: set[Future[Member[T] | None]] = set()
        try:
            index = 0
            while True:
                while len(pending) < self.workers and self.ended is None:
                    index += 1
                    if (attempt := self._new(index, None)) is None:
                        break
                    key = object()
                    self._running[attempt.index] = (attempt, key)
                    pending.add(pool.submit(one, attempt, key))
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()  # a crash in a worker ends the search
        except BaseException as exc:
            crashed = Stopped(f"another attempt crashed: {type(exc).__name__}")
            self._stop_all(
                crashed if isinstance(exc, Exception) else Interrupted(type(exc).__name__)
            )
            wait(pending)
            raise
        finally:
            pool.shutdown(wait=True)

    # --- the steps both drivers take -----------------------------------------------------------

    def prepare(self) -> None:
        """Copy the starting workspace now (else the first attempt does): a folder too
        large to copy raises ``WorkspaceTooLarge`` here, before any model call."""
        if self.workspace is not None and self._pristine is None:
            self._pristine = Pristine(self.workspace, keep=self.keep, scratch=self.scratch)

    def _begin(self) -> None:
        if self._driven:
            raise RuntimeError("a Search runs once: make a new one (attempts(...))")
        self._driven = True
        self.prepare()
        self.spend = Spend(self.budget)

    def _new(self, index: int, after: str | None) -> Attempt | None:
        """Attempt ``index``, or None when the search is over (all K made, or the
        budget spent: then ``ended`` says so)."""
        if index > self.k or self.ended is not None:
            return None
        spent = self.spend.spent() or self.spend.out_of_time()
        if spent is not None:
            self.ended = f"budget spent: {spent}"
            return None
        if self._pristine is not None and not self._pristine.start.is_dir():
            self.ended = "an attempt's commands deleted the copies: no pristine start is left"
            return None
        first = index == 1
        link = AttemptLink(
            self.group,
            self.digest,
            index,
            self.k,
            self.seed + index - 1,
            self.first_temperature if first else self.temperature,
            after,
        )
        folder = self._pristine.fresh(index) if self._pristine is not None else None
        attempt = Attempt(link, self.task, folder, self.spend, self.loop_repeats, self.watch)
        with self._lock:
            attempt.recap = recap([s for i, s in sorted(self._summaries.items()) if i < index])
        attempt.stop = self._stopper(index)
        if self.on_start is not None:
            self.on_start(attempt)
        return attempt

    def _stopper(self, index: int) -> Callable[[], Outcome | None]:
        def stop() -> Outcome | None:
            if self._interrupted:
                return Interrupted("KeyboardInterrupt")
            winner = self._winner
            if winner is not None and winner != index:
                return Stopped(f"{ANOTHER_ACCEPTED} (attempt {winner})")
            return None

        return stop

    def _add(
        self, attempt: Attempt, saved: T | None, error: BaseException | None
    ) -> Member[T] | None:
        """The attempt's end, noted: a member (None if its run never opened a record)."""
        linked = attempt.linked
        ended = linked.ended if linked is not None else None
        if ended is not None:
            outcome, stats, path = ended.outcome, ended.stats, ended.path
            member = Member(
                attempt.link, outcome, saved, path, stats.steps, stats.usage, stats.wall_time
            )
        elif isinstance(saved, _OUTCOMES):  # make returned the run's outcome, no record
            outcome = cast(Outcome, saved)
            member = Member(attempt.link, outcome, saved, None, 0, NO_USAGE, 0.0)
        elif error is not None:
            if self.ended is None:
                self.ended = _why(error)
            return None
        else:
            raise TypeError(
                "attempts: make's run saved no record: pass its emit through attempt.emit(...) "
                "(attempt.run does), or return the run's Outcome"
            )
        told = self._summary(attempt, member, ended) if self.recap and not member.accepted else None
        with self._lock:
            if told is not None:
                self._summaries[member.link.index] = told
            self.members.append(member)
            self.members.sort(key=lambda m: m.link.index)
            if member.accepted and self._winner is None:
                self._winner = member.link.index
                self._interrupt_others(member.link.index)
            if self.ended is None:
                self.ended = self._ends(member)
            self._write(finished=False)
        if self.on_end is not None:
            self.on_end(member)
        return member

    def _summary(self, attempt: Attempt, member: Member[T], ended: Ended | None) -> str:
        changed: list[str] | None = None
        if self._pristine is not None and attempt.workspace is not None:
            try:
                changed = self._pristine.changed(attempt.workspace)
            except OSError:  # its commands deleted the copy
                changed = None
        messages = ended.messages if ended is not None else ()
        return summary(member.link.index, member.outcome, messages, changed)

    def _ends(self, member: Member[T]) -> str | None:
        outcome = member.outcome
        if isinstance(outcome, Accepted):
            return "accepted"
        if isinstance(outcome, Finished):
            return "finished"
        if isinstance(outcome, Stopped) and outcome.reason.startswith(ANOTHER_ACCEPTED):
            return None
        if not next_attempt(outcome):
            return f"stopped: {outcome.text}"
        spent = self.spend.spent() or self.spend.out_of_time()
        return f"budget spent: {spent}" if spent is not None else None

    def _interrupt_others(self, winner: int) -> None:
        from four.execute._interrupt import interrupt

        for index, (_, key) in list(self._running.items()):
            if index != winner:
                interrupt(key)

    def _stop_all(self, outcome: Outcome) -> None:
        from four.execute._interrupt import interrupt

        self._interrupted = isinstance(outcome, Interrupted)
        if not self._interrupted and self._winner is None:
            self._winner = 0  # every attempt stops
        for _, key in list(self._running.values()):
            interrupt(key)

    def _finish(self, ended: str) -> None:
        """The search is over: the result's work into the user's folder, the copies
        deleted, the record written ``finished``."""
        with self._lock:
            if self.ended is None or ended.startswith(("interrupted", "crashed")):
                self.ended = ended
        pristine, self._pristine = self._pristine, None
        try:
            if pristine is not None:
                result = self.result
                copy = None if result is None else pristine.scratch / f"attempt-{result.link.index}"
                if copy is not None and copy.is_dir():
                    with deferred():  # a second Ctrl-C must not leave it half one attempt's
                        pristine.promote(copy)
                elif result is not None:
                    self.lost = (
                        f"attempt {result.link.index}'s copy of the workspace was deleted by "
                        "its own commands: the workspace is left as it was"
                    )
        finally:
            if pristine is not None and self.keep_copies:
                self.copies = pristine.scratch
            elif pristine is not None:
                pristine.close()
            with self._lock:
                self._write(finished=True)

    # --- the record ---------------------------------------------------------------------------

    def _write(self, *, finished: bool) -> None:
        if not self.members:  # nothing ran (a usage error before the first run): no record
            return
        folder = self.record_dir
        if folder is None:
            folder = next((m.path.parent for m in self.members if m.path is not None), None)
        if folder is None:
            return
        self.record = write_record(
            folder, self.group, self.to_json(folder, finished), self.signing_key
        )

    def to_json(self, folder: Path, finished: bool) -> dict[str, JSON]:
        """The group record (without its seal), trajectories named relative to ``folder``."""
        result = self.result
        members: list[JSON] = []
        for m in self.members:
            members.append(
                {
                    **m.link.to_json(),
                    "outcome": m.outcome.text,
                    "trajectory": None if m.path is None else os.path.relpath(m.path, folder),
                    "seal": None if m.path is None else trajectory_seal(m.path),
                    "steps": m.steps,
                    "tokens": m.usage.total_tokens,
                    "cost": m.usage.known_cost,
                    "seconds": round(m.seconds, 3),
                }
            )
        b = self.budget
        return {
            "format": FORMAT,
            "group": self.group,
            "task": self.digest,
            "of": self.k,
            "seed": self.seed,
            "temperature": self.temperature,
            "first_temperature": self.first_temperature,
            "workers": self.workers,
            "budget": {"steps": b.steps, "tokens": b.tokens, "cost": b.cost, "seconds": b.seconds},
            "workspace": None if self.workspace is None else str(self.workspace.resolve()),
            "members": members,
            "result": None if result is None else result.link.index,
            "accepted": self.accepted,
            "ended": self.ended if finished else None,
            "finished": finished,
            "started_at": self.started_at,
            "ended_at": time.time() if finished else None,
        }


def _why(exc: BaseException) -> str:
    if isinstance(exc, Exception):
        return f"crashed: {type(exc).__name__}: {exc}"
    return f"interrupted: {type(exc).__name__}"


@checked
def attempts(
    make: Callable[[Attempt], T], k: int = 4, *, task: str, **options: Unpack[SearchOptions]
) -> Search[T]:
    """Up to ``k`` independent attempts at ``task`` until the check accepts one.

    ``make(attempt)`` runs one attempt, usually ``attempt.run(G, V1, V2, emit, ...,
    check=...)``, with G sampling at ``attempt.sampling`` and V2 working in
    ``attempt.workspace``. Each attempt starts from a copy of ``workspace`` as it was
    when the search began (None: the caller's environment makes its own fresh start, as
    a sandbox without a folder or a container does); at the end ``workspace`` holds the
    result's work and nothing else: the first accepted attempt's, else the last one's.
    Folders in ``keep`` (the runs' output, if it lies in the workspace) are not copied
    and not touched.

    Attempt 1 samples at ``first_temperature`` (0), attempt i > 1 at ``temperature`` with
    seed ``seed + i - 1`` (with ``recap=True``, it is also told what the attempts that ended
    before it did and how they ended). ``budget`` bounds all attempts together (model calls, tokens,
    cost, seconds); each run's own ``max_steps`` bounds it alone, so a check is judged
    at most ``k * (initial_rank + 1)`` times. ``workers`` > 1 runs attempts side by side
    (for a model that serves several at once); the first accepted stops the others.
    The group record (``<group>.attempts.json``, beside the first trajectory or in
    ``record_dir``) links every attempt; ``four audit`` checks it whole.

    Ctrl-C or a crash in an attempt: its trajectory is sealed, the record written, the
    user's folder given the last attempt's work, then the exception goes on.

    >>> from four import regex_parse, local_env, save_trajectory, scripted_invoke, verify, command_check
    >>> def make(a):
    ...     return a.run(scripted_invoke(["```bash\\necho 4 > answer.txt\\n```", "done"]),
    ...                  regex_parse(finish_on_plain_text=True), local_env(cwd=a.cwd),
    ...                  save_trajectory("/tmp/four-doc"), max_steps=4,
    ...                  check=verify(command_check("grep -qx 4 answer.txt")))
    >>> import tempfile
    >>> search = attempts(make, 2, task="2 + 2 into answer.txt", workspace=tempfile.mkdtemp())
    >>> search.ended, search.result.link.index
    ('accepted', 1)
    """
    search: Search[T] = Search(k, task, **options)
    return search.run(make)
