"""Lines of the core per package, this tree against another (issue 32: the core to shrink).

python bench/bench_lines.py OTHER_TREE   # e.g. git archive main src | tar -x -C OTHER_TREE

The core is four/*.py, parse/, invoke/, execute/, checks/, quaternary/ (its Cython and C
too), batch/ but its Ray driver, and cli/ but its readers; testing/ is shown apart. Lines
as ``wc -l`` counts them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READERS = {"_show.py", "_view.py", "_stats.py", "_watch.py", "_fleet.py", "_audit.py",
           "_replay.py", "_steps.py"}  # fmt: skip
PACKAGES = {"parse": (), "invoke": (), "execute": (), "checks": (), "quaternary": (),
            "batch": ("_ray.py",), "cli": tuple(READERS)}  # fmt: skip
SUFFIXES = {".py", ".pyx", ".pxi", ".h"}


def lines(tree: Path) -> dict[str, int]:
    src = tree / "src" / "four"
    counts = {"four/*.py": sum(len(p.read_text().splitlines()) for p in src.glob("*.py"))}
    for package, left_out in (*PACKAGES.items(), ("testing", ())):
        counts[f"{package}/"] = sum(
            len(p.read_text().splitlines())
            for p in (src / package).rglob("*")
            if p.suffix in SUFFIXES and p.name not in left_out
        )
    return counts


def main(other: str) -> None:
    before, after = lines(Path(other)), lines(ROOT)
    print("| package | before | after | after / before |\n|---|---:|---:|---:|")
    for name in before:
        print(
            f"| `{name}` | {before[name]:,} | {after[name]:,} | {after[name] / before[name]:.2f} |"
        )
    core = [name for name in before if name != "testing/"]
    b, a = sum(before[n] for n in core), sum(after[n] for n in core)
    print(f"| the core (all but testing/) | {b:,} | {a:,} | {a / b:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
