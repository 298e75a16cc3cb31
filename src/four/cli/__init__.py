"""The ``four`` command: run an agent, replay, audit, show, view and summarise runs
(docs/cli.md). Importing it costs no more than ``import four`` (argparse only): each
subcommand's module is imported when it is chosen, so ``four --help`` never loads rich or
litellm."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from four._checked import checked
from four.cli import _settings as env
from four.cli._errors import UsageError
from four.cli._settings import env_flags, number, output_flags, positive_int, run_flags
from four.cli._signals import INTERRUPTED, install

__all__ = ["UsageError", "build_parser", "main"]


@checked
def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only``, the other subcommands are named but not filled
    (``four --help`` and ``four show ...`` need not define every flag of ``four run``).

    >>> build_parser().parse_args(["show", "run.json"]).command
    'show'
    """
    width = max(map(len, env.VARIABLES))
    variables = [f"  {name.ljust(width)}  {what}" for name, what in env.VARIABLES.items()]
    parser = argparse.ArgumentParser(
        prog="four",
        description="An LLM agent as a loop of four typed functions, from the terminal.",
        epilog="environment variables:\n" + "\n".join(variables),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (summary, description, define) in _COMMANDS.items():
        if only is None or only == name:
            define(sub.add_parser(name, help=summary, description=description))
        else:
            sub.add_parser(name, help=summary, add_help=False)
    return parser


def _add_read_flags(p: argparse.ArgumentParser) -> None:  # every reader of trajectory files
    p.add_argument(
        "--max-size",
        metavar="SIZE",
        help="refuse trajectory files larger than SIZE, e.g. 1G [FOUR_MAX_SIZE, 256M]",
    )


def _replay_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("trajectory", metavar="TRAJ")
    _add_read_flags(p)
    env_flags(p)
    p.add_argument("-o", "--output-dir", help="keep the replayed trajectory in this folder")
    p.add_argument(
        "--check",
        metavar="CMD",
        help="judge submissions with CMD, as `four run --check` (default: as recorded)",
    )
    p.add_argument(
        "--toolcalls",
        action=argparse.BooleanOptionalAction,
        help="parse the turns as tool calls (default: as recorded)",
    )
    output_flags(p, "the comparison", "the final line")


def _export_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("format", choices=["otel"], help="otel: OpenTelemetry traces over OTLP/HTTP")
    p.add_argument("runs", metavar="RUN", nargs="+", help="trajectory files or folders of runs")
    p.add_argument(
        "--endpoint",
        metavar="URL",
        help="the OTLP/HTTP receiver, e.g. http://127.0.0.1:4318 [OTEL_EXPORTER_OTLP_ENDPOINT]",
    )
    p.add_argument(
        "--content",
        action="store_true",
        help="message contents in the spans, as the trajectory holds them "
        "[OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT]",
    )
    p.add_argument(
        "--timeout",
        type=number,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait at most for the receiver to take the spans [60]",
    )
    _add_read_flags(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _audit_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("trajectory", metavar="TRAJ|DIR")
    p.add_argument(
        "--public-key",
        metavar="PUB",
        help="require a signature by this key: four keygen's .pub file, or its 64 hex digits",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_read_flags(p)


def _keygen_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("key", metavar="KEY", help="where to write the private key (KEY.pub: public)")


def _show_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("trajectory", metavar="TRAJ")
    p.add_argument("--full", action="store_true", help="fold nothing")
    p.add_argument(
        "--lines", type=positive_int, default=16, help="fold outputs longer than this [16]"
    )
    p.add_argument("--step", type=positive_int, help="only this step (1-based)")
    p.add_argument("--system", action="store_true", help="also print the system prompt")
    p.add_argument(
        "--all",
        action="store_true",
        help="print every step of a long run (by default, a run of more than 100 steps "
        "shows its first and last 50)",
    )
    _add_read_flags(p)


def _view_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("trajectory", metavar="TRAJ")
    p.add_argument("-o", "--output", help="the page to write (default: TRAJ with .html)")
    _add_read_flags(p)


def _stats_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", metavar="DIR", nargs="+")
    p.add_argument("--top", type=positive_int, default=5, help="rows in each top list [5]")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_read_flags(p)


def _fleet_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", metavar="DIR", nargs="+")
    p.add_argument(
        "--stall",
        type=number,
        default=900.0,
        metavar="SECONDS",
        help="an unsealed run with nothing recorded for this long counts as stalled [900]",
    )
    p.add_argument("--json", action="store_true", help="print the folders as JSON")


def _flags(module: str) -> Callable[[argparse.ArgumentParser], None]:
    """The flags ``four.cli.MODULE`` defines, imported only when its command is chosen."""

    def define(p: argparse.ArgumentParser) -> None:
        importlib.import_module(f"four.cli.{module}").flags(p)

    return define


_COMMANDS: dict[str, tuple[str, str, Callable[[argparse.ArgumentParser], None]]] = {
    "run": (
        "run an agent on a task",
        "Run an agent on TASK until it submits, and save its trajectory (docs/cli.md).",
        run_flags,
    ),
    "replay": (
        "run a trajectory's model turns again and compare observations",
        "Replay the model turns of TRAJ (ours or mini-swe-agent's) in a fresh environment "
        "and report the steps whose observations differ.",
        _replay_flags,
    ),
    "audit": (
        "check a run's seal, signature and receipts",
        "Check that TRAJ (or every run under DIR) is the record its seal was made over, "
        "and replay a verified run's receipts (docs/seal.md).",
        _audit_flags,
    ),
    "export": (
        "send saved runs to a tracing backend",
        "Send the runs in RUN to an OTLP/HTTP receiver as OpenTelemetry traces (docs/otel.md).",
        _export_flags,
    ),
    "keygen": (
        "make an Ed25519 key pair for signing runs",
        "Write a private key to KEY (mode 0600) and its public key to KEY.pub; needs "
        "four-loop[sign].",
        _keygen_flags,
    ),
    "show": (
        "print a run in the terminal",
        "Print the run in TRAJ step by step; long outputs are folded.",
        _show_flags,
    ),
    "view": (
        "write a run as one self-contained HTML page",
        "Write TRAJ as one HTML file with no outside references.",
        _view_flags,
    ),
    "stats": (
        "summarise many runs",
        "Outcomes, steps, cost and frequent errors over the trajectories in the folders "
        "(searched recursively) or files given.",
        _stats_flags,
    ),
    "model": (
        "pull and list the models that run on this machine",
        "`four model pull NAME` fetches a model once into FOUR_MODELS; `four model list` "
        "shows what is there.",
        _flags("_model"),
    ),
    "fleet": (
        "one page over many folders of runs",
        "Per folder: runs by state and outcome, cost, tokens and the oldest stalled run, "
        "the folders that need attention first (docs/cli.md).",
        _fleet_flags,
    ),
    "batch": (
        "run an agent on every task of a JSON Lines file, many at once",
        "Run `four run`'s agent on each task of TASKS, --workers at a time, a line per "
        "finished task in DIR/manifest.jsonl, skipped when run again (docs/batch.md).",
        _flags("_batch"),
    ),
    "doctor": (
        "check a run or a batch before it starts: GO, WARN or NO-GO",
        "four doctor run TASK [flags of four run] | four doctor batch TASKS [flags of four "
        "batch]: a row per check, with the fix (docs/cli.md).",
        _flags("_doctor"),
    ),
    "lint": (
        "check a prompt's commands against the tools' real interfaces",
        "Check every command PROMPT tells the model to run against the real tool, where "
        "the run's commands run (docs/plan.md).",
        _flags("_lint"),
    ),
    "plan": (
        "compile a free-text mission into a validated launch folder",
        "four plan MISSION -o LAUNCH: the model writes tasks and checks, validated until "
        "they pass, into a sealed launch folder (docs/plan.md).",
        _flags("_plan"),
    ),
    "watch": (
        "classify runs, and rescue the dead, stalled and looping ones",
        "Say of every run under DIR whether it is finished, running, stalled, over budget, "
        "looping or dead; with --rescue, resume or stop it (docs/cli.md).",
        _flags("_watch"),
    ),
    "mcp": (
        "four as an MCP server: verified runs for other agents",
        "four mcp serve [--http HOST:PORT] [-- FLAGS OF four run] (docs/mcp.md).",
        _flags("_mcp"),
    ),
    "spoke": (
        "write a new, type-checked component of four with the model",
        "four spoke new NAME PURPOSE: the module NAME.py, accepted once mypy --strict, "
        "its import and a dry run pass (docs/domains.md).",
        _flags("_spoke"),
    ),
}


@checked
def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``four`` command and return its exit status.

    >>> main(["--version"])  # doctest: +ELLIPSIS
    four ...
    0
    """
    interrupts = install()  # Ctrl-C: 130 whenever it comes, the run saved (see _signals)
    try:  # (from its first line: what main imports is imported under the handler)
        from four.cli._terminal import guarded

        with guarded():  # model text and command output are shown, never obeyed
            status = _main(list(sys.argv[1:] if argv is None else argv))
        interrupts.ending()  # inside the try: one now is noted, never raised past it
    except KeyboardInterrupt:  # between the commands' own handlers (parsing the words)
        interrupts.ending()
        print("four: interrupted", file=sys.stderr)
        status = INTERRUPTED
    # The `four` program (no argv) ends now: a Ctrl-C from here on is ignored; called with
    # argv, in a process that goes on, the handler before it is put back.
    return interrupts.status(status, exiting=argv is None)


def _main(words: list[str]) -> int:
    chosen = next((w for w in words if not w.startswith("-")), None)
    # Only the chosen command's flags ("" for none): `four --help` stays light.
    parser = build_parser(chosen if chosen in _COMMANDS else "")
    args = parser.parse_args(words)
    if args.version:
        from four import __version__

        print(f"four {__version__}")
        return 0
    command: str | None = args.command
    if command is None:
        parser.print_help()
        return 2
    module = importlib.import_module(f"four.cli._{command}")
    try:
        status: int = module.main(args)
    except UsageError as exc:
        print(f"four {command}: error: {exc}", file=sys.stderr)
        return 2
    except (RecursionError, MemoryError) as exc:  # the last net: one line, never a traceback
        what = "nested too deeply" if isinstance(exc, RecursionError) else "too large for memory"
        print(f"four {command}: error: the input is {what} to handle", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `four show x | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # before a run began (a run handles its own)
        print(f"four {command}: interrupted", file=sys.stderr)
        return 130
    return status
