"""Lines of the core per package, this tree against another (issue 32: the core to shrink).

python bench/bench_lines.py OTHER_TREE   # e.g. git archive main src | tar -x -C OTHER_TREE

The core is four/*.py, parse/, invoke/, execute/, checks/, quaternary/ (its Cython and C
too), batch/ but its Ray driver, and cli/ but its readers, less what other open issues
added in modules of their own (``APART``); testing/ is shown apart. Lines
as ``wc -l`` counts them; then the core's Python lines by what they hold (docstrings, read
with ``ast``; comment lines, with ``tokenize``; blank lines; the rest is code).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READERS = {"_show.py", "_view.py", "_stats.py", "_watch.py", "_fleet.py", "_audit.py",
           "_replay.py", "_steps.py"}  # fmt: skip
# What another open issue added in a module of its own is counted apart (issue 32's rule):
# issue 31's files shown to the model after a NO.
APART = {"_named_files.py"}
PACKAGES = {"parse": (), "invoke": (), "execute": (), "checks": tuple(APART), "quaternary": (),
            "batch": ("_ray.py",), "cli": tuple(READERS)}  # fmt: skip
SUFFIXES = {".py", ".pyx", ".pxi", ".h"}


def core_files(tree: Path) -> list[Path]:
    src = tree / "src" / "four"
    files = list(src.glob("*.py"))
    for package, left_out in PACKAGES.items():
        files += [p for p in (src / package).rglob("*.py") if p.name not in left_out]
    return files


def kinds(tree: Path) -> Counter[str]:
    """The core's Python lines: docstrings, comment lines, blank lines and code."""
    counts: Counter[str] = Counter()
    for path in core_files(tree):
        text = path.read_text()
        rows = text.splitlines()
        counts["lines"] += len(rows)
        counts["blank"] += sum(1 for row in rows if not row.strip())
        for node in ast.walk(ast.parse(text)):
            body = getattr(node, "body", None)
            if not isinstance(body, list):
                continue
            for i, statement in enumerate(body):  # a docstring: a string statement first
                if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                        and isinstance(statement.value.value, str)):  # fmt: skip
                    continue
                documents = i == 0 or isinstance(body[i - 1], ast.Assign | ast.AnnAssign)
                if documents and statement.end_lineno is not None:
                    counts["docstrings"] += statement.end_lineno - statement.lineno + 1
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and rows[token.start[0] - 1].lstrip()[:1] == "#":
                counts["comments"] += 1
    counts["code"] = counts["lines"] - counts["docstrings"] - counts["comments"] - counts["blank"]
    return counts


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
    old, new = kinds(Path(other)), kinds(ROOT)
    print("\n| the core's Python | before | after | after / before |\n|---|---:|---:|---:|")
    for kind in ("code", "docstrings", "comments", "blank"):
        print(f"| {kind} | {old[kind]:,} | {new[kind]:,} | {new[kind] / old[kind]:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
