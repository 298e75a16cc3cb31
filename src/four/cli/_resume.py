"""``four run --resume TRAJ``: a new attempt at a run, from its saved messages, with the
settings its trajectory recorded (``info.components.cli``), and the heartbeat every
``four run`` gives its stream while a step runs long."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from four._types import JSON, Assistant, Message, ToolResult, User, unanswered
from four.cli._errors import UsageError

if TYPE_CHECKING:
    from four.cli._options import RunOptions

HEARTBEAT = 5.0
"""Seconds between heartbeats while nothing else is written (``FOUR_HEARTBEAT``)."""

INTERRUPTED = (
    "(no output: the run was stopped while this ran, and resumed by four watch; "
    "it may not have finished, or may have done part of its work)"
)
"""The observation given for an action whose result the stopped run never recorded."""


@dataclass(frozen=True, slots=True)
class Resumed:
    """What a new attempt starts from: the earlier run's messages (closed, so every
    action has its answer), its recorded settings, and how much budget is left."""

    history: tuple[Message, ...]
    settings: dict[str, JSON]
    task: str
    steps_done: int  # by the earlier attempt itself (its max_steps counts only those)
    elapsed: float  # of the earlier attempt itself
    attempt: int


def verified(path: str, sign: str | None = None) -> None:
    """Refuse, in one line, to resume a record that does not vouch for what a resume acts
    on (its settings: the model server, the working folder, the check command): the
    record ``path`` names, and its stream or sealed document beside it, must each verify
    against their seal, and with ``sign`` (a private key file) be signed by that key.

    >>> verified("missing.json")
    Traceback (most recent call last):
    ...
    four.cli._errors.UsageError: --resume: missing.json cannot be verified (cannot read missing.json: No such file or directory): not resumed
    """
    from four.checks._audit import audit
    from four.cli._options import signing_key

    key = signing_key(sign)
    public = key.public if key else None
    given = Path(path)
    beside = (given.with_suffix(".jsonl"), given.with_suffix(".json"))
    for record in (given, *(p for p in beside if p != given and p.is_file())):
        try:
            found = audit(record, public_key=public)
        except (OSError, ValueError) as exc:  # TrajectoryError: missing, a FIFO, too large
            raise UsageError(
                f"--resume: {record} cannot be verified ({exc}): not resumed"
            ) from None
        if not found.valid:
            problem = found.errors[0] if found.errors else "invalid"
            raise UsageError(f"--resume: {record} does not verify ({problem}): not resumed")


def resumed(path: str) -> Resumed:
    """Read a trajectory to resume; a file that is no run of ``four run`` is a usage error."""
    from four.trajectory import TrajectoryError, load_trajectory

    try:
        old = load_trajectory(path)
    except TrajectoryError as exc:
        raise UsageError(f"--resume: {exc}") from None
    cli = old.info.settings
    if not cli:
        raise UsageError(f"--resume: {path} records no settings of `four run` to resume with")
    task = next((m.content for m in old.messages if isinstance(m, User) and m.kind == "task"), "")
    if not task:
        raise UsageError(f"--resume: {path} holds no task")
    attempt = cli.get("attempt")
    own = old.messages[old.info.resumed_from :]  # its own steps and time: its own settings
    return Resumed(
        closed(old.messages),
        dict(cli),
        task,
        sum(1 for m in own if isinstance(m, Assistant)),
        max(0.0, old.timestamps[-1]) if old.timestamps else 0.0,
        (attempt if type(attempt) is int else 1) + 1,
    )


def closed(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The history with an answer for what the stopped run left unanswered: a last
    reply's command (or each of its tool calls) gets ``INTERRUPTED``.

    >>> closed((User("t", "task"), Assistant("```bash\\nsleep 9\\n```")))[-1].content[:30]
    '(no output: the run was stoppe'
    """
    if messages and isinstance(messages[-1], Assistant) and not messages[-1].tool_calls:
        return (*messages, User(INTERRUPTED, "observation"))
    return messages + tuple(ToolResult(c.id, INTERRUPTED, c.name) for c in unanswered(messages))


def options_of(earlier: Resumed, path: str, *, mode: str, json: bool) -> RunOptions:
    """The ``RunOptions`` of the new attempt: the recorded ones, with the steps and
    wall time left, and the link to the earlier run."""
    from four.cli._options import RunOptions

    names = {f.name for f in dataclasses.fields(RunOptions)}
    given: dict[str, object] = {k: v for k, v in earlier.settings.items() if k in names}
    prices = given.get("prices")
    given["prices"] = tuple(prices) if isinstance(prices, list) and len(prices) == 2 else None
    files = given.get("check_files")
    given["check_files"] = tuple(files) if isinstance(files, list) else ()
    steps = given.get("max_steps")
    given["max_steps"] = max(1, (steps if type(steps) is int else 100) - earlier.steps_done)
    timeout = given.get("timeout")
    if isinstance(timeout, int | float) and timeout:
        given["timeout"] = max(0.001, float(timeout) - earlier.elapsed)
    given.update(
        output_dir=str(Path(path).resolve().parent),  # beside the earlier attempt
        task=earlier.task,
        mode=mode,
        json=json,
        resumes=str(Path(path).resolve()),
        attempt=earlier.attempt,
        attempts=1,  # the run goes on as it was: no new search from its middle
        attempts_by_default=False,
        workers=1,
    )
    try:
        return RunOptions(**given)  # type: ignore[arg-type]  # read from JSON: checked by use
    except TypeError as exc:
        raise UsageError(
            f"--resume: {path} records settings this version cannot use: {exc}"
        ) from None


def record_in_batch(path: Path, item: str, attempt: int) -> str | None:
    """Add the new attempt's result to its batch's manifest (``DIR/manifest.jsonl``, the
    run being in ``DIR/runs/<id>/``), so a later ``four batch`` counts it; None when
    done, else why not (no manifest there; a batch is writing it)."""
    from four.batch._items import Item
    from four.batch._result import MANIFEST, ManifestWriter, read_saved, taken

    root = path.parent.parent.parent
    if path.parent.parent.name != "runs" or not (root / MANIFEST).is_file():
        return f"no batch manifest at {root / MANIFEST}"
    saved = read_saved(path)
    if saved is None or saved.outcome is None:
        return f"{path} cannot be read back"
    try:
        writer = ManifestWriter(root)
    except (RuntimeError, OSError) as exc:
        return str(exc)
    with contextlib.closing(writer):
        writer.write(taken(Item(item), saved, attempt))
    return None


@contextlib.contextmanager
def heartbeat(sink: Callable[[], object]) -> Iterator[None]:
    """While inside, a daemon thread calls ``beat()`` on the sink ``sink()`` gives (the
    run's, once it is open) every ``FOUR_HEARTBEAT`` seconds; 0: none."""
    from four.cli import _settings as env

    every = env.over(None, "FOUR_HEARTBEAT", HEARTBEAT) or 0.0
    if every <= 0:
        yield
        return
    done = threading.Event()

    def loop() -> None:
        while not done.wait(every):
            beat = getattr(sink(), "beat", None)
            if callable(beat):
                with contextlib.suppress(Exception):  # a heartbeat never ends a run
                    beat()

    thread = threading.Thread(target=loop, name="four-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=max(1.0, every))
