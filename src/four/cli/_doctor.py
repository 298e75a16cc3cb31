"""``four doctor run|batch ...``: ``four run``'s or ``four batch``'s flags, read by their
code, and instead of running, a table of checks, each GO, WARN or NO-GO with its fix."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
from dataclasses import replace
from pathlib import Path

from four._types import Invoke
from four.observe._check import Check, exit_code
from four.observe._doctor import Budget, Plan, examine


def flags(p: argparse.ArgumentParser) -> None:
    """``four doctor``'s flags: those of ``four run`` or ``four batch``, and ``--probe``."""
    from four.cli import _COMMANDS
    from four.cli._batch import flags as batch_flags
    from four.cli._settings import run_flags

    target = p.add_subparsers(dest="target", metavar="run|batch", required=True)
    for name, define, about in (
        ("run", run_flags, "the flags of four run"),
        ("batch", batch_flags, _COMMANDS["batch"][1]),
    ):
        sub = target.add_parser(name, help=about, description=f"four doctor {name}: {about}")
        define(sub)
        helps = {"json": "print the checks as JSON", "quiet": "print only the verdict line"}
        for action in sub._actions:  # the same flags; here they print the checks
            action.help = helps.get(action.dest, action.help)
        sub.add_argument(
            "--probe",
            action="store_true",
            help="send one tiny request to the model: it answers, and its latency sizes "
            "the wall-clock budget",
        )


def main(args: argparse.Namespace) -> int:
    """Check, print the table (or JSON), and return the exit status."""
    from four.cli._terminal import visible

    plan, G, title, ray = _plan(args)
    checks = examine(plan, send_probe=bool(args.probe), G=G)
    if ray is not None:  # the cluster: its nodes, each one's scratch and model endpoint
        if importlib.util.find_spec("ray") is None:
            checks.append(
                Check("ray", "NO-GO", "Ray is not installed", "pip install 'four-loop[ray]'")
            )
        else:
            from four.batch._raycheck import cluster_checks

            checks += cluster_checks(ray, plan.api_base)
    code = exit_code(checks)
    if args.json:
        worst = "NO-GO" if code == 1 else ("WARN" if code == 3 else "GO")
        checked = [c.to_json() for c in checks]
        print(json.dumps({"status": worst, "exit": code, "checks": checked}, indent=2))
        return code
    if not args.quiet:
        print(visible(title))
        width = max(len(c.name) for c in checks)
        for c in checks:
            fix = f"  → {c.fix}" if c.fix and c.status != "GO" else ""
            print(visible(f"{c.status:<6} {c.name:<{width}}  {c.detail}{fix}"))
    bad, warned = (", ".join(c.name for c in checks if c.status == s) for s in ("NO-GO", "WARN"))
    if bad:
        print(f"NO-GO: {bad} (exit 1)")
    elif warned:
        print(f"GO with warnings: {warned} (exit 3)")
    else:
        print(f"GO: {len(checks)} checks (exit {code})")
    return code


def _plan(args: argparse.Namespace) -> tuple[Plan, Invoke | None, str, str | None]:
    """What the command line would run; the model call for ``--probe``; the table's title;
    a batch's Ray address."""
    from four.cli._build import load_domain, system_prompt
    from four.cli._options import api_key, held_out, hosted_name, local_settings, options
    from four.domains._bash import environment
    from four.invoke._local import DEFAULT_CTX

    batch = None
    tasks: list[str] = []
    if args.target == "batch":
        from four.cli._batch import batch_options, read_tasks
        from four.cli._batch import flags as batch_flags
        from four.cli._launchfile import apply_settings

        apply_settings(args, Path(args.tasks), batch_flags)  # the launch's four.toml, as four batch
        batch = batch_options(args)
        tasks = [item.task for item in read_tasks(batch.tasks)]
        args = argparse.Namespace(**{**vars(args), "task": "(each item's task)"})
    opts = options(args)
    if batch is not None:
        opts = replace(opts, output_dir=str(batch.output_dir))
    system = system_prompt(opts, load_domain(opts.domain))
    key = api_key(opts.api_base)
    model = opts.local or hosted_name(opts.model, opts.api_base)
    plan = Plan(
        model=model,
        api_base=opts.api_base,
        api_key=key,
        env=opts.env,
        make_env=lambda: environment(opts.env, image=opts.image, cwd=opts.cwd, timeout=30),
        output_dir=opts.output_dir,
        system=system,
        task=max(tasks, key=len) if tasks else opts.task,
        check=opts.check if opts.domain != "notebook" else None,  # there, Python
        held_out=tuple(held_out(opts.check_files)),
        image=opts.image,
        prices=opts.prices,
        workers=batch.workers if batch else None,
        budget=Budget(
            opts.max_steps,
            opts.timeout,
            tasks=len(tasks) or 1,
            workers=batch.workers if batch else 1,
            batch_timeout=batch.max_wall_time if batch else None,
        ),
        local_window=local_settings().get("ctx", DEFAULT_CTX) if opts.local else None,
        workspace=opts.cwd,
        sign=opts.sign,
    )
    from four.invoke import litellm_invoke, local_invoke

    G: Invoke | None = None
    if opts.local is None:
        G = litellm_invoke(model, api_base=opts.api_base, api_key=key, timeout=60, max_tokens=16)
    else:
        with contextlib.suppress(ValueError):  # not pulled: the model row says so
            G = local_invoke(opts.local, **local_settings())
    what = f"batch of {len(tasks)} tasks, {batch.workers} workers" if batch else "run"
    return plan, G, f"four doctor · {what} · {model} · {opts.env}", batch.ray if batch else None
