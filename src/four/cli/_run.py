"""``four run TASK``: an agent on a task, shown live, saved as it goes.

Flags win over ``FOUR_*`` variables, which win over the defaults. Everything that
can be checked before the first step is: the model and its key (or the server at
``--api-base``), the environment, the system prompt file. Ctrl-C ends the run, saves
the trajectory and prints its path (exit 130; SIGTERM the same, exit 143).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TypedDict, cast

from returns.result import Failure

from four._outcomes import Outcome
from four._types import JSON, Execute, Invoke, Message, Parse, Verify
from four.cli import _mcp
from four.cli import _settings as env
from four.cli._errors import UsageError
from four.cli._format import cost, fold, seconds, succeeded, tokens
from four.cli._live import Display, Recording, Watched, WatchedEnv, components
from four.cli._resume import HEARTBEAT, heartbeat
from four.cli._terminal import visible
from four.domains import Domain, DomainError, DomainSetup, domain_names, get_domain
from four.trajectory._load import load_head
from four.trajectory._record import usage_json

if TYPE_CHECKING:
    from four.observe._endpoint import Server
    from four.search._attempt import SamplingArgs
    from four.trajectory._sign import SigningKey

DEFAULT_MAX_STEPS = 100
DEFAULT_COST_LIMIT = 3.0
DEFAULT_ATTEMPTS = 4
"""Attempts at a ``--check`` task unless told otherwise (bench/README.md, tasks: with 4
attempts the verified runs solved the most; each later attempt is a fresh copy)."""
DEFAULT_RETRIES_PER_REASON = 2
"""Times one failure is told to the model before its attempt ends held (bench/README.md,
tasks: the second telling was worth its steps, a third was not)."""
VISIBLE_FEEDBACK = "output"
"""What the model is told of a failing ``--check`` of the user's own: its failing lines
(the agent can read the check's files anyway; on the bench it solved more than
``verdict``). The command itself is not shown: it may hold the answer."""
HELD_OUT_FEEDBACK = "verdict"
"""With ``--check-files``: only that it failed, so the held-out tests stay held out."""


def default_output_dir() -> Path:
    """Where ``four run`` saves runs without ``-o``: ``$XDG_STATE_HOME/four/runs``, else
    ``~/.local/state/four/runs``. Never the agent's workspace: a run's record holds its
    check's command (which often holds the answer), and an agent's ``grep -r .`` would
    read the earlier runs' (and its own).

    >>> default_output_dir().parts[-2:]
    ('four', 'runs')
    """
    state = env.get("XDG_STATE_HOME")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "four" / "runs"


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Everything ``four run`` was asked, after flags and variables are combined."""

    task: str
    domain: str
    model: str
    api_base: str | None
    toolcalls: bool
    env: str
    image: str | None
    cwd: str | None
    command_timeout: float | None
    timeout: float | None
    max_steps: int
    cost_limit: float | None
    prices: tuple[float, float] | None
    max_format_errors: int
    check: str | None
    feedback: str
    check_files: tuple[str, ...]
    retries_per_reason: int
    last_judgement: bool
    output_dir: str
    system_file: str | None
    mode: str
    json: bool
    sign: str | None = None
    output_in_workspace: bool = False
    local: str | None = None
    """The model run on this machine (a registry name or a .gguf path), or None."""
    mcp: tuple[str, ...] = ()
    """MCP servers whose tools the agent gets (commands or URLs: four run --mcp)."""
    mcp_env: tuple[str, ...] = ()
    resumes: str | None = None  # the trajectory this attempt continues (four run --resume)
    attempt: int = 1
    attempts: int = 1
    """With ``--check``: attempts at the task, each from a fresh copy (``four.search``)."""
    attempts_by_default: bool = False  # not asked for: a workspace too large to copy runs once
    seed: int = 0
    attempt_temperature: float = 0.7
    workers: int = 1

    def record(self) -> dict[str, JSON]:
        """The settings stored in the trajectory (``info.components.cli``), task aside."""
        from four import __version__

        data: dict[str, JSON] = {
            k: v for k, v in asdict(self).items() if k not in ("task", "prices", "mode", "json")
        }
        data["prices"] = list(self.prices) if self.prices else None
        data["check_files"] = list(self.check_files)
        if self.env in ("local", "persistent"):  # so `four replay` from elsewhere runs there
            data["cwd"] = os.path.abspath(self.cwd) if self.cwd else os.getcwd()
        data["version"] = __version__
        return data


@dataclass(slots=True)
class Deadline:
    """The run's one clock: once ``seconds`` of wall time have passed since ``started``,
    the run ends ``time_limit_reached``.

    While ``armed()``, the run's every command, tool and check (a check's command, a
    notebook's re-run, a build, a type check, the last judgement) is killed at that
    moment (``four.execute``'s interrupt switch), and none starts after it; the loop,
    asking before each model call and each action, then ends the run, its record sealed.
    A model call already waiting for its answer is not cut: the run ends when it returns.
    """

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
        """While inside, what this thread runs is killed when the time is spent."""
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
    """A watch that ends the run ``save_failed`` once its trajectory cannot be written
    (a full disk...), rather than let it go on unrecorded; then asks ``then``."""

    recording: Recording
    then: Deadline | None = None

    def beat(self) -> None:
        pass

    def stopped(self) -> Outcome | None:
        failure = getattr(self.recording.sink, "failure", None)  # a trajectory sink's
        if isinstance(failure, OSError):
            from four._outcomes import SaveFailed

            return SaveFailed((failure.strerror or str(failure)).lower())
        return self.then.stopped() if self.then is not None else None


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt so the run saves itself and says ``interrupted``."""


def options(args: argparse.Namespace, tty: bool | None = None) -> RunOptions:
    """Combine flags, ``FOUR_*`` variables and defaults; a missing or bad value is a
    ``UsageError``."""
    if args.task is None:
        raise UsageError("give TASK (or --resume TRAJ to continue a run)")
    task = str(args.task)
    if task == "-":
        task = sys.stdin.read()
    if not task.strip():
        raise UsageError("the task is empty")
    domain = getattr(args, "domain", None) or env.get("FOUR_DOMAIN") or "bash"
    if domain not in domain_names():
        raise UsageError(f"FOUR_DOMAIN={domain!r}: use one of {', '.join(domain_names())}")
    local = local_model(args)
    model = local or args.model or env.get("FOUR_MODEL")
    if not model:
        raise UsageError("no model: give --model NAME or set FOUR_MODEL")
    kind = args.env or env.get("FOUR_ENV") or "local"
    if kind not in env.ENVIRONMENTS:
        raise UsageError(f"FOUR_ENV={kind!r}: use one of {', '.join(env.ENVIRONMENTS)}")
    image = args.image or env.get("FOUR_IMAGE")
    if kind == "docker" and not image:
        raise UsageError("--env docker needs an image: --image NAME or FOUR_IMAGE")
    cost_limit = (
        args.cost_limit
        if args.cost_limit is not None
        else env.get_float("FOUR_COST_LIMIT", DEFAULT_COST_LIMIT)
    )
    timeout = args.timeout if args.timeout is not None else env.get_float("FOUR_TIMEOUT", None)
    command_timeout = (
        args.command_timeout
        if args.command_timeout is not None
        else env.get_float("FOUR_COMMAND_TIMEOUT", None)
    )
    prices = args.prices or env.get("FOUR_PRICES")
    toolcalls = args.toolcalls if args.toolcalls is not None else env.get_bool("FOUR_TOOLCALLS")
    if args.check is not None and not args.check.strip():  # it would accept anything
        raise UsageError("--check is empty: give the command that judges, e.g. --check 'pytest -q'")
    check_files = tuple(getattr(args, "check_files", ()) or ())
    default_feedback = HELD_OUT_FEEDBACK if check_files else VISIBLE_FEEDBACK
    feedback = args.feedback or env.get("FOUR_FEEDBACK") or default_feedback
    if feedback not in ("full", "output", "verdict"):
        raise UsageError(f"FOUR_FEEDBACK={feedback!r}: use full, output or verdict")
    if not args.check and (args.feedback or args.check_files):
        raise UsageError("--feedback and --check-files need --check CMD")
    retries = getattr(args, "retries_per_reason", None)
    if retries is None:
        retries = env.get_int("FOUR_RETRIES_PER_REASON", DEFAULT_RETRIES_PER_REASON)
    if retries < 1:
        raise UsageError("--retries-per-reason must be at least 1")
    attempts, seed, temperature, workers = search_options(args)
    if local and toolcalls:
        raise UsageError("--local runs in text mode: drop --toolcalls (FOUR_TOOLCALLS)")
    tty = sys.stderr.isatty() if tty is None else tty
    mode = "quiet" if args.quiet else ("live" if tty else "lines")
    if toolcalls and domain != "bash":
        raise UsageError(f"--toolcalls is for the bash domain, not --domain {domain}")
    if getattr(args, "mcp", None) and domain != "bash":
        raise UsageError(f"--mcp is for the bash domain, not --domain {domain}")
    return RunOptions(
        task=task,
        domain=domain,
        model=str(model),
        api_base=args.api_base or env.get("FOUR_API_BASE"),
        toolcalls=bool(toolcalls),
        env=kind,
        image=image,
        cwd=args.cwd,
        command_timeout=command_timeout,
        timeout=timeout or None,
        max_steps=(
            args.max_steps
            if args.max_steps is not None
            else env.get_int("FOUR_MAX_STEPS", DEFAULT_MAX_STEPS)
        ),
        cost_limit=cost_limit if cost_limit else None,
        prices=env.parse_prices(prices) if prices else None,
        max_format_errors=int(args.max_format_errors),
        check=args.check,
        feedback=feedback,
        check_files=tuple(args.check_files),
        retries_per_reason=int(retries),
        last_judgement=bool(args.last_judgement),
        output_dir=args.output_dir or env.get("FOUR_OUTPUT_DIR") or str(default_output_dir()),
        system_file=args.system or env.get("FOUR_SYSTEM"),
        mode=mode,
        json=bool(args.json),
        sign=getattr(args, "sign", None) or env.get("FOUR_SIGNING_KEY"),
        output_in_workspace=bool(getattr(args, "output_in_workspace", False)),
        local=local,
        mcp=tuple(getattr(args, "mcp", None) or ()),
        mcp_env=tuple(getattr(args, "mcp_env", None) or ()),
        attempts=attempts,
        attempts_by_default=attempts > 1
        and getattr(args, "attempts", None) is None
        and env.get("FOUR_ATTEMPTS") is None,
        seed=seed,
        attempt_temperature=temperature,
        workers=workers,
    )


def search_options(args: argparse.Namespace) -> tuple[int, int, float, int]:
    """``--attempts`` (with ``--check``: ``DEFAULT_ATTEMPTS``; without, 1), ``--seed``,
    ``--attempt-temperature`` and ``--workers``, over their variables."""
    given = getattr(args, "attempts", None)
    if given is None and env.get("FOUR_ATTEMPTS") is not None:
        given = env.get_int("FOUR_ATTEMPTS", 1)
    if given is not None and given < 1:
        raise UsageError("--attempts must be at least 1")
    check = getattr(args, "check", None)
    if given is not None and given > 1 and not check:
        raise UsageError(
            "--attempts needs --check CMD: without a judge, the first submission is the end"
        )
    attempts = given if given is not None else (DEFAULT_ATTEMPTS if check else 1)
    seed = getattr(args, "seed", None)
    seed = env.get_int("FOUR_SEED", 0) if seed is None else seed
    temperature = getattr(args, "attempt_temperature", None)
    if temperature is None:
        from four.search import DEFAULT_TEMPERATURE

        temperature = env.get_float("FOUR_ATTEMPT_TEMPERATURE", DEFAULT_TEMPERATURE)
    if seed < 0 or temperature is None or temperature < 0:
        raise UsageError("--seed and --attempt-temperature must not be negative")
    workers = getattr(args, "attempt_workers", None) or 1
    if workers > attempts:
        workers = attempts
    return attempts, seed, float(temperature), workers


def exposed_workspace(opts: RunOptions) -> Path | None:
    """The agent's workspace when the output folder is inside it and the agent's commands
    would see it there; None when it is outside, or hidden: the bash domain's sandbox
    mounts an empty folder over it (not over the whole workspace), a docker container
    never mounts it, a sandbox without ``--cwd`` works in a fresh folder."""
    from four.domains._host import inside

    if opts.domain == "bash" and opts.env in ("sandbox", "docker"):
        if opts.env == "docker" or opts.cwd is None:
            return None
        same = Path(opts.cwd).resolve() == Path(opts.output_dir).expanduser().resolve()
        return Path(opts.cwd) if same else None  # a folder inside it is hidden
    workspace = Path(opts.cwd) if opts.cwd else Path.cwd()
    return workspace if inside(Path(opts.output_dir), workspace) else None


def guard_output(opts: RunOptions) -> None:
    """Refuse an output folder the agent's commands could read (``exposed_workspace``),
    unless ``--output-in-workspace``: one line naming the flag and the fix."""
    workspace = exposed_workspace(opts)
    if workspace is None or opts.output_in_workspace:
        return
    raise UsageError(
        f"-o {opts.output_dir} is inside the agent's workspace {workspace}, where its "
        "commands can read the runs saved there (a check's command often holds the "
        "answer): give -o a folder outside it, or --output-in-workspace to allow it"
    )


PROVIDER_KEYS = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "MISTRAL_API_KEY", "GROQ_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY",
    "TOGETHERAI_API_KEY", "XAI_API_KEY", "AZURE_API_KEY", "COHERE_API_KEY",
)  # fmt: skip
"""Variables whose presence means a hosted model is meant when none is named."""


def local_model(args: argparse.Namespace) -> str | None:
    """The local model to run on: ``--local [MODEL]`` or ``FOUR_LOCAL``, or, with no model,
    server or provider key given, the default one; None for a hosted model."""
    from four.models import DEFAULT_MODEL

    chosen: str | None = getattr(args, "local", None)
    if chosen is not None and args.model:
        raise UsageError("--local and --model: choose one")
    if chosen is None and not args.model:
        variable = env.get("FOUR_LOCAL")
        if variable is not None and variable.lower() not in ("0", "false", "no", "off"):
            chosen = "" if variable.lower() in ("1", "true", "yes", "on") else variable
    if chosen is None:
        if args.model or env.get("FOUR_MODEL") or args.api_base or env.get("FOUR_API_BASE"):
            return None
        keys = [k for k in PROVIDER_KEYS if os.environ.get(k)]
        if keys:
            raise UsageError(
                f"no model: give --model NAME ({keys[0]} is set), or --local for the "
                "model run on this machine"
            )
        chosen = ""
    return chosen or env.get("FOUR_LOCAL_MODEL") or DEFAULT_MODEL


def resolve(opts: RunOptions, key: str | None) -> tuple[str, Server | None]:
    """The model to run and what its server said of itself, checked before the first
    step (``UsageError`` if it cannot run)."""
    if opts.local is None:
        from four.cli._preflight import resolve as resolve_hosted

        return resolve_hosted(opts.model, opts.api_base, key)
    import importlib.util

    from four.models import find_model

    found = find_model(opts.local)
    if isinstance(found, Failure):
        raise UsageError(f"{found.failure()}; or give --model NAME for a hosted model")
    if importlib.util.find_spec("xllamacpp") is None:
        raise UsageError("--local needs the local extra: pip install 'four-loop[local]'")
    return opts.local, None


class LocalSettings(TypedDict, total=False):
    """The ``local_invoke`` settings a person can set with ``FOUR_LOCAL_*`` variables."""

    ctx: int
    threads: int
    parallel: int
    max_tokens: int
    temperature: float


def local_settings() -> LocalSettings:
    """``local_invoke``'s settings from the ``FOUR_LOCAL_*`` variables that are set."""

    def count(name: str) -> int | None:
        value = env.get_int(name, 0)
        if value < 0:
            raise UsageError(f"{name}={value} is negative")
        return value or None

    settings = LocalSettings()
    if ctx := count("FOUR_LOCAL_CTX"):
        settings["ctx"] = ctx
    if threads := count("FOUR_LOCAL_THREADS"):
        settings["threads"] = threads
    if parallel := count("FOUR_LOCAL_PARALLEL"):
        settings["parallel"] = parallel
    if max_tokens := count("FOUR_LOCAL_MAX_TOKENS"):
        settings["max_tokens"] = max_tokens
    temperature = env.get_float("FOUR_LOCAL_TEMPERATURE", None)
    if temperature is not None:
        if temperature < 0:
            raise UsageError(f"FOUR_LOCAL_TEMPERATURE={temperature} is negative")
        settings["temperature"] = temperature
    return settings


def system_prompt(opts: RunOptions, domain: Domain) -> str:
    """The ``--system`` file's text, or the domain's own prompt."""
    from four.cli._prompts import default_system

    if not opts.system_file:
        return default_system(True) if opts.toolcalls else domain.system
    try:
        return Path(opts.system_file).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read --system {opts.system_file}: {exc.strerror}") from None


def api_key(opts: RunOptions) -> str | None:
    """``FOUR_API_KEY``; with ``--api-base`` and no such key, ``none``: a provider's real
    key is never sent to a server of the user's choosing."""
    key = env.get("FOUR_API_KEY")
    return "none" if opts.api_base and key is None else key


def load_domain(opts: RunOptions) -> Domain:
    """The ``--domain``'s functions; a domain whose extra is missing is a usage error."""
    try:
        return get_domain(opts.domain)
    except DomainError as exc:
        raise UsageError(str(exc)) from None


def setup(opts: RunOptions, signing_key: SigningKey | None = None) -> DomainSetup:
    """What the domain is given for this run."""
    return DomainSetup(
        workspace=Path(opts.cwd) if opts.cwd else None,
        output_dir=Path(opts.output_dir),
        command_timeout=opts.command_timeout,
        env=opts.env,
        image=opts.image,
        signing_key=signing_key,
    )


def build(
    opts: RunOptions,
    model: str,
    key: str | None,
    domain: Domain,
    where: DomainSetup,
    sampling: SamplingArgs | None = None,
) -> tuple[Invoke, Parse, Execute]:
    """G (cycles broken, retried, budgeted), and the domain's V1 and V2 for the options.
    ``sampling`` (an attempt's temperature and seed) goes with every request; a hosted
    model that takes no seed has it dropped."""
    from four.invoke import (
        budget_invoke,
        cycle_breaking_invoke,
        litellm_invoke,
        litellm_toolcall_invoke,
        retry_invoke,
    )
    from four.parse import toolcall_parse

    try:
        V2 = domain.environment(where)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    V1: Parse = toolcall_parse() if opts.toolcalls else domain.parse()
    if opts.mcp:  # the servers' tools beside the shell
        V2 = _mcp.start(opts.mcp, opts.mcp_env, V2)
        V1 = _mcp.parser(V2, V1)
    G: Invoke
    if opts.local is not None:
        from four.invoke import local_invoke

        settings = local_settings()
        if sampling is not None:
            settings["temperature"] = sampling["temperature"]
        seed = 0 if sampling is None else sampling["seed"]
        G = retry_invoke(cycle_breaking_invoke(local_invoke(opts.local, **settings, seed=seed)))
    else:
        extra: dict[str, object] = {}
        if sampling is not None:
            extra = {**sampling, "drop_params": True}
        make = cast(Callable[..., Invoke], litellm_invoke)
        if opts.toolcalls:
            make = cast(Callable[..., Invoke], litellm_toolcall_invoke)
            extra["tools"] = _mcp.definitions(V2) if opts.mcp else []
        model_G = make(model, api_base=opts.api_base, api_key=key, prices=opts.prices, **extra)
        G = retry_invoke(cycle_breaking_invoke(model_G))
    if opts.cost_limit:
        G = budget_invoke(G, cost_limit=opts.cost_limit)
    return G, V1, V2


def domain_check(
    opts: RunOptions, domain: Domain, where: DomainSetup, V2: Execute
) -> Verify | None:
    """What ``--check`` means for the domain: for bash, a command judged with the
    feedback level, held-out files and settings (``make_check``); else the domain's."""
    if domain.name == "bash":
        return make_check(opts)
    return domain.check(where, V2, opts.check)


def make_check(opts: RunOptions) -> Verify | None:
    """The judge of ``--check`` with its feedback level, held-out files and settings."""
    if not opts.check:
        return None
    from four.checks import command_check, verify
    from four.checks._feedback import feedback_level

    files: dict[str, str] = {}
    for given in opts.check_files:
        destination, _, folder = given.rpartition("=")
        folder = folder.rstrip("/") or folder
        files[f"{(destination or Path(folder).name).rstrip('/')}/"] = folder
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


def main(args: argparse.Namespace) -> int:
    """Run the agent; exit 0 finished or accepted, 1 any other end, 2 usage, 130 Ctrl-C."""
    from four import run
    from four.cli._preflight import check_program, output_folder, prompt_fits
    from four.trajectory import TrajectoryNotSaved
    from four.trajectory._sign import SigningError, SigningKey

    history: tuple[Message, ...] = ()
    extra: dict[str, JSON] = {}
    if getattr(args, "resume", None):
        opts, history, extra = _resumed(args)
    else:
        opts = options(args)
    guard_output(opts)
    output_folder(opts.output_dir)  # before any model call: a run that cannot be saved
    try:  # before the model is asked anything: a bad key is a usage error
        signing = SigningKey.load(opts.sign) if opts.sign else None
    except SigningError as exc:
        raise UsageError(f"--sign: {exc}") from None
    domain = load_domain(opts)
    system = system_prompt(opts, domain)
    key = api_key(opts)
    model, server = resolve(opts, key)
    prompt_fits(model, server, system, opts.task)
    if opts.local is not None and opts.workers > 1:  # a slot for each attempt at once
        os.environ.setdefault("FOUR_LOCAL_PARALLEL", str(opts.workers))
    if opts.local is not None and not start_local(opts):  # before V2 holds anything
        return 1
    if opts.attempts > 1 and not history:
        from four.cli._attempts import run_attempts

        status = run_attempts(opts, model, key, domain, system, signing)
        if status is not None:
            return status  # else: one run, as without --attempts
    where = setup(opts, signing)
    G, V1, V2 = build(opts, model, key, domain, where)
    if opts.mcp:
        system = _mcp.system(system, V2, opts.toolcalls)
    check_program(opts.check, V2, domain.name, opts.check_files)  # else it cannot be judged
    check = domain_check(opts, domain, where, V2)
    place = opts.env if domain.name == "bash" else domain.name
    display = Display(opts.mode, title=f"{model} · {place}", max_steps=opts.max_steps)
    recording = Recording(domain.emit(where, V2), components(G, V2, {**opts.record(), **extra}))
    display.start()
    try:
        beats = env.get_float("FOUR_HEARTBEAT", HEARTBEAT) or 0.0
        deadline = Deadline(opts.timeout) if opts.timeout else None
        armed = deadline.armed() if deadline is not None else nullcontext()
        with sigterm_interrupts(), heartbeat(lambda: recording.sink, beats), armed:
            path = run(
                Watched(G, display),
                V1,
                WatchedEnv(V2, display),
                recording,
                system,
                "" if history else opts.task,
                opts.max_steps,
                opts.max_format_errors,
                resume=history,
                check=check,
                watch=Saving(recording, deadline),
            )
    except TrajectoryNotSaved as exc:
        display.stop("not saved")
        return _not_saved(exc, opts)
    except KeyboardInterrupt as exc:
        display.stop("interrupted")
        return _interrupted(recording, opts, exc)
    except Exception:
        display.stop("crashed")
        traceback.print_exc()
        saved = recording.path
        print(f"crashed · saved {saved}" if saved else "crashed before saving", file=sys.stderr)
        return 1
    else:
        display.stop("done")
    finally:
        display.stop()
    item = extra.get("batch_item")
    if isinstance(item, str):  # a resumed item of a batch: its manifest learns of it
        from four.cli._resume import record_in_batch

        problem = record_in_batch(path, item, opts.attempt)
        if problem:
            print(f"four run: not in the batch's manifest: {problem}", file=sys.stderr)
    return report(path, opts)


def _resumed(
    args: argparse.Namespace,
) -> tuple[RunOptions, tuple[Message, ...], dict[str, JSON]]:
    """The options, history and extra record of a new attempt at the run ``--resume``
    names."""
    from four.cli._resume import extra_record, options_of, resumed

    if args.task is not None:
        raise UsageError("--resume takes the task from the trajectory: give no TASK")
    earlier = resumed(args.resume)
    mode = "quiet" if args.quiet else ("live" if sys.stderr.isatty() else "lines")
    opts = options_of(earlier, args.resume, mode=mode, json=bool(args.json))
    return opts, earlier.history, extra_record(earlier.settings)


def _not_saved(exc: OSError, opts: RunOptions) -> int:
    """The run ended, but its record could not be sealed: one line, what was kept."""
    if opts.json:
        kept = getattr(exc, "kept", None)
        print(
            json.dumps(
                {
                    "outcome": f"save_failed: {exc}",
                    "success": False,
                    "path": str(kept) if kept else None,
                },
                indent=2,
            )
        )
    else:
        print(f"four run: save_failed: {exc}", file=sys.stderr)
    return 1


def start_local(opts: RunOptions) -> bool:
    """Start the local model's server before the first step (so step 1's time is the
    model's); False, with the reason printed, if it cannot start."""
    from four.invoke import local_invoke

    assert opts.local is not None
    if opts.mode != "quiet" and not opts.json:
        print(f"starting the local model {opts.local} ...", file=sys.stderr, flush=True)
    started = local_invoke(opts.local, **local_settings()).server()
    if isinstance(started, Failure):
        print(f"four run: error: {started.failure()}", file=sys.stderr)
        return False
    return True


def _interrupted(recording: Recording, opts: RunOptions, exc: KeyboardInterrupt) -> int:
    code = 143 if isinstance(exc, Terminated) else 130
    path = recording.path
    if opts.json:
        outcome = f"interrupted: {type(exc).__name__}"
        saved = str(path) if path else None
        print(json.dumps({"outcome": outcome, "success": False, "path": saved}, indent=2))
    else:
        print(f"interrupted · saved {path}" if path else "interrupted before the run began")
    return code


def report(path: Path, opts: RunOptions, extra: Mapping[str, JSON] | None = None) -> int:
    """Print the final line (or JSON, with ``extra`` added) for a run saved at ``path``;
    its exit status."""
    saved = load_head(path)
    outcome, stats, output = str(saved.outcome), saved.stats, saved.detail.output
    usage, wall = stats.usage.usage(), stats.wall_time
    code = 0 if succeeded(outcome) else 1
    if opts.json:
        print(
            json.dumps(
                {
                    "outcome": outcome,
                    "success": code == 0,
                    "path": str(path),
                    "steps": stats.steps,
                    "usage": usage_json(usage),
                    "wall_time": wall,
                    "submission": output,
                    **(extra or {}),
                },
                indent=2,
            )
        )
        return code
    if opts.mode != "quiet" and output and output.strip():
        shown, _ = fold(visible(output), 20)  # before splitting: a CR is shown, not a break
        print(f"submission:\n{shown}", file=sys.stderr)
    print(
        f"{outcome} · {stats.steps} steps · {tokens(usage.total_tokens)} tokens · "
        f"{cost(usage)} · {seconds(wall)} · {path}"
    )
    return code
