"""Run the benchmarks: `python bench/run.py` (all) or `python bench/run.py core execute`.

Each bench_<name>.py has a main() that prints a Markdown table; results are recorded
by hand in bench/README.md together with the command that produced them. A bench run
here gets its defaults; one whose main() needs arguments (another tree, a size) is named
and skipped: run its file with them.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    names = argv or sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    sys.path[:0] = [str(HERE.parent / "src"), str(HERE.parent)]
    for name in names:
        print(f"## {name}\n", flush=True)
        module = importlib.import_module(f"bench.bench_{name}")
        needed = [
            p.name
            for p in inspect.signature(module.main).parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if needed:
            print(f"(needs {', '.join(needed)}: `python bench/bench_{name}.py ...`)\n")
            continue
        sys.argv[1:] = []  # a main() that reads its own arguments gets none: its defaults
        module.main()
        print(flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
