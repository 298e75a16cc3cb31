"""An argparse parser as data: its options (and whether each takes a value) and its
subcommands, recursively. This source, run as ``python -c SOURCE -m MODULE ARGS`` or ``python -c SOURCE run PATH
ARGS``, starts a Python tool with argparse's ``parse_known_args`` replaced by a dump of
the parser it was about to parse with, printed after ``MARK``, and exits before the
tool does anything else. A tool that never reaches argparse runs with ``ARGS`` (``--help``)
and prints its help, which the caller parses instead.

Standard library only, no import of four: the source runs under the tool's own Python.
"""

import argparse
import json
import os
import runpy
import sys

MARK = "four-argparse-interface:"


def describe(parser: argparse.ArgumentParser) -> dict[str, object]:
    """``{"options": [[spelling, takes_value], ...], "subcommands": {name: ...},
    "abbrev": bool}`` of ``parser``; aliases of a subcommand are names of their own."""
    options: list[list[object]] = []
    subcommands: dict[str, object] = {}
    for action in parser._actions:
        if action.option_strings:
            options.extend([spelling, action.nargs != 0] for spelling in action.option_strings)
        elif isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                subcommands[name] = describe(sub)
    return {"options": options, "subcommands": subcommands, "abbrev": parser.allow_abbrev}


def _dump(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> object:
    sys.stdout.write(MARK + json.dumps(describe(self)) + "\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    argparse.ArgumentParser.parse_known_args = _dump  # type: ignore[method-assign,assignment]
    mode, target = sys.argv[1], sys.argv[2]
    sys.argv = [target, *sys.argv[3:]]
    if mode == "-m":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
