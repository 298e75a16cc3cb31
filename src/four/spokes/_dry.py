"""``python -m four.spokes._dry NAME FOLDER``: the dry run of a spoke module, in a process
of its own. One ``run`` with a scripted model (the module's ``DRY_RUN`` replies) and the
module's component in its place (the others: ``regex_parse``, ``local_env`` in a fresh
folder, ``save_trajectory``); prints the outcome as JSON on its last line."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from four import local_env, regex_parse, run, save_trajectory, scripted_invoke
from four.types import Emit, Execute, Invoke, Message, Outcome, Parse


def main(argv: Sequence[str]) -> int:
    name, folder = argv
    module = importlib.import_module(name)
    kind, component, replies = module.KIND, module.make(), list(module.DRY_RUN)
    out = Path(folder)
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    G: Invoke = scripted_invoke(replies)
    V1: Parse = regex_parse()
    V2: Execute = local_env(30.0, cwd=str(work))
    inner: Emit[object] = save_trajectory(out)
    system = ""
    if kind == "G":
        G = component
    elif kind == "V1":
        V1 = component
    elif kind == "V2":
        V2 = component
    elif kind == "emit":
        inner = component
    elif kind == "domain":
        from four.domains import DomainSetup

        setup = DomainSetup(work, out)
        V1, V2, system = component.parse(), component.environment(setup), component.system
        inner = component.emit(setup, V2)
    ended: list[Outcome] = []

    def emit(messages: Sequence[Message], outcome: Outcome, /) -> object:
        ended.append(outcome)
        return inner(messages, outcome)

    run(G, V1, V2, emit, system, "dry run", max_steps=len(replies) + 2)
    print(json.dumps({"outcome": ended[-1].text}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
