"""Flags that several subcommands share (``four run``'s, the model's and environment's, the
judge's) and their value types: defined once, so ``four batch``, ``four plan`` and
``four doctor`` take the same flags as ``four run``."""

from __future__ import annotations

import argparse

from four.cli import _settings as env


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
        choices=env.ENVIRONMENTS,
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
    from four.cli._mcp import run_flags as mcp_flags

    mcp_flags(p)
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


def read_flags(p: argparse.ArgumentParser) -> None:
    """What every reader of trajectory files takes."""
    p.add_argument(
        "--max-size",
        metavar="SIZE",
        help="refuse trajectory files larger than SIZE, e.g. 1G [FOUR_MAX_SIZE, 256M]",
    )
