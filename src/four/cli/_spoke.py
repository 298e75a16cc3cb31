"""``four spoke new NAME "what it should do"``: the loop writes a new spoke of itself,
accepted only once mypy --strict, an import and a dry run pass (see ``four.spokes``)."""

from __future__ import annotations

import argparse
import sys

from four.cli import _settings as env
from four.cli._errors import UsageError


def flags(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="spoke_command", metavar="SUBCOMMAND", required=True)
    new = sub.add_parser(
        "new",
        help="write a new spoke module with the model",
        description="Have the model write the spoke DIR/NAME.py for PURPOSE, accepted once "
        "it passes mypy --strict, imports and ends its dry run (docs/domains.md).",
    )
    new.add_argument("name", metavar="NAME", help="the module's name (a Python identifier)")
    new.add_argument("purpose", metavar="PURPOSE", help="what the spoke should do")
    new.add_argument("-m", "--model", help="litellm model name [FOUR_MODEL]")
    new.add_argument("--api-base", help="an OpenAI-compatible server [FOUR_API_BASE]")
    new.add_argument("--dir", default="spokes", help="where the module goes [spokes]")
    new.add_argument(
        "-o",
        "--output-dir",
        help="where the trajectory goes [FOUR_OUTPUT_DIR, $XDG_STATE_HOME/four/runs or "
        "~/.local/state/four/runs]",
    )
    new.add_argument("--max-steps", type=int, default=40, help="model calls at most [40]")
    new.add_argument(
        "--cost-limit", type=float, default=3.0, help="stop after this many USD; 0 = none [3]"
    )


def main(args: argparse.Namespace) -> int:
    from four.cli._build import load_domain
    from four.cli._options import api_key, default_output_dir, resolve
    from four.invoke import budget_invoke, litellm_invoke, retry_invoke
    from four.spokes import name_problem, new_spoke
    from four.types import Invoke

    problem = name_problem(args.name)
    if problem is not None:
        raise UsageError(problem)
    load_domain("python")  # its extra (mypy, ruff) is needed: say so before any call
    model = args.model or env.get("FOUR_MODEL")
    if not model:
        raise UsageError("no model: give --model NAME or set FOUR_MODEL")
    api_base = args.api_base or env.get("FOUR_API_BASE")
    key = api_key(api_base)
    model = resolve(model, api_base, key)[0]
    G: Invoke = retry_invoke(litellm_invoke(model, api_base=api_base, api_key=key))
    if args.cost_limit:
        G = budget_invoke(G, cost_limit=args.cost_limit)
    output = args.output_dir or env.get("FOUR_OUTPUT_DIR") or str(default_output_dir())
    made = new_spoke(
        args.name, args.purpose, G, folder=args.dir, output_dir=output, max_steps=args.max_steps
    )
    where = made.module if made.module.exists() else "no module"
    print(f"{made.outcome} · {where} · saved {made.trajectory}", file=sys.stdout)
    return 0 if made.accepted else 1
