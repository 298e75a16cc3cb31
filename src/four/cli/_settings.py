"""Settings read from the environment: the defaults behind the command-line flags.

Every flag of ``four run`` that a person sets again and again has a ``FOUR_*``
variable; a flag given on the command line wins over the variable.
"""

from __future__ import annotations

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


def epilog() -> str:
    """The list of variables, for ``four --help``."""
    width = max(map(len, VARIABLES))
    lines = [f"  {name.ljust(width)}  {what}" for name, what in VARIABLES.items()]
    return "environment variables:\n" + "\n".join(lines)


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


def parse_size(text: str, name: str = "--max-size") -> int:
    """A size in bytes: a number with an optional K, M, G or T (powers of 1024).

    >>> parse_size("1.5K")
    1536
    """
    raw = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = raw[-1:] if raw[-1:] in _UNITS else ""
    try:
        size = float(raw[: len(raw) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise UsageError(f"{name} {text!r}: give a size such as 300M or 2G") from None
    if not 0 < size < 2**63:
        raise UsageError(f"{name} {text!r}: give a size above zero, such as 300M")
    return int(size)
