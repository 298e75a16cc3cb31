"""Diagnostics of ruff and mypy: read from their JSON output, told apart (introduced by an
edit or already there), and shown the way models read them best: inside the enclosing
function, with line numbers, not as bare line numbers."""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Tool = Literal["mypy", "ruff"]

_MYPY_TEXT = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?P<severity>error|warning): "
    r"(?P<message>.*?)(?:  \[(?P<code>[a-z0-9-]+)\])?$"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours, if the daemon thinks it talks to a terminal
_CONTEXT = 12  # lines of a long function shown on each side of the diagnostic


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem a checker found: ``file`` relative to the workspace, 1-based ``line``."""

    tool: Tool
    file: str
    line: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}  [{self.tool} {self.code}]"


def mypy_diagnostics(output: str, files: Iterable[str]) -> list[Diagnostic]:
    """The errors in ``mypy -O json`` (or dmypy) output, for ``files`` only.

    A syntax error, and some daemon messages, come as plain text lines; they are read too.

    >>> line = '{"file": "a.py", "line": 2, "message": "Bad", "code": "misc", "severity": "error"}'
    >>> mypy_diagnostics(line, ["a.py"])
    [Diagnostic(tool='mypy', file='a.py', line=2, code='misc', message='Bad')]
    """
    wanted = set(files)
    found: list[Diagnostic] = []
    for raw in _ANSI.sub("", output).splitlines():
        text = raw.strip()
        if text.startswith("{"):
            try:
                item = json.loads(text)
            except ValueError:
                continue
            if not isinstance(item, dict) or item.get("severity") != "error":
                continue
            file, line = str(item.get("file", "")), int(item.get("line") or 0)
            code, message = str(item.get("code") or "error"), str(item.get("message", ""))
        elif (match := _MYPY_TEXT.match(text)) is not None and match["severity"] == "error":
            file, line = match["file"], int(match["line"])
            code, message = match["code"] or "syntax", match["message"]
        else:
            continue
        if file in wanted:
            found.append(Diagnostic("mypy", file, line, code, message))
    return found


def ruff_diagnostics(output: str, root: Path) -> list[Diagnostic]:
    """The violations in ``ruff check --output-format json`` output, paths made relative."""
    try:
        items = json.loads(output or "[]")
    except ValueError:
        return []
    found: list[Diagnostic] = []
    for item in items if isinstance(items, list) else []:
        filename = Path(str(item.get("filename", "")))
        try:
            file = filename.relative_to(root).as_posix()
        except ValueError:
            file = filename.as_posix()
        line = int((item.get("location") or {}).get("row") or 0)
        code = str(item.get("code") or "syntax")
        found.append(Diagnostic("ruff", file, line, code, str(item.get("message", ""))))
    return found


def introduced(
    before: Sequence[Diagnostic],
    after: Sequence[Diagnostic],
    old_texts: Mapping[str, str],
    new_texts: Mapping[str, str],
) -> tuple[list[Diagnostic], list[Diagnostic], list[Diagnostic]]:
    """Split ``after`` into (introduced, already there), and name what was fixed.

    A diagnostic was already there when ``before`` has one with the same tool, file, code
    and message on the line the edit moved it to (lines followed with a diff), else
    anywhere in the file (the count of such ones is kept). Returns (introduced, kept,
    fixed).
    """
    moved = {
        file: _line_map(old_texts.get(file, ""), new_texts.get(file, "")) for file in old_texts
    }
    left = list(before)
    new: list[Diagnostic] = []
    kept: list[Diagnostic] = []
    unplaced: list[Diagnostic] = []
    for diag in after:
        mapping = moved.get(diag.file, {})
        match = next(
            (
                old
                for old in left
                if _same(old, diag) and mapping.get(old.line, old.line) == diag.line
            ),
            None,
        )
        if match is None:
            unplaced.append(diag)
        else:
            left.remove(match)
            kept.append(diag)
    pool = Counter((d.tool, d.file, d.code, d.message) for d in left)
    for diag in unplaced:
        key = (diag.tool, diag.file, diag.code, diag.message)
        if pool[key] > 0:
            pool[key] -= 1
            kept.append(diag)
            left.remove(next(old for old in left if _same(old, diag)))
        else:
            new.append(diag)
    return new, kept, left


def _same(a: Diagnostic, b: Diagnostic) -> bool:
    return (a.tool, a.file, a.code, a.message) == (b.tool, b.file, b.code, b.message)


def _line_map(old: str, new: str) -> dict[int, int]:
    """Old line number -> new line number, for the lines an edit left as they were."""
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                mapping[i1 + offset + 1] = j1 + offset + 1
    return mapping


def in_context(diag: Diagnostic, text: str) -> str:
    """``diag`` with the source of its enclosing function (or the lines around it), its
    line marked with ``>``.

    >>> src = "def f(x: int) -> str:\\n    y = 1\\n    return x\\n"
    >>> print(in_context(Diagnostic("mypy", "a.py", 3, "return-value", "Bad return"), src))
    a.py:3: Bad return  [mypy return-value]
      in function f (lines 1-3):
           1 | def f(x: int) -> str:
           2 |     y = 1
        >  3 |     return x
    """
    lines = text.splitlines()
    span = _enclosing(text, diag.line)
    if span is None:
        first, last, where = max(1, diag.line - 2), min(len(lines), diag.line + 2), ""
    else:
        first, last, name = span
        where = f"  in function {name} (lines {first}-{last}):\n"
    shown = _window(first, last, diag.line)
    body = "\n".join(
        f"    {'>' if number == diag.line else ' '}{number:>3} | {lines[number - 1]}"
        if number
        else "         ..."
        for number in shown
        if number == 0 or 1 <= number <= len(lines)
    )
    return f"{diag}\n{where}{body}" if body else str(diag)


def _window(first: int, last: int, line: int) -> list[int]:
    """The line numbers shown of ``first..last``: all of them, or for a long function its
    first line, ``...`` (0), and the lines around ``line``."""
    if last - first <= 2 * _CONTEXT + 4 or not first <= line <= last:
        return list(range(first, last + 1))
    low, high = max(first + 1, line - _CONTEXT), min(last, line + _CONTEXT)
    shown = [first] + ([0] if low > first + 1 else [])
    shown += list(range(low, high + 1))
    return shown + ([0] if high < last else [])


def _enclosing(text: str, line: int) -> tuple[int, int, str] | None:
    """The innermost function (decorators included) around ``line``: first, last, name."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    best: tuple[int, int, str] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            last = node.end_lineno or node.lineno
            if first <= line <= last and (best is None or last - first < best[1] - best[0]):
                best = (first, last, node.name)
    return best
