"""Flags that several subcommands share (``four run``'s, the model's and environment's, the
judge's) and their value types: defined once, so ``four batch``, ``four plan`` and
``four doctor`` take the same flags as ``four run``."""

from __future__ import annotations

import argparse

from four.cli import _settings as env


def positive_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
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
        default=None,
        help="where commands, and a domain's tools (kernel, checkers, compilers), run: "
        "a fresh process each (local), one shell kept (persistent), bubblewrap (sandbox) "
        "or a container (docker) [FOUR_ENV, local]",
    )
    p.add_argument("--image", help="container image for --env docker [FOUR_IMAGE]")
    p.add_argument(
        "--cwd",
        help="working directory of the commands (default: here; for replay, as recorded; "
        "for sandbox, a fresh folder)",
    )
    p.add_argument(
        "--command-timeout",
        type=number,
        default=None,
        metavar="SECONDS",
        help="seconds one command may run; a timeout is an observation (exit 124) "
        "[FOUR_COMMAND_TIMEOUT, 120]",
    )


def agent_flags(p: argparse.ArgumentParser) -> None:
    """The model and environment flags that `four run` and `four batch` share."""
    p.add_argument("-m", "--model", help="litellm model name [FOUR_MODEL]")
    p.add_argument(
        "--local",
        nargs="?",
        const="",
        metavar="MODEL",
        help="a model run on this machine, no key needed: a name of `four model list` or a "
        ".gguf path; the default with no --model and no provider key [FOUR_LOCAL_MODEL, "
        "qwen2.5-coder-1.5b]",
    )
    p.add_argument(
        "--api-base", help="an OpenAI-compatible server; no key check then [FOUR_API_BASE]"
    )
    p.add_argument(
        "--toolcalls",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="actions as tool calls instead of ```bash blocks [FOUR_TOOLCALLS]",
    )
    p.add_argument(
        "--preview",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the model the workspace's files (names, sizes, first lines) in the "
        "system prompt when the run begins; a small model that sees its input writes "
        "fewer blind commands [FOUR_PREVIEW; on with --local: nothing leaves the machine]",
    )
    p.add_argument(
        "--otel",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="send each run as OpenTelemetry traces (GenAI conventions) to the OTLP/HTTP "
        "receiver of the standard OTEL_* variables (needs four-loop[otel]; docs/otel.md) "
        "[on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set]",
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
        help="a new attempt at the run TRAJ (a .jsonl cut short, or a .json): its saved "
        "messages and recorded settings, with the steps and time it has left; no TASK",
    )
    names = domain_names()
    kinds = "; ".join(f"{name}: {domain_summary(name)}" for name in names)
    p.add_argument(
        "--domain",
        choices=names,
        default=None,
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
        default=None,
        metavar="N",
        help="attempts run side by side, for a model that serves several at once (--local: "
        "FOUR_LOCAL_PARALLEL slots); the first accepted stops the others [1]",
    )
    p.add_argument(
        "-o",
        "--output-dir",
        help="where to save the trajectory, outside the agent's workspace (it records the "
        "check's command) [FOUR_OUTPUT_DIR, $XDG_STATE_HOME/four/runs or "
        "~/.local/state/four/runs]",
    )
    p.add_argument(
        "--output-in-workspace",
        action="store_true",
        help="allow -o inside the workspace with --env local/persistent and the other "
        "domains, where the agent's commands can read it (--env sandbox hides it, docker "
        "never mounts it)",
    )
    p.add_argument(
        "--sign",
        metavar="KEY",
        help="sign the trajectory's seal with this private key (four keygen; needs "
        "four-loop[sign]; every domain) [FOUR_SIGNING_KEY]",
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
        help="wall-clock limit of a run, checked before each model call and command; its "
        "running command is killed then; 0 = none [FOUR_TIMEOUT, none]",
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
        "price for (else its cost is unknown) [FOUR_PRICES]",
    )
    p.add_argument(
        "--max-format-errors",
        type=positive_int,
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
        help="verified loop: a submission counts only once CMD exits 0 in the environment "
        "(--domain notebook: the notebook is always re-run in a fresh kernel, and CMD is "
        "Python run after it, e.g. an assert)",
    )
    judge_flags(p)


def judge_flags(p: argparse.ArgumentParser) -> None:
    """How ``--check`` judges."""
    p.add_argument(
        "--feedback",
        choices=("full", "output", "verdict"),
        help="what the model is told when CMD fails: only that it failed (verdict: CMD may "
        "hold the answer), its failing lines (output), or CMD too (full); the trajectory "
        "keeps it all [FOUR_FEEDBACK; output for your own check, whose files the agent "
        "can read anyway (its failing lines, never CMD itself); verdict with --check-files, "
        "whose held-out tests must stay held out]",
    )
    p.add_argument(
        "--check-files",
        metavar="[DEST=]DIR",
        action="append",
        default=[],
        help="held-out files for CMD: DIR is put at DEST (default: its name) in a copy of "
        "the workspace only while CMD runs; the agent never sees it (repeatable)",
    )
    p.add_argument(
        "--retries-per-reason",
        type=positive_int,
        default=None,
        metavar="N",
        help="times the same failure is told to the model before the attempt ends held "
        "[FOUR_RETRIES_PER_REASON, 2: told once, the built-in model was often held at its "
        "second submission with its budget unused; bench/README.md, tasks]",
    )
    p.add_argument(
        "--attempts",
        type=positive_int,
        default=None,
        metavar="K",
        help="with --check: up to K attempts, each from a fresh copy of the workspace (its "
        "own trajectory, linked in DIR/<group>.attempts.json), until the check accepts one; "
        "attempts after the first sample with their own seed. The accepted attempt's work "
        "(with none accepted, the last one's) is put back in the workspace. --max-steps is "
        "per attempt; --timeout and --cost-limit cover them all [FOUR_ATTEMPTS, 4 with "
        "--check, 1 without: what 1, 2 and 4 attempts solved is in bench/README.md, tasks; "
        "a workspace too large to copy runs once]",
    )
    p.add_argument(
        "--seed",
        type=positive_int,
        default=None,
        help="attempt i samples with seed + i - 1, so any attempt can be run again [FOUR_SEED, 0]",
    )
    p.add_argument(
        "--attempt-temperature",
        type=number,
        default=None,
        metavar="T",
        help="the temperature of every attempt after the first (the first samples as a "
        "plain run does: 0 on --local) [FOUR_ATTEMPT_TEMPERATURE, 0.7]",
    )
    p.add_argument(
        "--last-judgement",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="judge the final state once when the run ends without a submission (the "
        "budget spent, the model silent); accepted if CMD exits 0 [on]",
    )


def output_flags(p: argparse.ArgumentParser, what: str, quiet: str) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", help=f"print only {quiet}")
    group.add_argument("--json", action="store_true", help=f"print {what} as JSON")
