"""The flags several subcommands share (``four batch``, ``plan`` and ``doctor`` take
``four run``'s), their value types, and the ``FOUR_*`` variables behind them (a flag wins)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TypeVar

from four.cli._errors import UsageError

ENVIRONMENTS = ("local", "persistent", "sandbox", "docker")
Value = TypeVar("Value", bool, int, float | None)


VARIABLES: dict[str, str] = {  # each variable, and what it sets
    "FOUR_MODEL": "model name for litellm, e.g. openai/gpt-4o-mini (--model)",
    "FOUR_LOCAL": "1, or a model name or .gguf path: run on this machine (--local)",
    "FOUR_LOCAL_MODEL": "the model --local runs (default qwen2.5-coder-1.5b)",
    "FOUR_LOCAL_CTX": "--local: tokens of context per run (8192)",
    "FOUR_LOCAL_THREADS": "--local: CPU threads (default: the idle cores, at most 8)",
    "FOUR_LOCAL_PARALLEL": "--local: runs served at once (1)",
    "FOUR_LOCAL_MAX_TOKENS": "--local: tokens a reply at most (1024)",
    "FOUR_LOCAL_TEMPERATURE": "--local: sampling temperature (0: repeatable)",
    "FOUR_MODELS": "folder of pulled models (default: the user's cache folder)",
    "FOUR_API_BASE": "base URL of an OpenAI-compatible server (--api-base)",
    "FOUR_API_KEY": "key sent to --api-base (default: none; never the provider's)",
    "FOUR_OUTPUT_DIR": "where four run saves runs (-o), default ~/.local/state/four/runs",
    "FOUR_DOMAIN": "the domain: what the agent writes, bash by default (--domain)",
    "FOUR_ENV": "local, persistent, sandbox or docker (--env)",
    "FOUR_IMAGE": "container image for --env docker (--image)",
    "FOUR_TOOLCALLS": "1 to use tool calls instead of ```bash blocks (--toolcalls)",
    "FOUR_PREVIEW": "1 or 0: show the model the workspace's files (--preview)",
    "FOUR_MAX_STEPS": "model calls before the run stops (--max-steps)",
    "FOUR_COST_LIMIT": "USD after which the run stops (--cost-limit)",
    "FOUR_PRICES": "USD per million prompt,completion tokens (--prices)",
    "FOUR_TIMEOUT": "wall-clock seconds the whole run may take (--timeout)",
    "FOUR_COMMAND_TIMEOUT": "seconds one command may run (--command-timeout)",
    "FOUR_SYSTEM": "file holding the system prompt (--system)",
    "FOUR_MAX_SIZE": "largest trajectory file read, e.g. 1G (--max-size), default 256M",
    "FOUR_SIGNING_KEY": "private key (four keygen) that signs each run's seal (--sign)",
    "FOUR_HEARTBEAT": "seconds between a run's heartbeats in its stream; 0 = none [5]",
    "FOUR_FEEDBACK": "full, output or verdict: what --check tells the model (--feedback)",
    "FOUR_ATTEMPTS": "attempts at a --check task, each from a fresh copy (--attempts)",
    "FOUR_SEED": "the first attempt's seed; attempt i samples with seed + i - 1 (--seed)",
    "FOUR_ATTEMPT_TEMPERATURE": "temperature of every attempt after the first",
    "FOUR_RETRIES_PER_REASON": "times one failure is told before the attempt is held",
}


def get(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The variable's value, or None when it is unset or empty.

    >>> get("FOUR_MODEL", {"FOUR_MODEL": "openai/gpt-4o"})
    'openai/gpt-4o'
    """
    value = (os.environ if environ is None else environ).get(name, "")
    return value or None


def over(
    given: Value | None, name: str, default: Value, environ: Mapping[str, str] | None = None
) -> Value:
    """A flag's value if given, else its variable's (read as the default's type: yes/no,
    1 or 0, for a bool; a value that is not one is a usage error), else the default.

    >>> over(None, "FOUR_MAX_STEPS", 100, {"FOUR_MAX_STEPS": "7"}), over(3, "FOUR_MAX_STEPS", 100)
    (7, 3)
    >>> over(None, "FOUR_TOOLCALLS", False, {"FOUR_TOOLCALLS": "True"})
    True
    """
    text = get(name, environ)
    if given is not None or text is None:
        return default if given is None else given
    if isinstance(default, bool):
        word = text.strip().lower()
        if word in YES or word in NO:
            return word in YES
        raise UsageError(f"{name}={word!r} is not a yes/no value (use 1 or 0)")
    try:
        return int(text) if isinstance(default, int) else float(text)
    except ValueError:
        what = "an integer" if isinstance(default, int) else "a number"
        raise UsageError(f"{name}={text!r} is not {what}") from None


YES, NO = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def parse_prices(text: str) -> tuple[float, float]:
    """``IN,OUT`` in USD per million tokens, as USD per token (what the invokes take).

    >>> parse_prices("3, 15")
    (3e-06, 1.5e-05)
    """
    parts = text.replace("/", ",").split(",")
    try:
        prompt, completion = (float(p) for p in parts)
    except ValueError:
        raise UsageError(
            f"prices {text!r}: give USD per million prompt and completion tokens, e.g. 3,15"
        ) from None
    if prompt < 0 or completion < 0:
        raise UsageError(f"prices {text!r} are negative")
    return prompt / 1e6, completion / 1e6


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text: str) -> int:
    """A size in bytes: a number with an optional K, M, G or T (powers of 1024).

    >>> parse_size("1.5K")
    1536
    """
    raw = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = raw[-1:] if raw[-1:] in _UNITS else ""
    try:
        size = float(raw[: len(raw) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise UsageError(f"--max-size {text!r}: give a size such as 300M or 2G") from None
    if not 0 < size < 2**63:
        raise UsageError(f"--max-size {text!r}: give a size above zero, such as 300M")
    return int(size)


def count(text: str) -> int:
    """A whole number, 0 included (``--seed``; ``--max-format-errors``, where 0 is no cap)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1 (steps, lines, rows, workers, attempts)."""
    if (value := count(text)) == 0:
        raise argparse.ArgumentTypeError("must be at least 1, not 0")
    return value


def number(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def env_flags(p: argparse.ArgumentParser) -> None:
    """Where commands run: shared by ``run`` and ``replay``."""
    p.add_argument(
        "--env",
        choices=ENVIRONMENTS,
        help="where commands and a domain's tools run: a process each (local), one shell "
        "(persistent), bubblewrap (sandbox) or a container (docker) [FOUR_ENV, local]",
    )
    p.add_argument("--image", help="container image for --env docker [FOUR_IMAGE]")
    p.add_argument(
        "--cwd",
        help="the commands' folder (default: here; replay: as recorded; sandbox: a fresh one)",
    )
    p.add_argument(
        "--command-timeout",
        type=number,
        metavar="SECONDS",
        help="seconds one command may run (then exit 124) [FOUR_COMMAND_TIMEOUT, 120]",
    )


def agent_flags(p: argparse.ArgumentParser) -> None:
    """The model and environment flags that `four run` and `four batch` share."""
    p.add_argument("-m", "--model", help="litellm model name [FOUR_MODEL]")
    p.add_argument(
        "--local",
        nargs="?",
        const="",
        metavar="MODEL",
        help="a model run on this machine (`four model list`, or a .gguf); the default "
        "with no --model and no provider key [FOUR_LOCAL_MODEL, qwen2.5-coder-1.5b]",
    )
    p.add_argument(
        "--api-base", help="an OpenAI-compatible server; no key check then [FOUR_API_BASE]"
    )
    p.add_argument(
        "--toolcalls",
        action=argparse.BooleanOptionalAction,
        help="actions as tool calls instead of ```bash blocks [FOUR_TOOLCALLS]",
    )
    p.add_argument(
        "--preview",
        action=argparse.BooleanOptionalAction,
        help="show the model the workspace's files in the system prompt (docs/search.md) "
        "[FOUR_PREVIEW; on with --local: nothing leaves the machine]",
    )
    p.add_argument(
        "--otel",
        action=argparse.BooleanOptionalAction,
        help="send each run as OpenTelemetry traces (docs/otel.md) [on when "
        "OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set]",
    )
    env_flags(p)


def run_flags(p: argparse.ArgumentParser) -> None:
    """``four run``'s flags (``four doctor run`` takes them too)."""
    from four.domains import domain_names, domain_summary

    p.add_argument(
        "task", metavar="TASK", nargs="?", help="the task; '-' reads it from standard input"
    )
    p.add_argument(
        "--resume",
        metavar="TRAJ",
        help="a new attempt at the run TRAJ, from its messages and settings; no TASK",
    )
    names = domain_names()
    kinds = "; ".join(f"{name}: {domain_summary(name)}" for name in names)
    p.add_argument(
        "--domain",
        choices=names,
        help=f"what the agent writes and how it is run and saved ({kinds}) [FOUR_DOMAIN, bash]",
    )
    agent_flags(p)
    budget_flags(p)
    p.add_argument(
        "--mcp",
        metavar="CMD|URL",
        action="append",
        default=[],
        help="an MCP server whose tools the agent gets beside the shell: a command or an "
        "http(s) URL (repeatable; docs/mcp.md)",
    )
    p.add_argument(
        "--mcp-env",
        metavar="NAME",
        action="append",
        default=[],
        help="a variable passed to the --mcp servers even if it looks secret, e.g. "
        "GITHUB_TOKEN (repeatable)",
    )
    p.add_argument(
        "--workers",
        dest="attempt_workers",
        type=positive_int,
        metavar="N",
        help="attempts run side by side; the first accepted stops the others [1]",
    )
    p.add_argument(
        "-o",
        "--output-dir",
        help="where to save the trajectory, outside the agent's workspace [FOUR_OUTPUT_DIR, "
        "$XDG_STATE_HOME/four/runs or ~/.local/state/four/runs]",
    )
    p.add_argument(
        "--output-in-workspace",
        action="store_true",
        help="allow -o inside the workspace, where the agent's commands can read it",
    )
    p.add_argument(
        "--sign",
        metavar="KEY",
        help="sign the trajectory's seal with this key (four keygen) [FOUR_SIGNING_KEY]",
    )
    output_flags(p, "the final outcome", "the final line")


def budget_flags(p: argparse.ArgumentParser) -> None:
    """A run's limits, prompt and judge: shared by ``run`` and ``batch`` (each of its runs)."""
    p.add_argument(
        "--max-steps", type=positive_int, help="model calls per run at most [FOUR_MAX_STEPS, 100]"
    )
    p.add_argument(
        "--timeout",
        type=number,
        metavar="SECONDS",
        help="wall-clock limit of a run; 0 = none [FOUR_TIMEOUT, none]",
    )
    p.add_argument(
        "--cost-limit",
        type=number,
        help="USD per run, then it stops; 0 = none [FOUR_COST_LIMIT, 3]",
    )
    p.add_argument(
        "--prices",
        metavar="IN,OUT",
        help="USD per million prompt and completion tokens, for a model litellm has no "
        "price for [FOUR_PRICES]",
    )
    p.add_argument(
        "--max-format-errors",
        type=count,
        default=3,
        help="unreadable replies in a row before a run stops; 0 = no cap [3]",
    )
    p.add_argument(
        "--system",
        metavar="FILE",
        help="system prompt from FILE (default: the domain's) [FOUR_SYSTEM]",
    )
    p.add_argument(
        "--check",
        metavar="CMD",
        help="a submission counts only once CMD exits 0 in the environment (--domain "
        "notebook: Python run after the notebook)",
    )
    p.add_argument(
        "--feedback",
        choices=("full", "output", "verdict"),
        help="what the model is told when CMD fails: that it failed (verdict), its failing "
        "lines (output), or CMD too (full) [FOUR_FEEDBACK; output, or verdict with "
        "--check-files: docs/search.md]",
    )
    p.add_argument(
        "--check-files",
        metavar="[DEST=]DIR",
        action="append",
        default=[],
        help="held-out files, put at DEST only while CMD runs (repeatable)",
    )
    p.add_argument(
        "--retries-per-reason",
        type=count,  # 0: refused by options() in one line, as FOUR_RETRIES_PER_REASON=0
        metavar="N",
        help="times one failure is told before the attempt ends held [FOUR_RETRIES_PER_REASON, "
        "2: told once, the built-in model was held with its budget unused]",
    )
    p.add_argument(
        "--attempts",
        type=positive_int,
        metavar="K",
        help="with --check: up to K attempts, each from a fresh copy of the workspace "
        "(docs/search.md) [FOUR_ATTEMPTS, 4 with --check (4 solved the most on the bench, "
        "bench/README.md), 1 without]",
    )
    p.add_argument(
        "--seed",
        type=count,
        help="attempt i samples with seed + i - 1 [FOUR_SEED, 0]",
    )
    p.add_argument(
        "--attempt-temperature",
        type=number,
        metavar="T",
        help="the temperature of every attempt after the first [FOUR_ATTEMPT_TEMPERATURE, 0.7]",
    )
    p.add_argument(
        "--last-judgement",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="judge the final state once when the run ends without a submission [on]",
    )


def output_flags(p: argparse.ArgumentParser, what: str, quiet: str) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", help=f"print only {quiet}")
    group.add_argument("--json", action="store_true", help=f"print {what} as JSON")
