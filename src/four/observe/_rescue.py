"""Acting on a run's state: stop it (its driver and everything the driver started end,
its stream is sealed ``stopped: <why>``) and, for a dead or stalled run, start a new
attempt from its saved messages (``four run --resume``), recorded in the watch log.

Each run is acted on under a lock (``flock`` on a file beside it), and its state is
read again once the lock is held, so two watchers never act on one run twice. Only
the recorded driver is killed, never a process that merely has its pid: the pid is
opened (a pidfd) and its start time compared before any signal.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from four._outcomes import Stopped
from four._types import JSON
from four.observe._watch import (
    WATCH_LOG,
    Policy,
    Verdict,
    driver_state,
    judge,
    linked,
    logged,
    observe,
    successor_of,
    watch_log,
)
from four.trajectory._driver import Driver, boot_id, process_start
from four.trajectory._sign import SigningKey

Action: TypeAlias = Literal["none", "resumed", "stopped", "gave_up", "skipped", "failed"]


@dataclass(frozen=True, slots=True)
class Done:
    """What a rescue did to one run, and why."""

    verdict: Verdict
    action: Action
    detail: str

    def to_json(self) -> dict[str, JSON]:
        return {**self.verdict.to_json(), "action": self.action, "detail": self.detail}


PLAN: dict[str, tuple[bool, bool]] = {  # state: (stop it, resume it)
    "dead": (False, True),
    "stalled": (True, True),
    "failed": (False, True),
    "looping": (True, False),
    "over_budget": (True, False),
}


def rescue(
    verdict: Verdict,
    policy: Policy,
    key: SigningKey | None = None,
    *,
    within: Path | None = None,
) -> Done:
    """Act on one run as ``PLAN`` says for its state; the state is read again under the
    run's lock first (another watcher may have acted). Only a record whose seal verifies
    (and, with ``key``, is signed by it) is acted on; a run whose recorded working folder
    is outside ``within`` (when given) is not resumed. Never raises for a run's own
    trouble: what failed is the result's ``detail``."""
    if verdict.state not in PLAN:
        return Done(verdict, "none", "")
    stream = verdict.run.stream
    with _locked(stream) as held:
        if not held:
            return Done(verdict, "skipped", "another watcher holds its lock")
        again = observe(stream)
        if again is None:
            return Done(verdict, "skipped", "it cannot be read any more")
        again = linked(again, successor_of(stream), watch_log(stream.parent))
        current = judge(again, time.time(), policy)
        if current.state != verdict.state:
            return Done(current, "skipped", f"now {current.state}")
        problem = unverified(stream, key)
        if problem:
            return _log(Done(current, "failed", f"{problem}: not acted on"))
        return _act(current, policy, key, within)


def unverified(stream: Path, key: SigningKey | None = None) -> str | None:
    """Why the run's record does not vouch for what a rescue would act on (its driver,
    its settings), or None: its stream, and its sealed document if there is one, must
    each verify against their seal and, with ``key``, be signed by it."""
    from four.checks._audit import audit

    document = stream.with_suffix(".json")
    for record in (stream, document) if document.is_file() else (stream,):
        try:
            found = audit(record, public_key=key.public if key else None)
        except (OSError, ValueError) as exc:  # TrajectoryError: a FIFO, too large...
            return f"its record cannot be verified ({exc})"
        if not found.valid:
            return f"its record {record.name} does not verify ({found.errors[0]})"
    return None


def _act(verdict: Verdict, policy: Policy, key: SigningKey | None, within: Path | None) -> Done:
    stop, resume = PLAN[verdict.state]
    run = verdict.run
    process = driver_state(run.driver)
    if not run.settings:
        return _log(Done(verdict, "failed", "not a run of `four run`: no settings to act with"))
    if stop and process == "alive" and "batch_item" in run.settings:
        return _log(
            Done(verdict, "failed", "its driver is a batch that runs other items: not killed")
        )
    if stop and process == "elsewhere":
        host = run.driver.host if run.driver else "an unknown host"
        return _log(Done(verdict, "failed", f"its driver runs on {host}: stop it there"))
    if stop and run.driver is not None and process == "alive":
        problem = stop_driver(run.driver, run.stream)
        if problem:
            return _log(Done(verdict, "failed", problem))
    sealed = ""
    if not run.sealed and process != "elsewhere":  # a driver elsewhere may still write
        sealed = _seal(run.stream, f"{verdict.state}: {verdict.why}", key)
    if not resume:
        return _log(Done(verdict, "stopped", sealed or f"sealed stopped: {verdict.state}"))
    used = run.attempt + run.tries  # an attempt that died before writing counts too
    if used >= policy.attempts:
        spent = f"{used} attempts of {policy.attempts}"
        if logged(run.stream, "gave_up"):
            return Done(verdict, "gave_up", spent)
        return _log(Done(verdict, "gave_up", spent))
    cwd = run.settings.get("cwd")
    if within is not None and isinstance(cwd, str) and not _inside(cwd, within):
        why = f"its working folder {cwd} is outside {within}: not resumed (--any-cwd would)"
        return _log(Done(verdict, "failed", why))
    try:
        pid, log = spawn_resume(run.stream, run.attempt + 1, cwd)
    except OSError as exc:
        return _log(Done(verdict, "failed", f"cannot start the new attempt: {exc.strerror}"))
    detail = f"attempt {run.attempt + 1}: pid {pid}, log {log.name}"
    done = Done(verdict, "resumed", f"{sealed}; {detail}" if sealed else detail)
    return _log(done, pid)


def _inside(path: str, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or under it, links resolved."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def _seal(stream: Path, why: str, key: SigningKey | None) -> str:
    """Seal a stream whose driver is gone as ``stopped: why``; what happened, in words."""
    from four.trajectory._reseal import NotResealable, seal_stream

    if stream.with_suffix(".json").is_file():
        return ""
    try:
        seal_stream(stream, Stopped(why), key)
    except (NotResealable, OSError) as exc:
        return f"left unsealed: {exc}"
    return f"sealed stopped: {why}"


# --- stopping a driver ---------------------------------------------------------------


def stop_driver(driver: Driver, stream: Path, wait: float = 10.0) -> str | None:
    """SIGKILL the driver of the run whose stream is ``stream`` and every process it
    started (each frozen first, so none can start another while the tree is read); None
    when done, else why not. The pid is held as a pidfd and checked first: its start
    time and boot are the recorded ones, and it holds ``stream`` open for appending, as
    only the run's driver does; a process that merely has the pid is never touched."""
    try:
        pidfd = os.pidfd_open(driver.pid)
    except OSError:
        return None  # gone already
    try:
        if driver.start is None or process_start(driver.pid) != driver.start:
            return f"pid {driver.pid} is another process now: not touched"
        if driver.boot != boot_id():
            return f"pid {driver.pid} was recorded in another boot: not touched"
        if not writes_to(driver.pid, stream):
            return f"pid {driver.pid} does not write this run's stream: not its driver, not touched"
        signal.pidfd_send_signal(pidfd, signal.SIGSTOP)
        tree = _freeze_tree(driver.pid)
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        for pid in tree:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        ready, _, _ = select.select([pidfd], [], [], wait)
        if not ready:
            return f"pid {driver.pid} did not end within {wait:g} s of SIGKILL"
        return None
    except OSError as exc:
        return f"cannot stop pid {driver.pid}: {exc.strerror}"
    finally:
        os.close(pidfd)


def writes_to(pid: int, path: Path) -> bool:
    """Whether process ``pid`` holds ``path`` open for appending (its ``/proc`` fds)."""
    try:
        wanted = os.stat(path)
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            held = os.stat(f"/proc/{pid}/fd/{fd}")
            if (held.st_dev, held.st_ino) != (wanted.st_dev, wanted.st_ino):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as f:
                flags = next(int(line.split()[1], 8) for line in f if line.startswith(b"flags:"))
        except (OSError, StopIteration, ValueError, IndexError):
            continue
        if flags & os.O_ACCMODE != os.O_RDONLY and flags & os.O_APPEND:
            return True
    return False


def _freeze_tree(root: int) -> list[int]:
    """The descendants of ``root`` (stopped already), each stopped in turn until the
    tree stops growing. A stopped parent cannot reap, so no pid here is reused."""
    frozen: list[int] = []
    seen = {root}
    for _ in range(20):
        new = [p for p in _descendants(root) if p not in seen]
        if not new:
            break
        for pid in new:
            seen.add(pid)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
                frozen.append(pid)
    return frozen


def _descendants(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        with contextlib.suppress(IndexError, ValueError):
            parents.setdefault(int(fields[1]), []).append(int(name))
    out: list[int] = []
    todo = [root]
    while todo:
        children = parents.get(todo.pop(), [])
        out += children
        todo += children
    return out


# --- resuming ----------------------------------------------------------------------


def spawn_resume(stream: Path, attempt: int, cwd: JSON = None) -> tuple[int, Path]:
    """Start ``four run --resume`` on the run (its sealed document if there is one, else
    its stream), in a session of its own so it outlives the watcher; its output goes to
    a log beside the run. Returns its pid and the log's path."""
    document = stream.with_suffix(".json")
    source = document if document.is_file() else stream
    log = stream.parent / f".{stream.name.removesuffix('.jsonl')}.attempt{attempt}.log"
    where = cwd if isinstance(cwd, str) and os.path.isdir(cwd) else str(stream.parent)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "four.cli", "run", "--resume", str(source), "-q"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=where,
            start_new_session=True,
        )
    return process.pid, log


# --- the lock and the log -------------------------------------------------------------


@contextlib.contextmanager
def _locked(stream: Path) -> Iterator[bool]:
    """Hold the run's lock (``.<stem>.lock`` beside it) while inside: True, or False
    when another process holds it."""
    path = stream.parent / f".{stream.name.removesuffix('.jsonl')}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # the lock goes with it


def _log(done: Done, pid: int | None = None) -> Done:
    """Append the action to the watch log beside the run (one line, one write); a
    failure said already for the run is not said again on every pass."""
    run = done.verdict.run
    if done.action == "failed":
        said = [e for e in watch_log(run.stream.parent) if e.get("run") == run.stream.name]
        if said and (said[-1].get("action"), said[-1].get("detail")) == ("failed", done.detail):
            return done
    entry: dict[str, JSON] = {
        "at": round(time.time(), 3),
        "run": run.stream.name,
        "state": done.verdict.state,
        "why": done.verdict.why,
        "action": done.action,
        "detail": done.detail,
        "attempt": run.attempt,
        "pid": pid,
        "pid_start": process_start(pid) if pid is not None else None,
    }
    with contextlib.suppress(OSError):
        fd = os.open(
            run.stream.parent / WATCH_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        )
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)
    return done
