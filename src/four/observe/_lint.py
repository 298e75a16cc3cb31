"""``four lint``: a prompt's commands against the real interfaces of the tools it names.

``lint_text(text, source, tools)`` finds every command the text tells the model to run
(``four.observe._commands``) and checks each: the program exists in the run's
environment, and every subcommand and option it uses is one the tool really has
(``four.observe._interface``: argparse introspected for Python tools, four's own
included; ``--help`` parsed for the rest). A finding names the file, the line and the
nearest real names. A tool whose interface cannot be read is a note, not a finding.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from four._checked import Checked, checked
from four.observe._check import Check
from four.observe._commands import Command, commands
from four.observe._interface import Interface, Toolbox

Kind: TypeAlias = Literal["missing", "subcommand", "option", "unread"]

BUILTINS = frozenset(
    [
        "cd",
        "echo",
        "printf",
        "test",
        "[",
        "[[",
        "true",
        "false",
        "export",
        "set",
        "unset",
        "source",
        ".",
        "read",
        "exit",
        "return",
        "local",
        "declare",
        "typeset",
        "alias",
        "eval",
        "shift",
        "wait",
        "trap",
        "pushd",
        "popd",
        "dirs",
        "type",
        "hash",
        "ulimit",
        "umask",
        "let",
        "readonly",
        "break",
        "continue",
        "getopts",
        "jobs",
        "fg",
        "bg",
        "disown",
        "kill",
        "history",
        "shopt",
    ]
)
"""Shell builtins: always there, and their options are the shell's business."""

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_NUMBER = re.compile(r"^-\d+$")
_SUBPROGRAM = frozenset({"-exec", "-execdir", "-ok", "-okdir"})  # find: another program's words
MAX_PROMPT = 4 << 20
"""A prompt larger than this (bytes) is refused: no prompt that size fits a model."""


@dataclass(frozen=True, slots=True)
class Finding(Checked):
    """One problem with a command of a prompt (or, ``unread``, a tool not checked)."""

    source: str
    line: int
    kind: Kind
    command: str
    word: str
    nearest: tuple[str, ...] = ()
    detail: str = ""

    def __str__(self) -> str:
        near = f" (nearest: {', '.join(self.nearest)})" if self.nearest else ""
        what = {
            "missing": f"`{self.word}` is not found where the run's commands run",
            "subcommand": f"`{self.command}` has no subcommand `{self.word}`{near}",
            "option": f"`{self.command}` has no option `{self.word}`{near}",
            "unread": f"`{self.word}` not checked: {self.detail}",
        }[self.kind]
        return f"{self.source}:{self.line}: {what}"

    @property
    def problem(self) -> bool:
        """Whether it makes the prompt fail lint (``unread`` does not)."""
        return self.kind != "unread"


@checked
def lint_text(
    text: str,
    source: str,
    tools: Toolbox,
    *,
    only: Iterable[str] = (),
    first_line: int = 1,
) -> list[Finding]:
    """The findings of every command ``text`` tells the model to run; ``only`` limits
    them to these programs (``four lint --tool``).

    Example (it asks the machine: tar's own ``--help``)::

        with toolbox("local", ".") as tools:
            [str(f) for f in lint_text("```bash\ntar --creat -f x d\n```", "p.md", tools)]
        # ['p.md:2: `tar` has no option `--creat` (nearest: --create, --get, --format)']
    """
    wanted = frozenset(only)
    found: list[Finding] = []
    for command in commands(text, first_line):
        if wanted and Path(command.program).name not in wanted:
            continue
        found += lint_command(command, source, tools)
    return found


def lint_command(command: Command, source: str, tools: Toolbox) -> list[Finding]:
    """The findings of one command (none when it is a maybe-command whose program is
    not there and that names no option)."""
    words = command.words
    program = words[0]
    if program in BUILTINS or "$" in program:
        return []
    if tools.where(program) is None:
        if "/" in program and not program.startswith("/"):
            return []  # ./tool: what the agent is to build, not there at the start
        flagged = any(w.startswith("-") for w in words[1:])
        if command.certain or flagged:
            return [Finding(source, command.line, "missing", program, program)]
        return []
    tool, rest = _tool(words)
    if tool is None:
        return []
    shown = " ".join(tool)
    interface = tools.interface(tool)
    if isinstance(interface, str):
        return [Finding(source, command.line, "unread", shown, shown, detail=interface)]
    return _walk(command, source, tools, tool, interface, rest)


def _tool(words: tuple[str, ...]) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """The tool a command runs and the words it is given: ``python -m pytest -q`` is
    the tool ``python -m pytest``; ``python script.py`` the script; ``python -c`` none."""
    program = words[0]
    if not _PYTHON.match(Path(program).name):
        return (program,), words[1:]
    rest = list(words[1:])
    while rest:
        word = rest.pop(0)
        if word == "-m" and rest:
            return (program, "-m", rest[0]), tuple(rest[1:])
        if word in ("-c", "-") or word.startswith("-c"):
            return None, ()
        if not word.startswith("-"):
            return (program, word), tuple(rest)
        if word in ("-W", "-X", "-Q"):
            rest = rest[1:]
    return None, ()


def _walk(
    command: Command,
    source: str,
    tools: Toolbox,
    tool: tuple[str, ...],
    top: Interface,
    words: Sequence[str],
) -> list[Finding]:
    found: list[Finding] = []
    shown = " ".join(tool)
    here, chosen = top, False
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word == "--" or word in _SUBPROGRAM:
            break
        if word.startswith("-") and len(word) > 1 and not _NUMBER.match(word):
            if "$" in word or "*" in word:
                continue
            name = word.split("=", 1)[0]
            known = here.knows(name) or (chosen and top.knows(name))
            if not known and here.bundles and not name.startswith("--") and len(name) > 2:
                known, skip = _bundle(here, name)
            elif known and "=" not in word:
                skip = here.takes_value(name) or (chosen and top.takes_value(name))
            if not known:
                real = sorted(here.options | (top.options if chosen else frozenset()))
                near = tuple(difflib.get_close_matches(name, real, n=3, cutoff=0.6))
                found.append(Finding(source, command.line, "option", shown, word, near))
            continue
        if here.subcommands and not chosen:
            if word not in here.subcommands:
                near = tuple(difflib.get_close_matches(word, sorted(here.subcommands), 3, 0.6))
                if near or command.certain:  # `go 1.19` in backticks: no command at all
                    found.append(Finding(source, command.line, "subcommand", shown, word, near))
                return found
            sub = here.subcommands[word]
            read = sub if _filled(sub) else tools.subcommand(tool, word)
            shown = f"{shown} {word}"
            if isinstance(read, str):
                found.append(Finding(source, command.line, "unread", shown, shown, detail=read))
                return found
            assert read is not None
            here, chosen = read, not read.subcommands
            if read.subcommands:  # a nested group: its own subcommand comes next
                top = read
            continue
        if here.source == "argparse" and not here.subcommands:
            chosen = True
    return found


def _filled(sub: Interface | None) -> bool:
    """A subcommand whose interface is known (argparse filled it in)."""
    return sub is not None and bool(sub.options or sub.subcommands)


def _bundle(interface: Interface, word: str) -> tuple[bool, bool]:
    """Whether ``-abc`` is bundled single-letter options (the one that takes a value
    ends the bundle; so does a digit or a sign, a joined value: ``-j2``, ``-F:``), and
    whether the next word is that value."""
    for index, letter in enumerate(word[1:], 1):
        if index > 1 and not letter.isalpha():  # -j2, -F:, -d, : the value of the one before
            return True, False
        flag = f"-{letter}"
        if flag not in interface.options:
            return False, False
        if flag in interface.valued:
            return True, index == len(word) - 1
    return True, False


# --- reading prompts --------------------------------------------------------------------


class PromptError(ValueError):
    """A prompt that cannot be linted: its one-line message says why."""


def read_prompt(path: str | os.PathLike[str]) -> str:
    """A prompt file's text: a regular file, at most ``MAX_PROMPT`` bytes, UTF-8 text
    (a NUL byte means it is binary). Anything else raises ``PromptError``."""
    where = Path(path)
    try:
        if not where.is_file():
            kind = "a folder" if where.is_dir() else "not a regular file"
            raise PromptError(f"{path}: {kind}" if where.exists() else f"{path}: no such file")
        size = where.stat().st_size
        if size > MAX_PROMPT:
            raise PromptError(
                f"{path}: {size:,} bytes, more than {MAX_PROMPT >> 20} MiB: not a prompt"
            )
        data = where.read_bytes()
    except OSError as exc:
        raise PromptError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    return decode_prompt(data, str(path))


def decode_prompt(data: bytes, where: str) -> str:
    """``data`` as text, or ``PromptError`` for bytes that are no prompt.

    >>> decode_prompt(b"\\x00\\x01", "x.bin")
    Traceback (most recent call last):
    ...
    four.observe._lint.PromptError: x.bin: a binary file (a NUL byte at offset 0), not a prompt
    """
    if b"\0" in data:
        at = data.index(b"\0")
        raise PromptError(f"{where}: a binary file (a NUL byte at offset {at}), not a prompt")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(f"{where}: not UTF-8 text (byte {exc.start}), not a prompt") from None


@checked
def lint_prompt(
    path: str | os.PathLike[str], tools: Toolbox, only: Iterable[str] = ()
) -> list[Finding]:
    """The findings of a prompt file: a system prompt or task (text), or a tasks file
    (``.jsonl``: each line's ``task`` and its ``check`` command, at that line)."""
    text = read_prompt(path)
    source = str(path)
    if not str(path).endswith(".jsonl"):
        return lint_text(text, source, tools, only=only)
    found: list[Finding] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise PromptError(f"{path}:{number}: not JSON") from None
        if not isinstance(item, dict):
            raise PromptError(f"{path}:{number}: not a JSON object")
        task, check = item.get("task"), item.get("check")
        if isinstance(task, str):
            found += _at_line(lint_text(task, source, tools, only=only), number)
        if isinstance(check, str):
            fenced = f"```bash\n{check}\n```"
            found += _at_line(lint_text(fenced, source, tools, only=only), number)
    return found


def _at_line(findings: list[Finding], number: int) -> list[Finding]:
    from dataclasses import replace

    return [replace(f, line=number) for f in findings]


def prompt_check(system: str, task: str, tools: Toolbox) -> Check:
    """``four doctor``'s row for the prompt: the system prompt's and the task's commands
    against the tools' real interfaces, where the run's commands run."""
    found = lint_text(system, "system prompt", tools) + lint_text(task, "task", tools)
    problems = [f for f in found if f.problem]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return Check("prompt", "NO-GO", f"{problems[0]}{more}", "fix the prompt: four lint FILE")
    unread = [f for f in found if not f.problem]
    if unread:
        return Check("prompt", "WARN", str(unread[0]), "check that tool's options by hand")
    count = len(commands(system)) + len(commands(task))
    return Check("prompt", "GO", f"{count} commands of the prompt match their tools")
