"""The Python domain's check after an edit: a one-line edit in a 2,000-line workspace, then
ruff and mypy --strict (through the run's dmypy daemon) on the changed file.

Rows: the cold start (a fresh environment's first check: the daemon starts and mypy reads
typeshed and the workspace), the warm check after a one-line edit (target: under 1 s),
and, for scale, the same check's parts and one plain ``mypy --strict`` process. The
checkers run contained (each in a PID namespace of its own here); the warm edit is timed
again with them in the sandbox (bubblewrap), where bwrap is usable.

    python bench/run.py pydomain
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from four.domains.python import python_env
from four.execute._tools import tool_host
from four.parse import SearchReplace

MODULES = 10
FUNCTIONS = 40  # five lines each: 10 modules x 40 functions x 5 lines = 2,000 lines
ROUNDS = 9


def workspace(root: Path) -> int:
    """Write the typed workspace; its line count."""
    lines = 0
    for m in range(MODULES):
        body = [f"from mod{m - 1} import f{m - 1}_0\n\n" if m else "\n\n"]
        for f in range(FUNCTIONS):
            call = f"f{m - 1}_0(x)" if m and f == 0 else "x"
            body.append(
                f"\ndef f{m}_{f}(x: int) -> int:\n    y = {call} + {f}\n    return y + 1\n\n"
            )
        text = "".join(body)
        (root / f"mod{m}.py").write_text(text)
        lines += text.count("\n")
    return lines


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def one_line(root: Path, target: str) -> SearchReplace:
    """The next edit of one line of ``target``: a constant flips between 1 and 7."""
    now = "1" if "    y = x + 3\n    return y + 1\n" in (root / target).read_text() else "7"
    then = "7" if now == "1" else "1"
    head = "    y = x + 3\n"
    return SearchReplace(target, f"{head}    return y + {now}", f"{head}    return y + {then}")


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="four-bench-py-"))
    try:
        lines = workspace(root)
        target = "mod5.py"
        rows: list[tuple[str, list[float]]] = []
        with python_env(root) as env:
            cold = timed(lambda: env.diagnostics([target]).unwrap())
            rows.append(("cold start: a fresh daemon's first check", [cold]))
            assert "no problems" in env.edit([one_line(root, target)]).content  # warm
            edits: list[float] = []
            for _ in range(ROUNDS):
                edit = one_line(root, target)
                start = time.perf_counter()
                seen = env.edit([edit])
                edits.append(time.perf_counter() - start)
                assert "no problems" in seen.content, seen.content
            rows.append(("warm: one-line edit applied, then ruff + mypy on the file", edits))
            rows.append(
                ("  of which ruff", [timed(lambda: env._ruff([target])) for _ in range(ROUNDS)])
            )
            ruff = [sys.executable, "-m", "ruff", "check", "--output-format", "json"]
            ruff += ["--no-cache", "--", target]
            bare = [
                timed(lambda: subprocess.run(ruff, cwd=root, capture_output=True, check=False))
                for _ in range(ROUNDS)
            ]
            rows.append(("  the same ruff, not contained (for the ratio)", bare))
            daemon = env._daemon
            assert daemon is not None
            checks = [timed(lambda: daemon.check([target])) for _ in range(ROUNDS)]
            rows.append(("  dmypy round trip, nothing changed", checks))
        if shutil.which("bwrap") is not None:
            with python_env(root, host=tool_host("sandbox", root)).owns_host() as env:
                assert "no problems" in env.edit([one_line(root, target)]).content  # warm
                edits = []
                for _ in range(ROUNDS):
                    edit = one_line(root, target)
                    start = time.perf_counter()
                    assert "no problems" in env.edit([edit]).content
                    edits.append(time.perf_counter() - start)
                rows.append(("warm, the checkers in the sandbox (bwrap)", edits))
        plain = [sys.executable, "-m", "mypy", "--strict", "--no-incremental"]
        plain += ["--cache-dir", os.devnull, target]
        once = timed(lambda: subprocess.run(plain, cwd=root, capture_output=True, check=False))
        rows.append(("plain `mypy --strict` process, no cache", [once]))
        print(f"{lines} lines in {MODULES} modules; seconds (median and min of the rounds)\n")
        print("| check | median s | min s | rounds |\n|---|---:|---:|---:|")
        for name, times in rows:
            print(f"| {name} | {statistics.median(times):.3f} | {min(times):.3f} | {len(times)} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
