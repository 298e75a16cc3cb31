"""The ``four`` command: run an agent, replay, audit, show, view and summarise runs.

Importing this package costs no more than ``import four``: argparse only. Each
subcommand lives in its own module, imported when it is chosen, so ``four --help``
never loads rich or litellm.

Exit codes: 0 a finished (or accepted) run, or a command that did what it was
asked; 1 a run that ended any other way (``save_failed`` too), an invalid audit, a
replay that differs, a ``stats`` that read no run, a ``doctor`` NO-GO; 2 a usage error
(bad flags, missing API key, unknown model, an output folder that cannot be written, a
missing ``--check`` program, an unreadable or refused trajectory file); 3 a ``doctor``
with warnings only; 130 Ctrl-C (143 SIGTERM), after the trajectory is saved.
Every error is one line on standard error, starting ``four COMMAND:``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from four._checked import checked
from four.cli import _settings as env
from four.cli._errors import UsageError
from four.cli._flags import env_flags, number, output_flags, positive_int, run_flags
from four.cli._signals import INTERRUPTED, install

__all__ = ["UsageError", "build_parser", "main"]

_PROG = "four"
_DESCRIPTION = "An LLM agent as a loop of four typed functions, from the terminal."


@checked
def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only``, the other subcommands are named but not filled
    (``four --help`` and ``four show ...`` need not define every flag of ``four run``).

    >>> build_parser().parse_args(["show", "run.json"]).command
    'show'
    """
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description=_DESCRIPTION,
        epilog=env.epilog(),
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


def _add_read_flags(p: argparse.ArgumentParser) -> None:
    """What every reader of trajectory files takes."""
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
        default=None,
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


def _flags(module: str, name: str = "flags") -> Callable[[argparse.ArgumentParser], None]:
    """The flags ``four.cli.MODULE`` defines, imported only when its command is chosen."""

    def define(p: argparse.ArgumentParser) -> None:
        getattr(importlib.import_module(f"four.cli.{module}"), name)(p)

    return define


_COMMANDS: dict[str, tuple[str, str, Callable[[argparse.ArgumentParser], None]]] = {
    "run": (
        "run an agent on a task",
        "Run an agent on TASK until it submits, and save its trajectory. A model that "
        "repeats a turn is not sent the same context again: the repeats are sent once and "
        "the next call is resampled (a seed and temperature drawn from the history, kept "
        "with the reply). Exit 0 only for a finished (or accepted) run.",
        run_flags,
    ),
    "replay": (
        "run a trajectory's model turns again and compare observations",
        "Replay the recorded model turns of TRAJ (ours or mini-swe-agent's) "
        "against a fresh environment and report the steps whose observations differ. "
        "Exit 0 when every observation matches, 1 when one differs.",
        _replay_flags,
    ),
    "audit": (
        "check a run's seal, signature and receipts",
        "Check that TRAJ (a .json, or the .jsonl of a run cut short) is the record its "
        "seal was made over: any edit, drop, reorder, append or truncation is reported "
        "with what does not match; a verified run's receipts are replayed too. With "
        "--public-key, the record must also be signed by that key. DIR: every run under "
        "the folder, one line each and a summary. Exit 0 valid (an unfinished run is a "
        "valid prefix), 1 any invalid, 2 when the file cannot be read.",
        _audit_flags,
    ),
    "export": (
        "send saved runs to a tracing backend",
        "Send every run in RUN (trajectory files, or folders searched recursively) to an "
        "OTLP/HTTP receiver as OpenTelemetry traces in the GenAI conventions, with their "
        "recorded times; a run made with --otel keeps its trace and span ids. Exit 0 when "
        "the receiver took every span, 1 otherwise.",
        _export_flags,
    ),
    "keygen": (
        "make an Ed25519 key pair for signing runs",
        "Write a new private key to KEY (mode 0600) and its public key to KEY.pub, both "
        "PEM. `four run --sign KEY` signs; `four audit --public-key KEY.pub` checks. "
        "Needs the cryptography package: pip install 'four-loop[sign]'.",
        _keygen_flags,
    ),
    "show": (
        "print a run in the terminal",
        "Print the run in TRAJ step by step; long outputs are folded.",
        _show_flags,
    ),
    "view": (
        "write a run as one self-contained HTML page",
        "Write TRAJ as one HTML file with no outside references: outcome, "
        "usage and cost, a timeline of the steps, folded outputs, verdicts and receipts.",
        _view_flags,
    ),
    "stats": (
        "summarise many runs",
        "Over every trajectory in the folders (searched recursively) or files "
        "given: counts per outcome, steps and cost distributions, the most frequent "
        "format errors and failing commands.",
        _stats_flags,
    ),
    "model": (
        "pull and list the models that run on this machine",
        "`four model pull NAME` fetches a model once (checked against its sha256) into "
        "the models folder (FOUR_MODELS); `four model list` shows what is there. "
        "`four run --local` runs on it, with no API key and no network.",
        _flags("_model"),
    ),
    "fleet": (
        "one page over many folders of runs",
        "Per folder (searched recursively): runs, running, stalled, finished, accepted, "
        "failed by class, cost, tokens, the last recorded activity and the oldest stalled "
        "run; the folders that need attention first. Reads only manifests, the heads of "
        "sealed trajectories and the streams of unsealed runs.",
        _fleet_flags,
    ),
    "batch": (
        "run an agent on every task of a JSON Lines file, many at once",
        "Run the agent of `four run` on each task of TASKS (one JSON object per line, with "
        '"id" and "task"; other fields are kept in the manifest; "domain", "check", '
        '"check_files", "max_steps", "feedback", "image" and "cwd" are that task\'s own; '
        "flags may also come from a four.toml beside TASKS, as four plan writes it), "
        "--workers at a time: on threads here, as async tasks here for thousands at once "
        "(--processes 1, or N worker processes), or on a Ray cluster (--ray). Trajectories "
        "go to DIR/runs/<id>/, one line per finished task to DIR/manifest.jsonl; run again "
        "and finished tasks are skipped. Exit 0 when every task has a result, 1 when a batch "
        "budget stopped it first.",
        _flags("_batch", "batch_flags"),
    ),
    "doctor": (
        "check a run or a batch before it starts: GO, WARN or NO-GO",
        "four doctor run TASK [flags of four run] | four doctor batch TASKS [flags of "
        "four batch]: the key, the model, the endpoint, the environment, the output "
        "folder, the --check program, the prompt's size, a batch's workers against what "
        "the endpoint serves at once and, with --probe (one tiny model request), the "
        "wall-clock budget; a row each with the fix. Exit 0 all GO, 3 warnings only, 1 a "
        "NO-GO, 2 a usage error.",
        _flags("_doctor"),
    ),
    "lint": (
        "check a prompt's commands against the tools' real interfaces",
        "Find every command PROMPT tells the model to run (fenced shell blocks, backticks, "
        '"run X" sentences; a tasks .jsonl: each task and its check) and check it where '
        "the run's commands run: the program exists, and every subcommand and option is "
        "in the tool's real interface (argparse introspected for Python tools, four "
        "included; otherwise its --help, run sandboxed with a timeout). Unknown ones are "
        "reported with file, line and the nearest real names. Exit 0 clean, 1 any finding, "
        "2 a usage error.",
        _flags("_lint"),
    ),
    "plan": (
        "compile a free-text mission into a validated launch folder",
        "four plan MISSION -o LAUNCH: the model writes a plan (tasks, their checks, held-out "
        "files, settings); every check is run on the starting workspace, where it must "
        "fail, twice, with the same verdict; held-out files must be out of the agents' "
        "reach; the domains, the environment and the prompt must be ready (four doctor's "
        "rows, four lint). Each failure goes back to the model until the plan passes. "
        "LAUNCH gets tasks.jsonl, the held-out files, four.toml and PLAN.md, sealed: "
        "four audit LAUNCH checks it was not edited since; four plan --check LAUNCH "
        "validates an edited launch again and seals it anew. four batch LAUNCH/tasks.jsonl "
        "runs it. Exit 0 a valid launch, 1 none, 2 a usage error.",
        _flags("_plan"),
    ),
    "watch": (
        "classify runs, and rescue the dead, stalled and looping ones",
        "Say of every run under DIR whether it is finished, running, stalled, over its "
        "wall budget, looping or dead (its driver gone). With --rescue, resume dead and "
        "stalled runs as new attempts from their saved messages, and stop looping and "
        "over-budget ones. --once for one pass (cron); else a pass every --interval. "
        "Exit 0 when no run is left in trouble, 1 when one is, 2 for a usage error.",
        _flags("_watch"),
    ),
    "mcp": (
        "four as an MCP server: verified runs for other agents",
        "four mcp serve [--http HOST:PORT] [-- FLAGS OF four run]: serve four over MCP "
        "(stdio by default): run a verified task in a folder, audit a run, show a run's "
        "outcome and steps; each saved run is a resource.",
        _flags("_mcp"),
    ),
    "spoke": (
        "write a new, type-checked component of four with the model",
        "four spoke new NAME PURPOSE: the Python domain writes the module NAME.py, accepted "
        "only once mypy --strict passes against four's Protocols, it imports, and a dry run "
        "of `run` over it ends as it says.",
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
        print(f"{_PROG}: interrupted", file=sys.stderr)
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

        print(f"{_PROG} {__version__}")
        return 0
    command: str | None = args.command
    if command is None:
        parser.print_help()
        return 2
    module = importlib.import_module(f"four.cli._{command}")
    try:
        status: int = module.main(args)
    except UsageError as exc:
        print(f"{_PROG} {command}: error: {exc}", file=sys.stderr)
        return 2
    except (RecursionError, MemoryError) as exc:  # the last net: one line, never a traceback
        what = "nested too deeply" if isinstance(exc, RecursionError) else "too large for memory"
        print(f"{_PROG} {command}: error: the input is {what} to handle", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `four show x | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # before a run began (a run handles its own)
        print(f"{_PROG} {command}: interrupted", file=sys.stderr)
        return 130
    return status
