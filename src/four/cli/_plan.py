"""``four plan MISSION -o LAUNCH`` and ``four plan --check LAUNCH`` (docs/plan.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from four.cli._errors import UsageError

if TYPE_CHECKING:
    from four._types import Invoke
    from four.domains.plan import Compiled, Launch

MAX_MISSION = 64 << 10
"""Bytes of a mission at most: it is a paragraph for the planner, not a document."""


def flags(p: argparse.ArgumentParser) -> None:
    """``four plan``'s flags."""
    from four.cli._settings import agent_flags, number, output_flags, positive_int

    p.add_argument(
        "mission", metavar="MISSION", nargs="?", help="what the launch is for; '-' reads stdin"
    )
    p.add_argument("-o", "--output-dir", metavar="LAUNCH", help="the launch folder to write")
    p.add_argument(
        "--check",
        metavar="LAUNCH",
        dest="check_launch",
        help="validate this launch again as its files are now; sealed anew if it passes",
    )
    agent_flags(p)
    p.add_argument(
        "-w", "--workers", type=positive_int, default=1, help="the launch's runs at once [1]"
    )
    p.add_argument(
        "--max-steps", type=positive_int, default=30, help="model calls per agent run at most [30]"
    )
    p.add_argument(
        "--timeout", type=number, default=1800.0, metavar="SECONDS",
        help="wall-clock limit of each agent run [1800]",
    )  # fmt: skip
    p.add_argument("--cost-limit", type=number, metavar="USD", help="USD per agent run [none]")
    p.add_argument(
        "--check-timeout", type=number, default=120.0, metavar="SECONDS",
        help="seconds a check may take when it is validated [120]",
    )  # fmt: skip
    p.add_argument(
        "--attempts", type=positive_int, default=6,
        help="plans the model may write before planning stops [6]",
    )  # fmt: skip
    p.add_argument("--sign", metavar="KEY", help="sign the launch's seal with this private key")
    output_flags(p, "the result", "the final line")


def main(args: argparse.Namespace) -> int:
    """Plan (or check) a launch; print what was validated and rejected."""
    from four.cli._options import signing_key
    from four.domains.plan import check_launch, compile_launch

    signing = signing_key(args.sign)
    if args.check_launch:
        if args.mission is not None:
            raise UsageError("--check LAUNCH takes the plan from the folder: give no MISSION")
        try:
            made = check_launch(args.check_launch, signing_key=signing)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return _report(made, args)
    mission = _mission(args.mission)
    if not args.output_dir:
        raise UsageError("give the launch folder: -o LAUNCH")
    launch, G = _launch(args)
    made = compile_launch(mission, G, launch, max_steps=args.attempts, signing_key=signing)
    return _report(made, args)


def _mission(given: str | None) -> str:
    from four.observe._lint import PromptError, decode_prompt

    if given is None:
        raise UsageError("give the MISSION (or - to read it, or --check LAUNCH)")
    data = (
        sys.stdin.buffer.read(MAX_MISSION + 1)
        if given == "-"
        else given.encode(errors="surrogateescape")
    )
    if len(data) > MAX_MISSION:
        raise UsageError(f"the mission is longer than {MAX_MISSION >> 10} KiB: say what the "
                         "launch is for in a few paragraphs")  # fmt: skip
    try:
        mission = decode_prompt(data, "the mission")
    except PromptError as exc:
        raise UsageError(str(exc)) from None
    if not mission.strip():
        raise UsageError("the mission is empty: say what the launch is for")
    return mission


def _launch(args: argparse.Namespace) -> tuple[Launch, Invoke]:
    """The launch's settings and the planning model, checked before the first call."""
    from four.cli import _settings as env
    from four.cli._options import (
        api_key,
        env_choice,
        local_settings,
        model_choice,
        output_folder,
        refuse,
        resolve,
    )
    from four.domains._bash import environment as make_env
    from four.domains._host import inside
    from four.domains.plan import Launch, plan_parse
    from four.invoke import litellm_invoke, local_invoke, retry_invoke
    from four.invoke._local import DEFAULT_CTX
    from four.observe._doctor import environment, model_facts

    folder = Path(args.output_dir).expanduser().absolute()
    if (folder / "tasks.jsonl").exists():
        raise UsageError(f"{folder} already holds a launch: choose another folder, or "
                         f"four plan --check {folder} after editing it")  # fmt: skip
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"-o {folder}: it is a file, not a folder")
    workspace = Path(args.cwd or ".").expanduser().absolute()
    if not workspace.is_dir():
        raise UsageError(f"--cwd {workspace}: not a folder")
    if inside(folder, workspace):
        raise UsageError(f"-o {folder} is inside the agents' workspace {workspace}, where "
                         "their commands could read and change the launch: give a folder "
                         "outside it")  # fmt: skip
    model, local = model_choice(args)
    kind, image = env_choice(args)
    api_base = args.api_base or env.get("FOUR_API_BASE")
    key = api_key(api_base)
    output_folder(str(folder))
    ran = environment(
        kind, lambda: make_env(kind, image=image, cwd=str(workspace), timeout=30), image
    )
    for check in ran:
        refuse(check)
    model, server = resolve(model, api_base, key, local)
    G: Invoke
    if local is not None:
        grammar = plan_parse().grammar()  # every plan it writes reads (V2 judges it)
        G = retry_invoke(local_invoke(local, **local_settings(), grammar=grammar))
        window: int | None = local_settings().get("ctx", DEFAULT_CTX)
    else:
        G = retry_invoke(litellm_invoke(model, api_base=api_base, api_key=key))
        window = model_facts(model).context_window or (server.context_window if server else None)
    try:
        launch = Launch(
            folder, workspace, env=kind, image=image,
            model=None if local else model, local=local, api_base=api_base,
            workers=args.workers, max_steps=args.max_steps, timeout=args.timeout,
            cost_limit=args.cost_limit or None,
            command_timeout=args.command_timeout or 120.0, check_timeout=args.check_timeout,
            window=window,
        )  # fmt: skip
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return launch, G


def _report(made: Compiled, args: argparse.Namespace) -> int:
    from four.cli._terminal import visible

    if args.json:
        print(json.dumps({
            "valid": made.valid, "outcome": made.outcome, "folder": str(made.folder),
            "trajectory": str(made.trajectory),
            "tasks": [t.id for t in made.plan.tasks] if made.plan else [],
            "rejected": [{"attempt": r.attempt, "task": r.task, "reason": r.reason}
                         for r in made.rejected],
        }, indent=2))  # fmt: skip
        return 0 if made.valid else 1
    if not args.quiet:
        for attempt in sorted({r.attempt for r in made.rejected}):
            print(f"plan {attempt} rejected:", file=sys.stderr)
            for r in made.rejected:
                if r.attempt == attempt:
                    print(visible(f"  - {r}"), file=sys.stderr)
    if made.valid and made.plan is not None:
        count = len(made.plan.tasks)
        print(f"valid launch · {count} task{'s' * (count != 1)} · {made.folder} · "
              f"four batch {made.folder / 'tasks.jsonl'}")  # fmt: skip
        return 0
    why = f" · {made.problem}" if made.problem else ""
    print(f"no valid launch · {made.outcome}{why} · see {made.folder / 'PLAN.md'}")
    return 1
