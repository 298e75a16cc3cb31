"""After a NO, the files the task names as they are now: missing, empty, or their first lines.

A small model writes its result with ``command > file``, sees no output, submits, and is
told the check failed; it never reads the file and runs the same command again. Shown
what the file holds (nothing, ``20 story.txt``, a JSON dump), it fixes it. This is the
agent's own work, not the check's: it is shown at every feedback level.
"""

from __future__ import annotations

import re
import shlex

from four._types import Execute
from four.checks._shell import run_command

NAMES = 4  # files shown at most
LINES = 6  # lines of each
WIDTH = 160  # characters of a line
READ = 2000  # bytes read of each file

_NAME = re.compile(r"(?<![\w@/.:~-])((?:[\w-]+/)*[\w-][\w.-]*\.[A-Za-z]\w{0,7})(?![\w/-])")
_MARK = "@@four-file "
_HEAD = re.compile(r"^(missing|folder|file (\d+) (\d+)) (.+)$")


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


def _script(names: tuple[str, ...]) -> str:
    """One shell command: per name a marker line (its kind, size and line count), then
    the first bytes of a file."""
    quoted = " ".join(shlex.quote(n) for n in names)
    say = "printf '%s%s\\n' " + shlex.quote(_MARK)
    return (
        f"for f in {quoted}; do "
        f'if [ -d "$f" ]; then {say} "folder $f"; '
        f'elif [ ! -e "$f" ]; then {say} "missing $f"; '
        f'else {say} "file $(wc -c < "$f") $(wc -l < "$f") $f"; head -c {READ} "$f"; echo; '
        "fi; done"
    )


def _described(head: str, body: str) -> str:
    match = _HEAD.match(head)
    if match is None:
        return ""
    kind, size, lines, name = match.group(1), match.group(2), match.group(3), match.group(4)
    if kind == "missing":
        return f"{name}: does not exist."
    if kind == "folder":
        return f"{name}: a folder."
    if size == "0":
        return f"{name}: empty (0 bytes)."
    if "\x00" in body:
        return f"{name}: {size} bytes of binary data."
    shown = body.splitlines()[:LINES]
    text = "\n".join(f"  {line[:WIDTH]}" for line in shown)
    more = " (its first lines)" if int(lines) > len(shown) or int(size) > READ else ""
    count = "1 line" if lines == "1" else f"{lines} lines"
    return f"{name} ({size} bytes, {count}){more}:\n{text}"


def files_now(env: Execute, task: str) -> str:
    """What the files ``task`` names hold in ``env`` now, one paragraph, or ``""`` when it
    names none or they cannot be read (an environment without a shell)."""
    names = named_files(task)[:NAMES]
    if not names:
        return ""
    ran = run_command(env, _script(names), 30)
    if ran.returncode != 0:
        return ""
    parts = ran.output.split(_MARK)[1:]
    described = []
    for part in parts:
        head, _, body = part.partition("\n")
        if text := _described(head, body.removesuffix("\n")):
            described.append(text)
    if not described:
        return ""
    return "The files the task names, as they are now:\n" + "\n".join(described)
