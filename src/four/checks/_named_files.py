"""After a NO, the files the task names as they are now: missing, empty, their first lines,
and, against the run's start, whether and how the agent changed them.

A small model writes its result with ``command > file``, sees no output, submits, and is
told the check failed; it never reads the file and runs the same command again. Shown
what the file holds (nothing, ``20 story.txt``, a JSON dump), it fixes it. Shown that a
file it meant to edit is unchanged (its ``cat file <<EOF`` lacked the ``>``), or the lines
its rewrite dropped, it edits again. This is the agent's own work, not the check's: it is
shown at every feedback level. A Python or JSON file that does not parse says where (an
edit's indentation slip is otherwise invisible when the check prints nothing).
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import shlex
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from four._types import Execute
from four.checks._claim import run_command

NAMES = 4  # files shown at most
LINES = 6  # lines of each
WIDTH = 160  # characters of a line
READ = 8000  # bytes read of the files, shared among them (an output holds 10,000)
CHANGES = 12  # lines of a change shown

_NAME = re.compile(r"(?<![\w@/.:~-])((?:[\w-]+/)*[\w-][\w.-]*\.[A-Za-z]\w{0,7})(?![\w/-])")
_MARK = "@@four-file "
_HEAD = re.compile(r"^(missing|folder|file (\d+) (\d+) (\d+)) (.+)$")


@dataclass(frozen=True, slots=True)
class FileState:
    """A named file as read in the run's environment: its kind; for a file, its checksum
    (``cksum``), size, line count, first bytes (its share of ``READ``) and whether they
    are all of it."""

    kind: Literal["missing", "folder", "file"]
    checksum: int = 0
    size: int = 0
    lines: int = 0
    head: str = ""
    whole: bool = True


def named_files(task: str) -> tuple[str, ...]:
    """The relative file names in ``task``'s text (``name.ext``, ``dir/name.ext``), in the
    order they first appear; not URLs, addresses or abbreviations.

    >>> named_files("Read log.txt, e.g. with grep, and write out/domains.txt and log.txt.")
    ('log.txt', 'out/domains.txt')
    >>> named_files("Mail ann@example.com, see https://x.org/a.html")
    ()
    """
    names: list[str] = []
    for match in _NAME.finditer(task):
        name = match.group(1)
        stem, _, ext = name.rpartition(".")
        if len(stem) == 1 and len(ext) == 1:  # e.g, i.e
            continue
        if task[match.end(1) : match.end(1) + 3] == "://" or name in names:
            continue
        names.append(name)
    return tuple(names)


def _script(names: tuple[str, ...], share: int) -> str:
    """One shell command: per name a marker line (its kind; a file's checksum, size and
    line count), then the first bytes of a file."""
    quoted = " ".join(shlex.quote(n) for n in names)
    say = "printf '%s%s\\n' " + shlex.quote(_MARK)
    return (
        f"for f in {quoted}; do "
        f'if [ -d "$f" ]; then {say} "folder $f"; '
        f'elif [ ! -e "$f" ]; then {say} "missing $f"; '
        f'else {say} "file $(cksum < "$f") $(wc -l < "$f") $f"; '
        f'head -c {share} "$f"; echo; '
        "fi; done"
    )


def read_files(env: Execute, task: str) -> dict[str, FileState]:
    """The files ``task`` names (at most ``NAMES``) as they are in ``env`` now; empty when
    it names none or they cannot be read (an environment without a shell)."""
    names = named_files(task)[:NAMES]
    if not names:
        return {}
    share = READ // len(names)
    ran = run_command(env, _script(names, share), 30)
    if ran.returncode != 0:
        return {}
    found: dict[str, FileState] = {}
    for part in ran.content.split(_MARK)[1:]:
        head, _, body = part.partition("\n")
        match = _HEAD.match(head)
        if match is None:
            continue
        kind, crc, size, lines, name = match.groups()
        if kind.startswith("file"):
            whole = int(size) <= share
            found[name] = FileState("file", int(crc), int(size), int(lines), body[:-1], whole)
        else:
            found[name] = FileState("missing" if kind == "missing" else "folder")
    return found


def _changes(before: FileState, now: FileState) -> str:
    """The lines of ``before``'s head that ``now`` removed (``-``) and added (``+``)."""
    diff = list(difflib.unified_diff(before.head.splitlines(), now.head.splitlines(), n=0))
    rows = [row[:WIDTH] for row in diff[2:] if not row.startswith("@@")]  # no headers
    more = ["  ..."] if len(rows) > CHANGES else []
    return "\n".join([*(f"  {row}" for row in rows[:CHANGES]), *more])


def _unparsable(name: str, now: FileState) -> str:
    """Why a whole (read to its end) ``.py``, ``.json`` or ``.ipynb`` file does not parse
    (as this Python reads it; parsing runs none of it), or ``""``."""
    if now.kind != "file" or not now.whole or "\x00" in now.head:
        return ""
    try:
        if name.endswith(".py"):
            with warnings.catch_warnings():  # e.g. an invalid escape: it still runs
                warnings.simplefilter("ignore")
                ast.parse(now.head, name)
        elif name.endswith((".json", ".ipynb")):
            json.loads(now.head)
    except SyntaxError as error:
        kind = type(error).__name__
        return f"{name} does not parse as Python: {kind}: {error.msg} (line {error.lineno})."
    except json.JSONDecodeError as error:
        return f"{name} is not valid JSON: {error}."
    except (RecursionError, MemoryError):
        return f"{name} is too deeply nested to parse."
    return ""


def _described(name: str, now: FileState, before: FileState | None) -> str:
    said = _said(name, now, before)
    why = _unparsable(name, now)
    return f"{said}\n  {why}" if why else said


def _said(name: str, now: FileState, before: FileState | None) -> str:
    if now.kind == "missing":
        gone = before is not None and before.kind != "missing"
        return f"{name}: does not exist{' (it did when the task began)' if gone else ''}."
    if now.kind == "folder":
        return f"{name}: a folder."
    count = "1 line" if now.lines == 1 else f"{now.lines} lines"
    if before is not None and before.kind == "file":
        if (before.checksum, before.size) == (now.checksum, now.size):
            return f"{name} ({now.size} bytes, {count}): unchanged since the task began."
        if "\x00" not in before.head + now.head and (changes := _changes(before, now)):
            return f"{name} ({now.size} bytes, {count}), changed since the task began:\n{changes}"
    if now.size == 0:
        return f"{name}: empty (0 bytes)."
    if "\x00" in now.head:
        return f"{name}: {now.size} bytes of binary data."
    shown = now.head.splitlines()[:LINES]
    text = "\n".join(f"  {line[:WIDTH]}" for line in shown)
    more = " (its first lines)" if now.lines > len(shown) or not now.whole else ""
    return f"{name} ({now.size} bytes, {count}){more}:\n{text}"


def files_now(env: Execute, task: str, before: Mapping[str, FileState] | None = None) -> str:
    """What the files ``task`` names hold in ``env`` now, one paragraph, or ``""`` when it
    names none or they cannot be read. With ``before`` (``read_files`` at the run's start),
    a file the agent left as it was is said unchanged, and one it changed shown as the
    lines it removed and added."""
    found = read_files(env, task)
    start = before or {}
    described = [_described(name, now, start.get(name)) for name, now in found.items()]
    if not described:
        return ""
    return "The files the task names, as they are now:\n" + "\n".join(described)
