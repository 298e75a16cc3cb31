"""The commands a prompt tells the model to run: in fenced shell blocks, in backticks,
and in "run X" sentences, each as the words of one simple command and its line.

Pure text work (no process is started): ``commands(text)`` finds them, ``simple(line)``
splits a shell line into simple commands without the shell's operators, redirections,
keywords and wrappers (``sudo``, ``timeout 5``, ``env A=1``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from four.parse._regex import fenced_blocks

SHELL_FENCES = frozenset(
    {"bash", "sh", "shell", "console", "zsh", "shell-session", "mswea_bash_command"}
)
"""Fenced blocks in these languages hold commands to run."""

_TICKS = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_RUN_BEFORE = re.compile(
    r"\b(?:run|runs|running|execute|executing|call|invoke|type|use|using|try)\s+"
    r"(?:the\s+command\s+|the\s+tests?\s+with\s+|it\s+with\s+)?$",
    re.I,
)
_RUN_BARE = re.compile(
    r"\b(?:run|execute)\s+((?:[A-Za-z0-9_./+-]+)(?:\s+-{1,2}[A-Za-z0-9][\w-]*(?:=\S+)?)*)", re.I
)
_OPERATORS = frozenset({"&&", "||", "|", "|&", ";", ";;", "&", "(", ")", "{", "}", "!"})
_REDIRECT = re.compile(r"^\d*(>>?|<<?<?|>&|<&|&>>?|>\|)$")
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until",
                       "time", "esac", "coproc"})  # fmt: skip
_WRAPPERS = frozenset({"sudo", "nohup", "exec", "command", "nice", "stdbuf", "builtin", "xargs"})
_PROGRAM = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+:-]*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command of a prompt: its words (program first), the line it is on, and
    whether the prompt certainly means it as a command (a shell block, "run X"): then a
    missing program is a finding; a maybe-command (a backtick span) is checked only when
    its program exists or it names flags."""

    words: tuple[str, ...]
    line: int
    certain: bool

    @property
    def program(self) -> str:
        return self.words[0]


def commands(text: str, first_line: int = 1) -> list[Command]:
    """Every command ``text`` tells the model to run, in order.

    >>> [c.words for c in commands("Run `git status -s`.\\n```bash\\nls -la | wc -l\\n```")]
    [('git', 'status', '-s'), ('ls', '-la'), ('wc', '-l')]
    """
    lines = text.split("\n")
    blocks = {block.line - 1: block for block in fenced_blocks(text, tuple(SHELL_FENCES))}
    found: list[Command] = []
    index = 0
    while index < len(lines):
        block = blocks.get(index)
        if block is None:
            found += _prose(lines[index], first_line + index)
            index += 1
            continue
        if block.closed and block.tag in SHELL_FENCES:  # an unclosed block is no command
            found += _block(list(enumerate(block.body.split("\n"), first_line + block.line)))
        index = block.last
    return found


def _block(block: list[tuple[int, str]]) -> list[Command]:
    """The commands of a shell block: continuation lines joined, heredoc bodies skipped,
    a console's ``$ `` prompt removed."""
    found: list[Command] = []
    pending: list[str] = []
    start = 0
    heredoc: str | None = None
    for number, raw in block:
        if heredoc is not None:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        line = raw[2:] if raw.startswith("$ ") else raw
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        logical = " ".join(pending)
        pending = []
        marker = re.search(r"<<-?\s*['\"]?([A-Za-z_][\w-]*)['\"]?", logical)
        if marker:
            heredoc = marker.group(1)
        found += [Command(words, start, True) for words in simple(logical)]
    return found


def _prose(line: str, number: int) -> list[Command]:
    found: list[Command] = []
    spans = list(_TICKS.finditer(line))
    for span in spans:
        certain = bool(_RUN_BEFORE.search(line[: span.start()]))
        found += [Command(words, number, certain) for words in simple(span.group(1))]
    if not spans:
        for bare in _RUN_BARE.finditer(line):
            found += [Command(words, number, False) for words in simple(bare.group(1))]
    return found


def simple(line: str) -> list[tuple[str, ...]]:
    """The simple commands of one shell line, each as its words from the program on.

    >>> simple("cd src && FOO=1 timeout 5 make -j2 test 2>&1 | tee log.txt")
    [('cd', 'src'), ('make', '-j2', 'test'), ('tee', 'log.txt')]
    """
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the words as they stand
        tokens = line.split()
    out: list[tuple[str, ...]] = []
    current: list[str] = []
    skip_next = False
    for token in tokens:
        if skip_next:
            skip_next = False
            continue
        if _REDIRECT.match(token):
            if current and current[-1].isdigit():  # 2>&1 comes as "2", ">&", "1"
                current.pop()
            skip_next = True
            continue
        if token in _OPERATORS or set(token) <= set(";&|()"):
            out.append(tuple(current))
            current = []
            continue
        current.append(token)
    out.append(tuple(current))
    return [words for words in (_program_first(w) for w in out) if words]


def _program_first(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words from the program on: assignments, keywords and wrappers removed; empty
    when there is no program to check (a loop header, a substitution)."""
    rest = list(words)
    while rest:
        head = rest[0]
        if _ASSIGNMENT.match(head) or head in _KEYWORDS:
            rest.pop(0)
        elif head in ("for", "case", "select", "function"):
            return ()
        elif head in _WRAPPERS or head == "env":
            rest.pop(0)
            while rest and (rest[0].startswith("-") or _ASSIGNMENT.match(rest[0])):
                rest.pop(0)
        elif head == "timeout":
            rest.pop(0)
            while rest and rest[0].startswith("-"):
                rest.pop(0)
            if rest:
                rest.pop(0)  # the duration
        else:
            break
    if not rest or not _PROGRAM.match(rest[0]) or rest[0].startswith("-"):
        return ()
    return tuple(rest)


def quoted(words: tuple[str, ...]) -> str:
    """The words as one shell line.

    >>> quoted(("grep", "-q", "a b"))
    "grep -q 'a b'"
    """
    return shlex.join(words)
