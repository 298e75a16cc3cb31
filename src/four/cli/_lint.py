"""``four lint PROMPT... [--tool NAME ...]``: the commands a prompt tells the model to
run, against the real interfaces of the tools (``four.observe._lint``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import TYPE_CHECKING

from four.cli._errors import UsageError

if TYPE_CHECKING:
    from four.observe._lint import Finding


def flags(p: argparse.ArgumentParser) -> None:
    """``four lint``'s flags."""
    from four.cli._settings import env_flags
    from four.domains import domain_names

    p.add_argument(
        "prompts",
        metavar="PROMPT",
        nargs="*",
        help="a system prompt, a task, or a tasks .jsonl; '-' reads standard input",
    )
    p.add_argument(
        "--tool",
        metavar="NAME",
        action="append",
        default=[],
        help="check only the commands of this program (repeatable; default: every command)",
    )
    p.add_argument(
        "--domain",
        metavar="NAME",
        action="append",
        default=[],
        choices=domain_names(),
        help="also lint this domain's built-in system prompt (repeatable)",
    )
    env_flags(p)
    timeout = p._option_string_actions["--command-timeout"]  # here it bounds each --help
    timeout.help = "seconds one tool's --help (or introspection) may take [10]"
    p.add_argument("--json", action="store_true", help="print the findings as JSON")


def main(args: argparse.Namespace) -> int:
    """Lint each prompt; print a line per finding (or JSON); the exit status."""
    from four.cli._build import load_domain
    from four.cli._options import env_choice
    from four.cli._terminal import visible
    from four.observe._interface import toolbox
    from four.observe._lint import PromptError, decode_prompt, lint_prompt, lint_text

    if not args.prompts and not args.domain:
        raise UsageError("give a PROMPT file (or -, or --domain NAME) to lint")
    kind, image = env_choice(args)
    try:
        tools = toolbox(kind, args.cwd, image=image, timeout=args.command_timeout or 10.0)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    found: list[Finding] = []
    try:  # every prompt asked for, in order
        for name in args.domain:
            found += lint_text(load_domain(name).system, f"<{name} domain>", tools, only=args.tool)
        for prompt in args.prompts:
            if prompt == "-":
                text = decode_prompt(sys.stdin.buffer.read(), "<stdin>")
                found += lint_text(text, "<stdin>", tools, only=args.tool)
            else:
                found += lint_prompt(prompt, tools, only=args.tool)
    except PromptError as exc:
        raise UsageError(str(exc)) from None
    finally:
        tools.close()
    problems = [f for f in found if f.problem]
    if args.json:
        rows = [{**dataclasses.asdict(f), "text": str(f)} for f in found]
        print(json.dumps({"findings": rows, "problems": len(problems)}, indent=2))
        return 1 if problems else 0
    for finding in found:
        print(visible(str(finding) if finding.problem else f"note: {finding}"))
    print(f"{len(problems)} problems" if problems else "clean: every command matches its tool")
    return 1 if problems else 0
