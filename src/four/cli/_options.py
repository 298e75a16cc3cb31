"""What ``four run`` was asked (flags over ``FOUR_*`` variables over defaults), and the
checks made before the first step: a run that cannot start says why before a billed call."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from four._types import JSON
from four.cli import _settings as env
from four.cli._errors import UsageError
from four.domains import domain_names

if TYPE_CHECKING:
    from four.observe._check import Check
    from four.observe._endpoint import Server
    from four.trajectory._sign import SigningKey

DEFAULT_MAX_STEPS = 100
DEFAULT_COST_LIMIT = 3.0
# The defaults of --attempts, --retries-per-reason and --feedback, and why: docs/search.md.
DEFAULT_ATTEMPTS = 4
DEFAULT_RETRIES_PER_REASON = 2
VISIBLE_FEEDBACK = "output"  # a failing check of the user's own: its failing lines
HELD_OUT_FEEDBACK = "verdict"  # with --check-files: only that it failed


def default_output_dir() -> Path:
    """Where ``four run`` saves runs without ``-o`` (docs/cli.md).

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
    local: str | None = None  # the model run on this machine: a registry name or a .gguf
    mcp: tuple[str, ...] = ()
    mcp_env: tuple[str, ...] = ()
    resumes: str | None = None  # the trajectory this attempt continues (four run --resume)
    attempt: int = 1
    attempts: int = 1  # with --check: each from a fresh copy of the workspace (four.search)
    attempts_by_default: bool = False  # not asked for: a workspace too large to copy runs once
    seed: int = 0
    attempt_temperature: float = 0.7
    workers: int = 1
    otel: bool = False
    preview: bool = False

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


def display_mode(quiet: bool, tty: bool | None = None) -> str:
    """``quiet``, or ``live`` on a terminal (stderr's, unless ``tty`` says), else ``lines``."""
    tty = sys.stderr.isatty() if tty is None else tty
    return "quiet" if quiet else ("live" if tty else "lines")


def options(args: argparse.Namespace, tty: bool | None = None) -> RunOptions:
    """Flags over ``FOUR_*`` variables over defaults; a missing or bad value: ``UsageError``."""
    if args.task is None:
        raise UsageError("give TASK (or --resume TRAJ to continue a run)")
    task = sys.stdin.read() if args.task == "-" else str(args.task)
    if not task.strip():
        raise UsageError("the task is empty")
    domain = getattr(args, "domain", None) or env.get("FOUR_DOMAIN") or "bash"
    if domain not in domain_names():
        raise UsageError(f"FOUR_DOMAIN={domain!r}: use one of {', '.join(domain_names())}")
    model, local = model_choice(args)
    kind, image = env_choice(args)
    prices = args.prices or env.get("FOUR_PRICES")
    toolcalls = env.over(args.toolcalls, "FOUR_TOOLCALLS", False)
    if args.check is not None and not args.check.strip():  # it would accept anything
        raise UsageError("--check is empty: give the command that judges, e.g. --check 'pytest -q'")
    check_files = tuple(getattr(args, "check_files", ()) or ())
    default_feedback = HELD_OUT_FEEDBACK if check_files else VISIBLE_FEEDBACK
    feedback = args.feedback or env.get("FOUR_FEEDBACK") or default_feedback
    if feedback not in ("full", "output", "verdict"):
        raise UsageError(f"FOUR_FEEDBACK={feedback!r}: use full, output or verdict")
    if not args.check and (args.feedback or args.check_files):
        raise UsageError("--feedback and --check-files need --check CMD")
    given = getattr(args, "retries_per_reason", None)
    retries = env.over(given, "FOUR_RETRIES_PER_REASON", DEFAULT_RETRIES_PER_REASON)
    if retries < 1:
        raise UsageError("--retries-per-reason must be at least 1")
    from four.search import DEFAULT_TEMPERATURE

    asked = getattr(args, "attempts", None)  # else with --check: DEFAULT_ATTEMPTS; without, 1
    if asked is None and env.get("FOUR_ATTEMPTS") is not None:
        asked = env.over(None, "FOUR_ATTEMPTS", 1)
    if asked is not None and asked < 1:
        raise UsageError("--attempts must be at least 1")
    if asked is not None and asked > 1 and not args.check:
        raise UsageError(
            "--attempts needs --check CMD: without a judge, the first submission is the end"
        )
    attempts = asked if asked is not None else (DEFAULT_ATTEMPTS if args.check else 1)
    seed = env.over(getattr(args, "seed", None), "FOUR_SEED", 0)
    given_t = getattr(args, "attempt_temperature", None)
    temperature = env.over(given_t, "FOUR_ATTEMPT_TEMPERATURE", DEFAULT_TEMPERATURE)
    if seed < 0 or temperature is None or temperature < 0:
        raise UsageError("--seed and --attempt-temperature must not be negative")
    if local and toolcalls:
        raise UsageError("--local runs in text mode: drop --toolcalls (FOUR_TOOLCALLS)")
    mode = display_mode(args.quiet, tty)
    if toolcalls and domain != "bash":
        raise UsageError(f"--toolcalls is for the bash domain, not --domain {domain}")
    if getattr(args, "mcp", None) and domain != "bash":
        raise UsageError(f"--mcp is for the bash domain, not --domain {domain}")
    return RunOptions(
        task=task,
        domain=domain,
        model=model,
        api_base=args.api_base or env.get("FOUR_API_BASE"),
        toolcalls=bool(toolcalls),
        env=kind,
        image=image,
        cwd=args.cwd,
        command_timeout=env.over(args.command_timeout, "FOUR_COMMAND_TIMEOUT", None),
        timeout=env.over(args.timeout, "FOUR_TIMEOUT", None) or None,
        max_steps=env.over(args.max_steps, "FOUR_MAX_STEPS", DEFAULT_MAX_STEPS),
        cost_limit=env.over(args.cost_limit, "FOUR_COST_LIMIT", DEFAULT_COST_LIMIT) or None,
        prices=env.parse_prices(prices) if prices else None,
        max_format_errors=int(args.max_format_errors),
        check=args.check,
        feedback=feedback,
        check_files=check_files,
        retries_per_reason=int(retries),
        last_judgement=bool(args.last_judgement),
        output_dir=args.output_dir or env.get("FOUR_OUTPUT_DIR") or str(default_output_dir()),
        system_file=args.system or env.get("FOUR_SYSTEM"),
        mode=mode,
        json=bool(args.json),
        sign=getattr(args, "sign", None) or env.get("FOUR_SIGNING_KEY"),
        otel=otel_wanted(getattr(args, "otel", None)),
        # on by default for the model run on this machine: the workspace goes nowhere else
        preview=env.over(getattr(args, "preview", None), "FOUR_PREVIEW", local is not None),
        output_in_workspace=bool(getattr(args, "output_in_workspace", False)),
        local=local,
        mcp=tuple(getattr(args, "mcp", None) or ()),
        mcp_env=tuple(getattr(args, "mcp_env", None) or ()),
        attempts=attempts,
        attempts_by_default=attempts > 1 and asked is None,
        seed=seed,
        attempt_temperature=float(temperature),
        workers=min(getattr(args, "attempt_workers", None) or 1, attempts),
    )


def model_choice(args: argparse.Namespace) -> tuple[str, str | None]:
    """The model (``--model``, ``FOUR_MODEL`` or the local one) and, for a model run on
    this machine, its name (see ``local_model``); none given: ``UsageError``."""
    local = local_model(args)
    model = local or args.model or env.get("FOUR_MODEL")
    if not model:
        raise UsageError("no model: give --model NAME or set FOUR_MODEL")
    return str(model), local


def env_choice(args: argparse.Namespace) -> tuple[str, str | None]:
    """Where commands run (``--env``, ``FOUR_ENV``, else local) and the container image
    (``--image``, ``FOUR_IMAGE``); an unknown place, or docker with no image: ``UsageError``."""
    kind = args.env or env.get("FOUR_ENV") or "local"
    if kind not in env.ENVIRONMENTS:
        raise UsageError(f"FOUR_ENV={kind!r}: use one of {', '.join(env.ENVIRONMENTS)}")
    image = args.image or env.get("FOUR_IMAGE")
    if kind == "docker" and not image:
        raise UsageError("--env docker needs an image: --image NAME or FOUR_IMAGE")
    return kind, image


def otel_wanted(flag: bool | None) -> bool:
    """``--otel``/``--no-otel``, else on where the standard variables name a receiver (and
    ``OTEL_SDK_DISABLED`` is not ``true``); on without the extra: a usage error."""
    why = "--otel"
    if flag is None:
        named = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        disabled = os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
        flag = any(map(os.environ.get, named)) and not disabled
        why = "OTEL_EXPORTER_OTLP_ENDPOINT is set"
    if flag and importlib.util.find_spec("opentelemetry.sdk") is None:
        raise UsageError(f"{why}: traces need four-loop[otel] (pip install 'four-loop[otel]')")
    return flag


def workspace(opts: RunOptions) -> Path | None:
    """The folder the agent's commands work in: ``--cwd`` or here; None where they get a
    fresh one (a container; a sandbox with no ``--cwd``)."""
    if opts.domain == "bash" and (opts.env == "docker" or (opts.env == "sandbox" and not opts.cwd)):
        return None
    return Path(opts.cwd) if opts.cwd else Path.cwd()


def guard_output(opts: RunOptions) -> None:
    """Refuse an output folder the agent's commands could read, unless
    ``--output-in-workspace``."""
    from four.domains._host import inside

    where = workspace(opts)
    if where is None or opts.output_in_workspace:
        return
    if opts.domain == "bash" and opts.env == "sandbox":  # a folder inside it is hidden
        exposed = where.resolve() == Path(opts.output_dir).expanduser().resolve()
    else:
        exposed = inside(Path(opts.output_dir), where)
    if exposed:
        raise UsageError(
            f"-o {opts.output_dir} is inside the agent's workspace {where}, where its "
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
    """``--local [MODEL]`` or ``FOUR_LOCAL``, or with no model, server or provider key
    given, the default local model; None for a hosted model."""
    from four.models import DEFAULT_MODEL

    chosen: str | None = getattr(args, "local", None)
    if chosen is not None and args.model:
        raise UsageError("--local and --model: choose one")
    if chosen is None and not args.model:
        variable = env.get("FOUR_LOCAL")
        if variable is not None and variable.lower() not in env.NO:
            chosen = "" if variable.lower() in env.YES else variable
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


class LocalSettings(TypedDict, total=False):
    ctx: int
    threads: int
    parallel: int
    max_tokens: int
    temperature: float


def local_settings() -> LocalSettings:
    """``local_invoke``'s settings from the ``FOUR_LOCAL_*`` variables that are set."""
    found: dict[str, float] = {}
    for key in ("ctx", "threads", "parallel", "max_tokens"):
        name = f"FOUR_LOCAL_{key.upper()}"
        if (count := env.over(None, name, 0)) < 0:
            raise UsageError(f"{name}={count} is negative")
        if count:
            found[key] = count
    temperature = env.over(None, "FOUR_LOCAL_TEMPERATURE", None)
    if temperature is not None:
        if temperature < 0:
            raise UsageError(f"FOUR_LOCAL_TEMPERATURE={temperature} is negative")
        found["temperature"] = temperature
    return cast(LocalSettings, found)


def api_key(api_base: str | None) -> str | None:
    """``FOUR_API_KEY``; with ``--api-base`` and no such key, ``none``: a provider's real
    key is never sent to a server of the user's choosing."""
    key = env.get("FOUR_API_KEY")
    return "none" if api_base and key is None else key


def signing_key(path: str | None) -> SigningKey | None:
    """The ``--sign`` key, loaded before any model call: a bad one is a ``UsageError``."""
    if not path:
        return None
    from four.trajectory._sign import SigningError, SigningKey

    try:
        return SigningKey.load(path)
    except SigningError as exc:
        raise UsageError(f"--sign: {exc}") from None


def hosted_name(model: str, api_base: str | None) -> str:
    """``model`` as litellm is to be told it: at ``api_base``, a name with no provider
    prefix is sent as ``openai/<name>``."""
    from four.invoke._lazy import litellm_module

    if api_base:
        try:
            litellm_module().get_llm_provider(model, api_base=api_base)
        except Exception:
            return f"openai/{model}"
    return model


def resolve(
    model: str, api_base: str | None, api_key: str | None = None, local: str | None = None
) -> tuple[str, Server | None]:
    """The model name to use and what its server said of itself, or a ``UsageError``
    (``four doctor``'s checks of the provider's key, or of the server at ``api_base``)."""
    if local is not None:
        local_ready(local)
        return local, None
    from four.observe._doctor import provider_key
    from four.observe._endpoint import endpoint, read_server

    model = hosted_name(model, api_base)
    if api_base:
        server = read_server(api_base, api_key)
        refuse(endpoint(model, server))
        return model, server
    refuse(provider_key(model, None))
    return model, None


def local_ready(name: str) -> None:
    """The local model is pulled and its extra installed, or a ``UsageError``."""
    from returns.result import Failure

    from four.models import find_model

    found = find_model(name)
    if isinstance(found, Failure):
        raise UsageError(f"{found.failure()}; or give --model NAME for a hosted model")
    if importlib.util.find_spec("xllamacpp") is None:
        raise UsageError("--local needs the local extra: pip install 'four-loop[local]'")


def prompt_fits(model: str, server: Server | None, system: str, task: str) -> None:
    """The system prompt and task fit the model's known context window, or a ``UsageError``."""
    from four.observe._doctor import context_fit, model_facts

    window = model_facts(model).context_window or (server.context_window if server else None)
    if window is not None:
        refuse(context_fit(system, task, window))


def refuse(check: Check) -> None:
    """A NO-GO check as the one-line usage error."""
    if check.status == "NO-GO":
        raise UsageError(check.detail)


def output_folder(text: str) -> None:
    """The folder trajectories go to, made if missing, or a ``UsageError`` saying why it
    cannot be used (``four doctor``'s check, by writing)."""
    from four.observe._doctor import output_folder as check

    refuse(check(text, make=True, flag="-o"))


def held_out(check_files: Sequence[str]) -> dict[str, str]:
    """Each ``--check-files [DEST=]DIR``: where it goes in the workspace, and its folder.

    >>> held_out(["tests_hidden/", "t=/tmp/x"])
    {'tests_hidden': 'tests_hidden', 't': '/tmp/x'}
    """
    places = {}
    for given in check_files:
        destination, _, folder = given.rpartition("=")
        folder = folder.rstrip("/") or folder
        places[(destination or Path(folder).name).rstrip("/")] = folder
    return places
