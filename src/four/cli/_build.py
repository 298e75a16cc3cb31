"""The parts of a run made from its options: G, V1, V2, the check, its clock, the report."""

from __future__ import annotations

import json
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, cast

from four._files import Unreadable, read_given
from four._grammar import Constrained
from four._outcomes import Outcome
from four._types import JSON, Execute, Invoke, Parse, Recorder, Verify, Watch
from four.cli import _mcp
from four.cli._errors import UsageError
from four.cli._format import cost, fold, seconds, succeeded, tokens
from four.cli._live import Display, Recording, Watched, components
from four.cli._options import RunOptions, held_out, local_settings, refuse, workspace
from four.cli._terminal import visible
from four.domains import Domain, DomainError, DomainSetup, get_domain
from four.trajectory._load import load_head
from four.trajectory._record import usage_json

if TYPE_CHECKING:
    from four.search._attempt import SamplingArgs
    from four.trajectory._sign import SigningKey


@dataclass(slots=True)
class Deadline:
    """The run's one clock (docs/security.md): once ``seconds`` have passed, the run ends
    ``time_limit_reached``, and while ``armed()`` what it runs is killed then."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def beat(self) -> None:
        pass

    def left(self) -> float:
        """Seconds left (0 once spent)."""
        return max(0.0, self.started + self.seconds - time.monotonic())

    def stopped(self) -> Outcome | None:
        if self.left() > 0:
            return None
        from four._outcomes import TimeLimitReached

        return TimeLimitReached(f"the run took {seconds(self.seconds)} (--timeout)")

    @contextmanager
    def armed(self) -> Iterator[None]:
        import threading

        from four.execute._interrupt import interrupt, interruptible

        key = object()
        timer = threading.Timer(self.left(), interrupt, (key,))
        timer.daemon = True
        with interruptible(key):
            timer.start()
            try:
                yield
            finally:
                timer.cancel()


@dataclass(slots=True)
class Saving:
    """A watch that ends the run ``save_failed`` once its trajectory cannot be written,
    rather than let it go on unrecorded; then asks ``then``."""

    recording: Recording
    then: Deadline | None = None

    def beat(self) -> None:
        pass

    def stopped(self) -> Outcome | None:
        self.recording.began()  # (asked first at the loop's first step)
        failure = getattr(self.recording.sink, "failure", None)  # a trajectory sink's
        if isinstance(failure, OSError):
            from four._outcomes import SaveFailed

            return SaveFailed((failure.strerror or str(failure)).lower())
        return self.then.stopped() if self.then is not None else None


def traced(opts: RunOptions, watch: Watch | None) -> Watch | None:
    """``watch``, behind an ``otel_watch`` with ``--otel`` (the run's spans, sent)."""
    if not opts.otel:
        return watch
    from four.otel import otel_watch

    return otel_watch(then=watch)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt so the run saves itself and says ``interrupted``."""


def system_prompt(opts: RunOptions, domain: Domain) -> str:
    """The ``--system`` file's text, or the domain's own prompt."""
    from four.domains._bash import TOOLCALLS

    if not opts.system_file:
        return TOOLCALLS if opts.toolcalls else domain.system
    try:  # a FIFO nothing writes to, or a device, is refused: never waited on
        return read_given(opts.system_file).decode("utf-8")
    except Unreadable as exc:
        raise UsageError(f"--system: {exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--system {opts.system_file} is not UTF-8 text") from None


def with_preview(system: str, opts: RunOptions) -> str:
    """``system`` and, with ``--preview``, what the workspace holds as the run begins (not
    the run's output folder; nothing where the commands get a folder of their own)."""
    where = workspace(opts)
    if not opts.preview or where is None:
        return system
    from four.domains._preview import prompt_with_preview

    return prompt_with_preview(system, where, (opts.output_dir,))


def load_domain(name: str) -> Domain:
    """The domain's functions; a domain whose extra is missing is a usage error."""
    try:
        return get_domain(name)
    except DomainError as exc:
        raise UsageError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A run of ``four run`` made (or an attempt of it, or a batch's item's run)."""

    G: Invoke
    V1: Parse
    V2: Execute
    recording: Recording
    system: str
    check: Verify | None


def prepare(
    opts: RunOptions,
    model: str,
    key: str | None,
    domain: Domain,
    system: str,
    cli: Mapping[str, JSON],
    *,
    signing_key: SigningKey | None = None,
    emit: Recorder[Path] | None = None,
    sampling: SamplingArgs | None = None,
    hold: bool = False,
    check_program: bool = True,
) -> Prepared:
    """G (cycles broken, retried, budgeted), the domain's V1 and V2, the system prompt with
    the ``--mcp`` tools, the check (its program found first), ``cli`` recorded by ``emit``
    (the domain's, unless given); ``sampling`` goes with every request."""
    from four.invoke import (
        budget_invoke,
        cycle_breaking_invoke,
        litellm_invoke,
        litellm_toolcall_invoke,
        retry_invoke,
    )
    from four.observe._doctor import check_program as find_program
    from four.parse import toolcall_parse

    where = DomainSetup(  # what the domain is given for this run
        workspace=Path(opts.cwd) if opts.cwd else None,
        output_dir=Path(opts.output_dir),
        command_timeout=opts.command_timeout,
        env=opts.env,
        image=opts.image,
        signing_key=signing_key,
    )
    try:
        V2 = domain.environment(where)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    V1: Parse = toolcall_parse() if opts.toolcalls else domain.parse()
    tools: list[Mapping[str, JSON]] = []  # in tool-call mode, the definitions sent
    if opts.mcp:  # the servers' tools beside the shell
        from four.domains.mcp import mcp_parse

        V2 = servers = _mcp.start(opts.mcp, opts.mcp_env, V2)
        V1 = mcp_parse(servers, V1)
        system = _mcp.system(system, servers, opts.toolcalls)
        tools = list(servers.definitions())
    model_G: Invoke
    if opts.local is not None:
        from four.invoke import local_invoke

        settings = local_settings()
        if sampling is not None:
            settings["temperature"] = sampling["temperature"]
        seed = 0 if sampling is None else sampling["seed"]
        # Decoded under V1's grammar, every reply parses (a V1 with none: free text).
        grammar = V1.grammar() if isinstance(V1, Constrained) else None
        model_G = local_invoke(opts.local, **settings, seed=seed, grammar=grammar)
    else:
        extra: dict[str, object] = {} if sampling is None else {**sampling, "drop_params": True}
        if opts.toolcalls:
            extra["tools"] = tools
        make = cast(
            Callable[..., Invoke], litellm_toolcall_invoke if opts.toolcalls else litellm_invoke
        )
        model_G = make(model, api_base=opts.api_base, api_key=key, prices=opts.prices, **extra)
    G: Invoke = retry_invoke(cycle_breaking_invoke(model_G))
    if opts.cost_limit:
        G = budget_invoke(G, cost_limit=opts.cost_limit)
    if check_program and opts.check and domain.name == "bash":
        refuse(find_program(opts.check, V2, tuple(held_out(opts.check_files))))
    check = make_check(opts) if domain.name == "bash" else domain.check(where, V2, opts.check)
    emit = domain.emit(where, V2) if emit is None else emit
    return Prepared(G, V1, V2, Recording(emit, components(G, V2, cli), hold=hold), system, check)


def watched(
    r: Prepared, opts: RunOptions, model: str, title_end: str = ""
) -> tuple[Prepared, Display]:
    """``r`` with its G and V2 telling a new ``Display``, and the display."""
    place = opts.env if opts.domain == "bash" else opts.domain
    display = Display(opts.mode, title=f"{model} · {place}{title_end}", max_steps=opts.max_steps)
    G = Watched(r.G, display.model_started, display.model_done)
    return replace(r, G=G, V2=Watched(r.V2, display.command_started, display.command_done)), display


def make_check(opts: RunOptions) -> Verify | None:
    """The judge of ``--check`` with its feedback level, held-out files and settings."""
    if not opts.check:
        return None
    from four.checks import command_check, verify
    from four.checks._feedback import feedback_level

    files = {f"{place}/": folder for place, folder in held_out(opts.check_files).items()}
    try:
        check = command_check(opts.check, feedback=feedback_level(opts.feedback), files=files)
    except ValueError as exc:
        raise UsageError(f"--check-files: {exc}") from None
    return verify(
        check, retries_per_reason=opts.retries_per_reason, last_judgement=opts.last_judgement
    )


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While inside, SIGTERM raises ``Terminated`` (main thread only)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def ended(
    opts: RunOptions,
    exc: BaseException,
    path: Path | None,
    before: str,
    extra: Mapping[str, JSON] | None = None,
) -> int:
    """Say what ended the run (Ctrl-C, SIGTERM, a crash), where it was saved; its status."""
    if not isinstance(exc, KeyboardInterrupt):
        traceback.print_exception(exc)
        print(f"crashed · saved {path}" if path else "crashed before saving", file=sys.stderr)
        return 1
    if opts.json:
        failed_json(f"interrupted: {type(exc).__name__}", path, extra)
    else:
        print(f"interrupted · saved {path}" if path else f"interrupted before {before}")
    return 143 if isinstance(exc, Terminated) else 130


def failed_json(outcome: str, path: Path | None, extra: Mapping[str, JSON] | None = None) -> None:
    """``--json``'s answer for a run that ended with no sealed record to report on."""
    saved = str(path) if path else None
    print(json.dumps({"outcome": outcome, "success": False, "path": saved, **(extra or {})},
                     indent=2))  # fmt: skip


def report(path: Path, opts: RunOptions, extra: Mapping[str, JSON] | None = None) -> int:
    """Print the final line (or JSON, with ``extra``) of the run saved at ``path``; status."""
    saved = load_head(path)
    outcome, stats, output = str(saved.outcome), saved.stats, saved.detail.output
    usage, wall = stats.usage.usage(), stats.wall_time
    code = 0 if succeeded(outcome) else 1
    if opts.json:
        answer: dict[str, JSON] = {
            "outcome": outcome,
            "success": code == 0,
            "path": str(path),
            "steps": stats.steps,
            "usage": usage_json(usage),
            "wall_time": wall,
            "submission": output,
            **(extra or {}),
        }
        print(json.dumps(answer, indent=2))
        return code
    if opts.mode != "quiet" and output and output.strip():
        shown, _ = fold(visible(output), 20)  # before splitting: a CR is shown, not a break
        print(f"submission:\n{shown}", file=sys.stderr)
    print(
        f"{outcome} · {stats.steps} steps · {tokens(usage.total_tokens)} tokens · "
        f"{cost(usage)} · {seconds(wall)} · {path}"
    )
    return code
