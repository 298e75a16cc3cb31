"""Small real tasks on the built-in local model: four plain, verified as before, and as a
search of up to 4 attempts; and mini-swe-agent, on the same server, the same tasks, in
the same run.

    python bench/run.py tasks
    python bench/bench_tasks.py [--tasks id,id] [--runners four,check,before,mini] [--rows F]

Each task gets a fresh folder with its files, a prompt, and a deterministic check (a
shell command run in that folder after the run, whatever the agent said): a task is
solved when its check exits 0. A value is compared by its SHA-256, so no feedback can
hand it over. Runners, as jobs on the server's ``LANES`` slots (the machine's load hits
them alike):

- ``four``: what ``four run --local`` builds (its default prompt and the workspace's
  preview, ``regex_parse``, the ``local`` environment in the task's folder, the model's
  cycles broken);
- ``four --check before``: verified as ``four run --check`` was before attempts (the model
  told only that it failed, a reason told once, one run);
- ``four --check, K attempts``: ``four run --check --attempts 4`` with its defaults
  (``run_search``: the rows for 1 and 2 attempts are the first attempts of it);
- ``mini-swe-agent``: mini-swe-agent 2.4.6 from a virtualenv of its own (not our
  dependency: made under the user's cache folder, or ``--mini PATH``), its text-based
  config and ``--model-class litellm_textbased``, on the same server.

Budgets, the same for all: ``--steps`` model calls a run (an attempt; ``STEPS`` unless
told), ``REPLY_TOKENS`` tokens a reply, ``COMMAND_TIMEOUT`` seconds a command,
``RUN_SECONDS`` seconds a run and ``REQUEST_SECONDS`` a model request (guards only: a
loaded machine must not end a run). The model: ``$FOUR_BENCH_MODEL`` (default the
registry's default, pulled with ``four model pull``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from four._types import Invoke, Verify
    from four.invoke import LocalInvoke
    from four.search._attempt import SamplingArgs
    from four.types import Grammar

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

STEPS = 6
REPLY_TOKENS = 256
COMMAND_TIMEOUT = 30.0
RUN_SECONDS = 3600.0  # wall time of one run (an attempt), a guard: the budget is the steps
REQUEST_SECONDS = 3600.0
"""Seconds one model request may take (litellm's default is 600): on a loaded machine six
lanes wait for one CPU thread, and a bench measures the model, not the load."""
LANES = 6  # jobs at once, one server slot each
ATTEMPTS = (1, 2, 4)
"""The searches the ``check`` runner reports: those below ``--attempts N``, and N."""


@dataclass(frozen=True, slots=True)
class Task:
    """One task: files to create (name to text; a name ending in ``*`` is made
    executable), the prompt, and the check command."""

    id: str
    prompt: str
    files: Mapping[str, str]
    check: str


def value_check(path: str, answer: str) -> str:
    """``path`` holds ``answer`` (blanks and newlines aside), compared by SHA-256: the
    command names no answer, so no feedback level can hand it over."""
    digest = hashlib.sha256(answer.encode()).hexdigest()
    return f'test "$(tr -d " \\t\\r\\n" < {path} | sha256sum | cut -c1-64)" = {digest}'


def lines_check(path: str, lines: Sequence[str]) -> str:
    """``path`` holds ``lines`` (trailing blanks and empty lines aside), by digest."""
    digest = hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()
    return (
        f'test "$(awk \'{{sub(/[ \\t\\r]+$/, "")}} NF\' {path} | sha256sum | cut -c1-64)" '
        f"= {digest}"
    )


def number_check(path: str, value: float) -> str:
    """``path`` holds a number equal to ``value`` (``200`` or ``200.0``), by digest."""
    digest = hashlib.sha256(repr(float(value)).encode()).hexdigest()
    return (
        "python3 -c \"import hashlib, sys; v = float(open('" + path + "').read().strip()); "
        "sys.exit(hashlib.sha256(repr(v).encode()).hexdigest() != '" + digest + "')\""
    )


def output_check(command: str, lines: Sequence[str]) -> str:
    """``command``'s output is ``lines``, by digest."""
    digest = hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()
    return (
        f'test "$({command} 2>/dev/null | awk \'{{sub(/[ \\t\\r]+$/, "")}} NF\' | sha256sum '
        f'| cut -c1-64)" = {digest}'
    )


def notebook(*cells: tuple[str, str]) -> str:
    """A notebook's JSON: (kind, source) cells, no outputs."""
    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": source}
                | ({"outputs": [], "execution_count": None} if kind == "code" else {})
                for kind, source in cells
            ],
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
            "nbformat": 4,
            "nbformat_minor": 4,
        },
        indent=1,
    )


_LOG = (
    "2026-01-01 user1@example.com login ok\n2026-01-02 user2@mail.org login ok\n"
    "2026-01-03 user3@example.com login ok\n2026-01-04 user4@corp.net login ok\n"
    "2026-01-05 user5@mail.org login ok\n2026-01-06 user6@example.com login ok"
)
_APP_LOG = "".join(
    f"12:{i:02d} {'ERROR disk full on /dev/sd' + 'abc'[i % 3] if i % 4 == 1 else 'INFO request ' + str(i)}\n"
    for i in range(1, 23)
)
_WORDS = ("the", "quick", "brown", "fox")
_POEM = "".join(f"line {i}: {_WORDS[i % 4]} {i * 7 % 13}\n" for i in range(1, 31))
_STORY = "Once upon a time there was a small robot.\nIt liked to count words,\nand it counted them all day long.\n\nThe end.\n"
_PEOPLE = (
    "name,age,city\nAnn,34,Oslo\nBen,28,Rome\nCara,41,Lima\nDev,30,Kyiv\nEli,52,Pune\nFay,19,Nice\n"
)
_USERS = json.dumps(
    [{"name": n, "active": a} for n, a in
     [("ann", True), ("ben", False), ("cara", True), ("dev", True), ("eli", False), ("fay", True),
      ("gus", False)]],
    indent=1,
)  # fmt: skip
_SALES_NB = notebook(
    ("markdown", "# Sales report"),
    ("code", "sales = [120, 80, 45, 10, 35, 5]"),
    ("markdown", "The total:"),
    ("code", "total = sum(sales)\nprint(total)"),
    ("code", "print(max(sales))"),
)

TASKS: tuple[Task, ...] = (
    # --- shell: files and text ---------------------------------------------------------
    Task(
        "email-domains",
        "log.txt holds login lines with e-mail addresses. Write the unique e-mail domains "
        "(the part after @), sorted, one per line, to domains.txt.",
        {"log.txt": _LOG + "\n"},
        lines_check("domains.txt", ["corp.net", "example.com", "mail.org"]),
    ),
    Task(
        "run-script",
        "Make the script hello.sh executable, run it, and save its output in out.txt.",
        {"hello.sh": '#!/bin/sh\necho "hello from $(basename "$0")"\n'},
        "test -x hello.sh && " + lines_check("out.txt", ["hello from hello.sh"]),
    ),
    Task(
        "count-lines",
        "Count the lines of all .py files under src/ (in all its subfolders) and write "
        "only the total number to total.txt.",
        {
            "src/a.py": "x = 1\n" * 7,
            "src/pkg/b.py": "y = 2\n" * 11,
            "src/pkg/deep/c.py": "z = 3\n" * 5,
            "src/notes.txt": "not python\n" * 40,
        },
        value_check("total.txt", "23"),
    ),
    Task(
        "csv-sum",
        "sales.csv has the columns region,amount. Write the total amount of the region "
        "north to north.txt (just the number).",
        {"sales.csv": "region,amount\nnorth,120\nsouth,80\nnorth,45\neast,10\nnorth,35\nsouth,5\n"},
        number_check("north.txt", 200),
    ),
    Task(
        "rename-ext",
        "Rename every .txt file in the folder docs/ to the same name ending in .md.",
        {"docs/intro.txt": "a\n", "docs/usage.txt": "b\n", "docs/faq.txt": "c\n"},
        output_check("ls docs", ["faq.md", "intro.md", "usage.md"]),
    ),
    Task(
        "json-version",
        'In config.json, set "version" to "1.3.0" and keep every other key as it is.',
        {"config.json": '{"name": "demo", "version": "1.2.3", "debug": false}\n'},
        "python3 -c \"import json; d=json.load(open('config.json')); "
        "assert d == {'name': 'demo', 'version': '1.3.0', 'debug': False}\"",
    ),
    Task(
        "replace-word",
        "In notes.txt, replace every occurrence of the word colour with color.",
        {"notes.txt": "The colour of the sky.\nA colour chart.\nNo change here.\n"},
        lines_check("notes.txt", ["The color of the sky.", "A color chart.", "No change here."]),
    ),
    Task(
        "word-count",
        "How many words does story.txt have? Write only the number to words.txt.",
        {"story.txt": _STORY},
        value_check("words.txt", str(len(_STORY.split()))),
    ),
    Task(
        "largest-file",
        "Which file in the folder data/ is the largest? Write only its name (without the "
        "folder) to largest.txt.",
        {"data/a.bin": "x" * 300, "data/b.bin": "x" * 4000, "data/c.bin": "x" * 1200},
        value_check("largest.txt", "b.bin"),
    ),
    Task(
        "unique-names",
        "names.txt has one name per line, some of them repeated. Write each name once, "
        "sorted alphabetically, one per line, to unique.txt.",
        {"names.txt": "mia\nleo\nada\nmia\nzoe\nleo\nada\nbob\n"},
        lines_check("unique.txt", ["ada", "bob", "leo", "mia", "zoe"]),
    ),
    Task(
        "count-errors",
        "How many lines of app.log contain the word ERROR? Write only the number to count.txt.",
        {"app.log": _APP_LOG},
        value_check("count.txt", str(_APP_LOG.count("ERROR"))),
    ),
    Task(
        "extract-errors",
        "Write every line of app.log that contains ERROR, in the same order, to errors.txt.",
        {"app.log": _APP_LOG},
        lines_check("errors.txt", [line for line in _APP_LOG.splitlines() if "ERROR" in line]),
    ),
    Task(
        "env-port",
        "config.env holds KEY=VALUE lines. Write the value of PORT (only the value) to port.txt.",
        {"config.env": "HOST=localhost\n# PORT=80 is the old one\nPORT=8471\nDEBUG=0\n"},
        value_check("port.txt", "8471"),
    ),
    Task(
        "older-than-30",
        "people.csv has the columns name,age,city. Write the names of the people older "
        "than 30, one per line, in the order of the file, to older.txt.",
        {"people.csv": _PEOPLE},
        lines_check("older.txt", ["Ann", "Cara", "Eli"]),
    ),
    Task(
        "sort-numbers",
        "numbers.txt has one integer per line. Write them sorted from smallest to largest, "
        "one per line, to sorted.txt.",
        {"numbers.txt": "42\n7\n-3\n105\n0\n18\n"},
        lines_check("sorted.txt", ["-3", "0", "7", "18", "42", "105"]),
    ),
    Task(
        "line-18",
        "Write line 18 of poem.txt (the whole line, as it is) to line.txt.",
        {"poem.txt": _POEM},
        lines_check("line.txt", [_POEM.splitlines()[17]]),
    ),
    Task(
        "tar-archive",
        "Make a gzip-compressed tar archive backup.tar.gz of the folder notes/ (the folder "
        "itself inside the archive, as notes/...).",
        {"notes/a.txt": "alpha\n", "notes/b.txt": "beta\n"},
        output_check("tar tzf backup.tar.gz | grep -v '/$' | sort", ["notes/a.txt", "notes/b.txt"]),
    ),
    Task(
        "delete-tmp",
        "Delete every file whose name ends in .tmp anywhere under work/ (in all subfolders); "
        "keep every other file.",
        {
            "work/a.tmp": "",
            "work/keep.txt": "k\n",
            "work/sub/b.tmp": "",
            "work/sub/c.py": "",
            "work/sub/deep/d.tmp": "",
        },
        output_check("find work -type f | sort", ["work/keep.txt", "work/sub/c.py"]),
    ),
    Task(
        "checksum",
        "Write the SHA-256 checksum of data.bin (only its 64 hex digits) to sum.txt.",
        {"data.bin": "four functions compose\n" * 3},
        value_check("sum.txt", hashlib.sha256(b"four functions compose\n" * 3).hexdigest()),
    ),
    Task(
        "active-users",
        'users.json holds a list of users. How many of them have "active": true? Write '
        "only the number to active.txt.",
        {"users.json": _USERS},
        value_check("active.txt", "4"),
    ),
    # --- Python: fix or write code ---------------------------------------------------------
    Task(
        "doctest-prime",
        "Implement the function is_prime in primes.py so that `python3 -m doctest "
        "primes.py` passes.",
        {
            "primes.py": 'def is_prime(n):\n    """Whether n is a prime number.\n\n'
            "    >>> [k for k in range(20) if is_prime(k)]\n"
            "    [2, 3, 5, 7, 11, 13, 17, 19]\n    >>> is_prime(97), is_prime(91)\n"
            '    (True, False)\n    """\n    raise NotImplementedError\n'
        },
        "python3 -m doctest primes.py && python3 -c 'import primes; "
        "assert primes.is_prime(7919) and not primes.is_prime(7917)'",
    ),
    Task(
        "fix-bug",
        "`python3 -m unittest test_calc` fails. Fix calc.py so that the tests pass "
        "(do not change the tests).",
        {
            "calc.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
            "test_calc.py": "import unittest\n\nfrom calc import add, mul\n\n\n"
            "class T(unittest.TestCase):\n    def test_add(self):\n"
            "        self.assertEqual(add(2, 3), 5)\n\n    def test_mul(self):\n"
            "        self.assertEqual(mul(2, 3), 6)\n",
        },
        "python3 -m unittest -q test_calc 2>/dev/null && "
        "python3 -c 'import calc; assert calc.add(10, 4) == 14'",
    ),
    Task(
        "fizzbuzz",
        "Write a Python script fizz.py that prints the numbers 1 to 15, one per line, "
        "but Fizz for multiples of 3, Buzz for multiples of 5, and FizzBuzz for both.",
        {},
        output_check(
            "python3 fizz.py",
            [
                "1",
                "2",
                "Fizz",
                "4",
                "Buzz",
                "Fizz",
                "7",
                "8",
                "Fizz",
                "Buzz",
                "11",
                "Fizz",
                "13",
                "14",
                "FizzBuzz",
            ],
        ),
    ),
    Task(
        "fix-index",
        "`python3 stats.py` crashes with an IndexError. Fix the function last() in "
        "stats.py so that it returns the last element of the list.",
        {
            "stats.py": "def last(xs):\n    return xs[len(xs)]\n\n\nprint(last([3, 1, 4, 1, 5, 9]))\n"
        },
        output_check("python3 stats.py", ["9"])
        + " && python3 -c 'import stats; assert stats.last([7, 8]) == 8' >/dev/null",
    ),
    Task(
        "greet-arg",
        "Change greet.py so that `python3 greet.py Ann` prints `Hello, Ann!` (the name "
        "comes from the first command-line argument).",
        {"greet.py": 'name = "World"\nprint(f"Hello, {name}!")\n'},
        output_check("python3 greet.py Zed", ["Hello, Zed!"]),
    ),
    Task(
        "mean-empty",
        "`python3 -m unittest test_mean` fails: mean() of an empty list must return 0. "
        "Fix mean.py (do not change the tests).",
        {
            "mean.py": "def mean(xs):\n    return sum(xs) / len(xs)\n",
            "test_mean.py": "import unittest\n\nfrom mean import mean\n\n\n"
            "class T(unittest.TestCase):\n    def test_empty(self):\n"
            "        self.assertEqual(mean([]), 0)\n\n    def test_values(self):\n"
            "        self.assertEqual(mean([2, 4]), 3)\n",
        },
        "python3 -m unittest -q test_mean 2>/dev/null && "
        "python3 -c 'import mean; assert mean.mean([1, 2, 3, 6]) == 3'",
    ),
    # --- notebooks ----------------------------------------------------------------------------
    Task(
        "nb-count-cells",
        "How many code cells does the Jupyter notebook report.ipynb have? Write only the "
        "number to cells.txt.",
        {"report.ipynb": _SALES_NB},
        value_check("cells.txt", "3"),
    ),
    Task(
        "nb-to-script",
        "Write the source of every code cell of the Jupyter notebook report.ipynb, in "
        "order, to report.py, so that `python3 report.py` prints what the notebook prints.",
        {"report.ipynb": _SALES_NB},
        output_check("python3 report.py", ["295", "120"]),
    ),
    Task(
        "nb-execute",
        "Run the Jupyter notebook report.ipynb so that its outputs are saved in the file "
        "itself (`jupyter execute` is installed).",
        {"report.ipynb": _SALES_NB},
        output_check(
            "python3 -c \"import json; nb = json.load(open('report.ipynb')); "
            "[print(''.join(o.get('text', '')).strip()) for c in nb['cells'] for o in c.get('outputs', [])]\"",
            ["295", "120"],
        ),
    ),
    Task(
        "nb-fix-cell",
        "The notebook calc.ipynb fails when it runs: a cell uses a name before any cell "
        "defines it. Fix the notebook (keep its cells, in order) so that `jupyter execute "
        "calc.ipynb` runs without an error.",
        {
            "calc.ipynb": notebook(
                ("code", "prices = [3, 5, 8]"),
                ("code", "print(sum(prices) * rate)"),
            )
        },
        'jupyter execute calc.ipynb >/dev/null 2>&1 && python3 -c "import json; '
        "nb = json.load(open('calc.ipynb')); cells = [c for c in nb['cells'] if c['cell_type'] == 'code']; "
        "assert len(cells) >= 2 and 'prices' in ''.join(cells[0]['source'])\"",
    ),
)


SOLUTIONS: Mapping[str, str] = {
    "email-domains": "grep -o '@[^ ]*' log.txt | cut -c2- | sort -u > domains.txt",
    "run-script": "chmod +x hello.sh && ./hello.sh > out.txt",
    "count-lines": "find src -name '*.py' -exec cat {} + | wc -l > total.txt",
    "csv-sum": "awk -F, '$1 == \"north\" {s += $2} END {print s}' sales.csv > north.txt",
    "rename-ext": 'for f in docs/*.txt; do mv "$f" "${f%.txt}.md"; done',
    "json-version": "python3 -c \"import json; d = json.load(open('config.json')); "
    "d['version'] = '1.3.0'; json.dump(d, open('config.json', 'w'))\"",
    "replace-word": "sed -i 's/colour/color/g' notes.txt",
    "word-count": "wc -w < story.txt > words.txt",
    "largest-file": "ls -S data | head -n 1 > largest.txt",
    "unique-names": "sort -u names.txt > unique.txt",
    "count-errors": "grep -c ERROR app.log > count.txt",
    "extract-errors": "grep ERROR app.log > errors.txt",
    "env-port": "grep '^PORT=' config.env | cut -d= -f2 > port.txt",
    "older-than-30": "awk -F, 'NR > 1 && $2 > 30 {print $1}' people.csv > older.txt",
    "sort-numbers": "sort -n numbers.txt > sorted.txt",
    "line-18": "sed -n 18p poem.txt > line.txt",
    "tar-archive": "tar czf backup.tar.gz notes",
    "delete-tmp": "find work -type f -name '*.tmp' -delete",
    "checksum": "sha256sum data.bin | cut -c1-64 > sum.txt",
    "active-users": "grep -c '\"active\": true' users.json > active.txt",
    "doctest-prime": "sed -i 's/    raise NotImplementedError/    return n > 1 and "
    "all(n % k for k in range(2, int(n ** 0.5) + 1))/' primes.py",
    "fix-bug": "sed -i 's/return a - b/return a + b/' calc.py",
    "fizzbuzz": "printf '%s\\n' 'for i in range(1, 16):' "
    '\'    print("FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else '
    '"Buzz" if i % 5 == 0 else i)\' > fizz.py',
    "fix-index": "sed -i 's/xs\\[len(xs)\\]/xs[-1]/' stats.py",
    "greet-arg": "sed -i 's/name = \"World\"/import sys\\nname = sys.argv[1]/' greet.py",
    "mean-empty": "sed -i 's|return sum(xs) / len(xs)|return sum(xs) / len(xs) if xs else 0|' mean.py",
    "nb-count-cells": "python3 -c \"import json; nb = json.load(open('report.ipynb')); "
    "print(sum(c['cell_type'] == 'code' for c in nb['cells']))\" > cells.txt",
    "nb-to-script": "python3 -c \"import json; nb = json.load(open('report.ipynb')); "
    "print('\\n'.join(''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code'))\""
    " > report.py",
    "nb-execute": "jupyter execute --inplace report.ipynb",
    "nb-fix-cell": "python3 -c \"import json; nb = json.load(open('calc.ipynb')); "
    "nb['cells'][0]['source'] += '\\nrate = 2'; json.dump(nb, open('calc.ipynb', 'w'))\"",
}
"""A command that does each task, written here: the check of every task accepts it, so a
task no runner solves is one the runner could not do, not one no answer passes (tested)."""

NEAR_MISSES: Mapping[str, Sequence[str]] = {
    "email-domains": (
        "grep '@' log.txt | cut -d'@' -f2 | sort -u > domains.txt",
        "grep -oE '@[a-zA-Z0-9.-]+' log.txt | sort | uniq > domains.txt",
    ),
    "largest-file": (
        "ls -la | tail -n 1 | awk '{print $9}' > largest.txt",
        'echo "data/c.bin" > largest.txt && cat largest.txt',
    ),
    "older-than-30": (
        "awk -F, '$2 > 30 {print $1}' people.csv > older.txt",
        "cat people.csv | awk -F',' '$3 > 30 {print $1}' > older.txt",
    ),
    "nb-count-cells": ("echo 5 > cells.txt",),
}
"""Commands the built-in model ran on tasks it did not solve (read from the bench's
trajectories): each task's check rejects them (tested), as it should."""


def make_workspace(task: Task, parent: Path) -> Path:
    """A fresh folder holding the task's files."""
    folder = Path(tempfile.mkdtemp(prefix=f"{task.id}-", dir=parent))
    for name, text in task.files.items():
        path = folder / name.rstrip("*")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if name.endswith("*"):
            path.chmod(0o755)
    return folder


def solved(task: Task, folder: Path) -> bool:
    if not folder.is_dir():  # an attempt's model deleted its own copy (rm -rf of its path)
        return False
    done = subprocess.run(
        ["bash", "-c", task.check], cwd=folder, capture_output=True, timeout=60, check=False
    )
    return done.returncode == 0


@dataclass(frozen=True, slots=True)
class Result:
    runner: str
    task: str
    solved: bool
    outcome: str
    steps: int
    tokens: int
    seconds: float
    format_errors: int = 0
    replies: int = 0


def cycle_breaking_invoke(G: Invoke) -> Invoke:
    """G as ``four run`` wraps it: a model repeating itself is resampled, a transient
    error (a request timed out on a busy server) tried again."""
    from four.invoke import cycle_breaking_invoke as breaking
    from four.invoke import retry_invoke

    return retry_invoke(breaking(G))


def local_g(sampling: SamplingArgs | None = None, grammar: Grammar | None = None) -> LocalInvoke:
    """The bench's G: decoded under ``grammar`` (V1's, as ``four run --local`` does)."""
    from four.invoke import local_invoke

    # A slot a lane, each keeping its prompt cache. One thread: on a shared machine two
    # threads wait for each other at every barrier.
    model = os.environ.get("FOUR_BENCH_MODEL")
    temperature, seed = (
        (0.0, 0) if sampling is None else (sampling["temperature"], sampling["seed"])
    )
    return local_invoke(
        model, max_tokens=REPLY_TOKENS, parallel=LANES, threads=1, temperature=temperature,
        seed=seed, grammar=grammar, timeout=REQUEST_SECONDS,
    )  # fmt: skip


def _saved(path: Path) -> tuple[str, int, int, int]:
    """Outcome, steps, tokens and format errors of a sealed trajectory."""
    doc = json.loads(Path(path).read_text())
    stats = doc.get("stats") or {}
    usage = stats.get("usage") or {}
    tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
    return (
        str(doc.get("outcome")),
        int(stats.get("steps") or 0),
        tokens,
        int(stats.get("format_errors") or 0),
    )


def run_plain(task: Task, folder: Path, out: Path, steps: int = STEPS) -> list[Result]:
    """One run as ``four run --local`` makes it (no check)."""
    return _single("four", task, folder, out, None, steps)


def run_verified_before(task: Task, folder: Path, out: Path, steps: int = STEPS) -> list[Result]:
    """``four run --check`` as it was before attempts: one run, the model told only that it
    failed (``verdict``), a reason told once."""
    from four.checks import command_check, verify

    check = verify(command_check(task.check, timeout=60), retries_per_reason=1)
    return _single("four --check before (verdict, 1 retry, 1 run)", task, folder, out, check, steps)


def _single(
    name: str, task: Task, folder: Path, out: Path, check: Verify | None, steps: int
) -> list[Result]:
    from four import run
    from four.cli._build import Deadline
    from four.domains._bash import TEXT
    from four.domains._bash import environment as make_env
    from four.domains._preview import prompt_with_preview
    from four.parse import regex_parse
    from four.trajectory import save_trajectory

    start = time.monotonic()
    V1 = regex_parse()
    path = run(
        cycle_breaking_invoke(local_g(grammar=V1.grammar())),
        V1,
        make_env("local", cwd=str(folder), timeout=COMMAND_TIMEOUT),
        save_trajectory(out),
        prompt_with_preview(TEXT, folder),
        task.prompt,
        steps,
        check=check,
        watch=Deadline(RUN_SECONDS),
    )
    outcome, used, tokens, errors = _saved(path)
    seconds = time.monotonic() - start
    return [Result(name, task.id, solved(task, folder), outcome, used, tokens, seconds,
                   errors, used)]  # fmt: skip


def run_search(
    task: Task,
    folder: Path,
    out: Path,
    steps: int = STEPS,
    attempts: Sequence[int] = ATTEMPTS,
    workers: int = 1,
) -> list[Result]:
    """``four run --local --check CMD --attempts 4`` as the command builds it (its default
    feedback and retries), every attempt's copy kept; a row for each of ``attempts`` (1,
    2 and 4), ``workers`` attempts at once.

    Attempt i samples with seed i - 1 (temperature 0 for the first, then
    ``DEFAULT_TEMPERATURE``), whatever K is, so a search of K attempts is exactly the first
    K attempts of this one: its folder is the first accepted attempt's, else the K-th's."""
    from four.checks import command_check, verify
    from four.cli._build import Deadline
    from four.cli._options import DEFAULT_RETRIES_PER_REASON, VISIBLE_FEEDBACK
    from four.domains._bash import TEXT
    from four.domains._bash import environment as make_env
    from four.domains._preview import prompt_with_preview
    from four.parse import regex_parse
    from four.search import Attempt, Search
    from four.trajectory import save_trajectory

    check = verify(
        command_check(task.check, timeout=60, feedback=VISIBLE_FEEDBACK),  # type: ignore[arg-type]
        retries_per_reason=DEFAULT_RETRIES_PER_REASON,
    )

    V1 = regex_parse()
    system = prompt_with_preview(TEXT, folder)  # the pristine workspace's, as four run's

    def make(a: Attempt) -> Path:
        return a.run(
            cycle_breaking_invoke(local_g(a.sampling, V1.grammar())),
            V1,
            make_env("local", cwd=a.cwd, timeout=COMMAND_TIMEOUT),
            save_trajectory(out),
            system,
            max_steps=steps,
            check=check,
            watch=Deadline(RUN_SECONDS),
        )

    search: Search[Path] = Search(
        max(attempts),
        task.prompt,
        workspace=folder,
        record_dir=out,
        keep_copies=True,
        workers=workers,
    )
    search.run(make)
    copies = search.copies
    assert copies is not None
    rows: list[Result] = []
    for k in attempts:
        members = search.members[:k]
        first = next((m for m in members if m.accepted), None)
        used = members[: first.link.index] if first else members
        last = used[-1]
        chosen = copies / f"attempt-{last.link.index}"
        errors = replies = 0
        for m in used:
            assert m.path is not None
            _, made, _, errs = _saved(m.path)
            errors, replies = errors + errs, replies + made
        rows.append(
            Result(
                f"four --check, {k} attempt{'s' if k > 1 else ''}",
                task.id,
                solved(task, chosen),
                last.outcome.text,
                sum(m.steps for m in used),
                sum(m.usage.total_tokens for m in used),
                sum(m.seconds for m in used),
                errors,
                replies,
            )
        )
    whole = rows[-1]
    if solved(task, folder) != whole.solved:  # the user's folder is the chosen attempt's
        raise AssertionError(f"{task.id}: the workspace is not the result's")
    shutil.rmtree(copies, ignore_errors=True)
    return rows


MINI_CONFIG = """\
agent:
  step_limit: {steps}
  cost_limit: 0
model:
  model_name: "openai/{alias}"
  model_kwargs:
    api_base: "{base}"
    api_key: "none"
    temperature: 0.0
    max_tokens: {tokens}
    timeout: {request}
    drop_params: true
  cost_tracking: "ignore_errors"
environment:
  cwd: "{cwd}"
  timeout: {timeout}
"""


def run_mini(mini: str, task: Task, folder: Path, out: Path, steps: int = STEPS) -> list[Result]:
    """One mini-swe-agent run on the same server."""
    start = time.monotonic()
    status, used, tokens = _mini(mini, task, folder, out, steps)
    seconds = time.monotonic() - start
    return [Result("mini-swe-agent", task.id, solved(task, folder), status, used, tokens, seconds)]


def _mini(mini: str, task: Task, folder: Path, out: Path, steps: int) -> tuple[str, int, int]:
    server = local_g().server().unwrap()
    extra = out / f"{task.id}.yaml"
    extra.write_text(
        MINI_CONFIG.format(
            steps=steps,
            alias=server.settings.model,
            base=server.url + "/v1",
            tokens=REPLY_TOKENS,
            cwd=folder,
            timeout=int(COMMAND_TIMEOUT),
            request=int(REQUEST_SECONDS),
        )
    )
    traj = out / f"{task.id}.traj.json"
    command = [
        mini, "-c", "mini_textbased.yaml", "-c", str(extra), "--model-class",
        "litellm_textbased", "-t", task.prompt, "-y", "--exit-immediately", "-o", str(traj),
    ]  # fmt: skip
    env = {**os.environ, "MSWEA_CONFIGURED": "true", "MSWEA_COST_TRACKING": "ignore_errors"}
    try:
        subprocess.run(
            command, cwd=folder, env=env, capture_output=True, timeout=RUN_SECONDS,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timeout", 0, 0  # its trajectory is written only at its end
    return mini_stats(traj)


def mini_stats(traj: Path) -> tuple[str, int, int]:
    """Exit status, model calls and tokens from a mini-swe-agent trajectory."""
    try:
        doc = json.loads(traj.read_text())
    except (OSError, ValueError):
        return "no trajectory", 0, 0
    info = doc.get("info") or {}
    steps = int((info.get("model_stats") or {}).get("api_calls") or 0)
    tokens = 0
    for message in doc.get("messages") or []:
        usage = (((message.get("extra") or {}).get("response") or {}).get("usage")) or {}
        tokens += int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
    return str(info.get("exit_status")), steps, tokens


MINI_VERSION = "2.4.6"


def install_mini() -> str:
    """mini-swe-agent 2.4.6 in a virtualenv of its own (under the user's cache folder,
    made once): it is the baseline, not a dependency of four. Its ``mini`` command."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = cache / "four-bench" / f"mini-swe-agent-{MINI_VERSION}"
    mini = venv / "bin" / "mini"
    if not mini.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", f"mini-swe-agent=={MINI_VERSION}"],
            check=True,
        )
    return str(mini)


Runner = Callable[[Task, Path, Path], list[Result]]


def runners(
    mini: str | None, steps: int = STEPS, attempts: int = max(ATTEMPTS), workers: int = 1
) -> dict[str, Runner]:
    chosen: dict[str, Runner] = {
        "four": partial(run_plain, steps=steps),
        "check": partial(
            run_search,
            steps=steps,
            attempts=sorted({k for k in ATTEMPTS if k < attempts} | {attempts}),
            workers=workers,
        ),
        "before": partial(run_verified_before, steps=steps),
    }
    if mini:
        chosen["mini"] = partial(run_mini, mini, steps=steps)
    return chosen


def bench(
    tasks: Sequence[Task],
    chosen: Mapping[str, Runner],
    keep: Path | None,
    rows: Path | None = None,
    lanes: int = LANES,
) -> list[Result]:
    """Every runner on every task, ``lanes`` jobs at a time on the server's slots (a
    slot's prompt cache serves its job's steps; several replies decoded together cost
    little more than one). Each row is printed, and appended to ``rows`` as it comes;
    jobs whose rows are there already are not run again (a bench cut short goes on)."""
    done = _read_rows(rows)
    names = {
        "four": "four",
        "check": "four --check,",
        "before": "four --check before",
        "mini": "mini-swe-agent",
    }
    jobs = [
        (task, name) for task in tasks for name in chosen
        if not any(r.task == task.id and r.runner.startswith(names[name]) for r in done)
    ]  # fmt: skip
    # four's runners task by task, the baseline after them: a run cut short still
    # compares four's plain and verified runs on the same tasks.
    jobs.sort(key=lambda job: job[1] == "mini")
    parent = Path(tempfile.mkdtemp(prefix="four-bench-tasks-"))
    lock = threading.Lock()

    def job(item: tuple[Task, str]) -> list[Result]:
        task, name = item
        results = _one(task, name, chosen[name], parent)
        if rows is not None:
            with lock, rows.open("a") as f:
                f.writelines(json.dumps(_row(r)) + "\n" for r in results)
        return results

    try:
        with ThreadPoolExecutor(lanes) as pool:
            ran = [r for results in pool.map(job, jobs) for r in results]
        if keep is not None:
            shutil.copytree(parent, keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    return [*done, *ran]


def _read_rows(rows: Path | None) -> list[Result]:
    if rows is None or not rows.exists():
        return []
    return [Result(**json.loads(line)) for line in rows.read_text().splitlines() if line]


def _one(task: Task, name: str, runner: Runner, parent: Path) -> list[Result]:
    folder = make_workspace(task, parent)
    out = folder.with_name(folder.name + "-out")
    out.mkdir()
    try:
        results = runner(task, folder, out)
    except Exception as exc:  # a runner's own failure is a row, not the bench's end
        failed = f"bench error: {type(exc).__name__}: {exc}"
        results = [Result(name, task.id, False, failed, 0, 0, 0.0)]
    for result in results:
        print(f"<!-- {json.dumps(_row(result))} -->", flush=True)
    return results


def _row(result: Result) -> dict[str, object]:
    return {f: getattr(result, f) for f in Result.__dataclass_fields__}


def table(results: Sequence[Result], tasks: Sequence[Task]) -> str:
    names = list(dict.fromkeys(r.runner for r in results))
    lines = [
        "| runner | solved | steps (mean) | tokens (total) | wall s (total) | format errors | outcomes |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name in names:
        rows = [r for r in results if r.runner == name]
        n = len(rows)
        outcomes: dict[str, int] = {}
        for r in rows:
            key = r.outcome if r.outcome.startswith("exit:") else r.outcome.split(":", 1)[0]
            outcomes[key] = outcomes.get(key, 0) + 1
        replies = sum(r.replies for r in rows)
        rate = f"{sum(r.format_errors for r in rows)}/{replies}" if replies else "-"
        lines.append(
            f"| {name} | {sum(r.solved for r in rows)}/{n} "
            f"| {sum(r.steps for r in rows) / n:.1f} | {sum(r.tokens for r in rows):,} "
            f"| {sum(r.seconds for r in rows):,.0f} | {rate} "
            f"| {', '.join(f'{k} {v}' for k, v in sorted(outcomes.items()))} |"
        )
    lines += ["", "| task | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for task in tasks:
        cells = []
        for name in names:
            row = next((r for r in results if r.runner == name and r.task == task.id), None)
            cells.append("" if row is None else ("yes" if row.solved else "no") + f" ({row.steps})")
        lines.append(f"| {task.id} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mini",
        default=os.environ.get("FOUR_BENCH_MINI"),
        help="mini-swe-agent's `mini` (default: installed into its own venv)",
    )
    parser.add_argument("--tasks", help="comma-separated task ids (default: all)")
    parser.add_argument(
        "--runners", help="comma-separated: four, check, before, mini (default: all)"
    )
    parser.add_argument("--keep", type=Path, help="copy the workspaces and trajectories here")
    parser.add_argument("--rows", type=Path, help="append each row here; skip the jobs it has")
    parser.add_argument(
        "--steps",
        type=int,
        default=STEPS,
        help=f"model calls a run (an attempt) may make (default {STEPS}); a --rows file "
        "holds one budget's rows",
    )
    parser.add_argument(
        "--attempts",
        type=int,
        default=max(ATTEMPTS),
        help="attempts of the check runner's search, its last row (default 4; rows for 1, 2 "
        "and 4 below it)",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="attempts of one search at once (default 1)"
    )
    args = parser.parse_args(argv if argv is not None else [])
    # The tasks' own tools (python3 with nbformat, jupyter) are this interpreter's.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    tasks = [t for t in TASKS if not args.tasks or t.id in args.tasks.split(",")]
    wanted = set(args.runners.split(",")) if args.runners else {"four", "check", "before", "mini"}
    mini = (args.mini or install_mini()) if "mini" in wanted else None
    # A task's `pip install` would go into this interpreter's environment and change the
    # tools of every task after it (one did: `pip install jupyter`): no index to install from.
    os.environ["PIP_NO_INDEX"] = "1"
    for name in ("steps", "attempts", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    made = runners(mini, args.steps, args.attempts, args.workers)
    chosen = {k: v for k, v in made.items() if k in wanted}
    results = bench(tasks, chosen, args.keep, args.rows)
    print(table(results, tasks))
    print(
        f"\n{len(tasks)} tasks; {args.steps} steps a run (an attempt), {REPLY_TOKENS} tokens a "
        f"reply; plain runs and attempt 1 at temperature 0; tokens are prompt + completion "
        f"as the server counted them."
    )


if __name__ == "__main__":
    main(sys.argv[1:])
