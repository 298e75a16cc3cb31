"""V1 for file edits: whole files and SEARCH/REPLACE blocks (the formats models handle best,
by Aider's measurements), plus shell commands; docs/domains.md has the format.

Nothing here knows a language: a path heads a block, whatever its tag. The parser reads
only the reply; ``apply_edits``, a pure function of the files' texts, is used by the
environment that owns the files.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TypeAlias

from returns.result import Failure, Result, Success

from four._checked import check_fields, checked
from four._grammar import WHITESPACE, Chars, Expr, Grammar, Lit, Ref, Rep, grammar_of
from four._types import Action, Checked, FormatError, Rejected, Reply
from four.execute._output import EXIT_SIGNAL
from four.parse._regex import (
    DEFAULT_TAGS,
    Block,
    Parsed,
    Rules,
    _command,
    _lowered,
    fenced_blocks,
    finish_rule,
    text_only,
)
from four.parse._shapes import (
    INDENT,
    NEWLINE,
    REST,
    alt,
    command,
    opt,
    prose,
    root,
    seq,
    shell_tag,
    spaced,
)

_SEARCH = re.compile(r"^\s*<{5,9} ?SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}\s*$")
_REPLACE = re.compile(r"^\s*>{5,9} ?REPLACE\s*$")
_PATH = re.compile(r"^[A-Za-z0-9_~+@-]?[A-Za-z0-9_.~+@/-]*$")
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_WORD = _ALNUM + "_"
_SHOWN = 30  # lines of a closest match shown at most
_NO_FILE = "has no path on the line before it, so it was not written anywhere (and nothing was run)"
FILE_TAGS = (
    "python", "c", "h", "go", "rust", "toml", "json", "yaml", "ini", "text", "markdown",
    "makefile", "roff", "man", "html", "css", "javascript", "typescript", "sql", "csv",
)  # fmt: skip
"""Tags a file's block may carry in the grammar (none of them a shell tag: a shell
block follows here-documents, so its end depends on its text)."""
MAX_EDITS = 4
"""Files a reply of the grammar writes or edits at most."""
_DECORATION = re.compile(r"^(?:#+\s*|[-*]\s+)?(?:(?:file|path|filename)\s*:\s*)?", re.I)


@dataclass(frozen=True, slots=True)
class WholeFile(Checked):
    """Write ``content`` as the whole of ``path`` (created if missing). ``line`` is the
    reply line of the block's opening fence."""

    path: str
    content: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class SearchReplace(Checked):
    """Replace the one run of lines equal to ``search`` in ``path`` with ``replace``.

    An empty ``search`` creates the file with ``replace`` or, if it exists, appends to it.
    """

    path: str
    search: str
    replace: str
    line: int = 0


FileEdit: TypeAlias = WholeFile | SearchReplace


@dataclass(frozen=True, slots=True)
class EditAction(Action):
    """One turn's file edits, to be applied all or none by an environment that owns files.

    ``command`` (made from the edits when not given) is a shell comment naming them, so
    an environment that knows no edits runs nothing and says so instead of running code
    as shell.

    >>> EditAction(edits=(WholeFile("a.py", "x = 1\\n"),)).command.splitlines()[0]
    '# write a.py (1 lines)'
    """

    command: str = ""
    call_id: str | None = None
    edits: tuple[FileEdit, ...] = ()

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        if not self.command:
            lines = [f"# {describe_edit(edit)}" for edit in self.edits]
            lines.append("echo 'this environment cannot apply file edits' >&2; exit 2")
            object.__setattr__(self, "command", "\n".join(lines))


@checked
def describe_edit(edit: FileEdit) -> str:
    """One line for an edit.

    >>> describe_edit(SearchReplace("tool.py", "a\\nb", "c"))
    'edit tool.py (SEARCH/REPLACE of 2 lines)'
    """
    if isinstance(edit, WholeFile):
        return f"write {edit.path} ({len(edit.content.splitlines())} lines)"
    if not edit.search:
        return f"write {edit.path} (SEARCH empty: create or append)"
    return f"edit {edit.path} (SEARCH/REPLACE of {len(edit.search.splitlines())} lines)"


def path_of(line: str) -> str | None:
    """The path a heading line names (``tool.py``, ``**src/a.py**``, ``# File: a.c:``), or None.

    A path has no spaces and holds a ``/`` or a ``.`` (``./Makefile``, not ``Makefile``),
    so a line of prose before a fence is never taken for one. ``./`` and doubled
    slashes are dropped, so one file has one name.

    >>> path_of("`src/tool.py`:"), path_of("Here is the fix:")
    ('src/tool.py', None)
    """
    text = line.strip().strip("*`'\"").strip()
    text = _DECORATION.sub("", text).strip().strip("*`'\"").rstrip(":").strip("*`'\"")
    if not text or not _PATH.match(text) or text.endswith("."):
        return None
    if "/" not in text and "." not in text.strip("."):
        return None
    return PurePosixPath(text).as_posix()  # ./a.py and a.py are one file ('..' stays)


@dataclass(frozen=True, slots=True)
class EditParse(Checked, Rules):
    """V1 for file edits and shell commands. See ``edit_parse``."""

    tags: tuple[str, ...] = DEFAULT_TAGS
    finish_on_plain_text: bool = False
    exit_signal: str = EXIT_SIGNAL

    def expected(self) -> str:
        return (
            "To write a whole file, put its path alone on a line, then a fenced block with "
            "the file's full content:\n\n"
            "hello.py\n```python\nprint('hello')\n```\n\n"
            "To change an existing file, put its path alone on a line, then a fenced block "
            "of SEARCH/REPLACE blocks; each SEARCH part must match exactly one run of "
            "whole lines of the file, as it is now:\n\n"
            "hello.py\n```python\n<<<<<<< SEARCH\nprint('hello')\n=======\n"
            "print('hello, world')\n>>>>>>> REPLACE\n```\n\n"
            "To run commands, use a ```bash block. A turn's edits are applied (all or "
            "none) before its commands run. "
            + finish_rule(self.exit_signal, self.finish_on_plain_text)
        )

    def grammar(self) -> Grammar:
        """The replies the built-in model is held to (see ``Constrained``; docs/search.md):
        sentences that end in a full stop (never taken for a path), up to four files, a
        ```bash block; or the exit signal.

        >>> [name for name, _ in edit_parse().grammar().rules][:5]
        ['root', 'file', 'path', 'code-line', 'sentence']
        """
        tags = {t.lower() for t in self.tags}
        shell = shell_tag(self.tags)
        runs = () if shell is None else (opt(seq(NEWLINE, Ref("command"))),)
        files = seq(Ref("file"), Rep(seq(NEWLINE, Ref("file")), 0, MAX_EDITS - 1), *runs)
        end = alt(files, Ref("command")) if runs else files
        tag = opt(alt(*(Lit(t) for t in FILE_TAGS if t not in tags)))
        segment = seq(Chars(_WORD), Rep(Chars(_WORD + "-")))
        folders = Rep(seq(segment, Lit("/")))
        code = Chars(WHITESPACE + "`<=>", negated=True)  # no fence, no SEARCH/REPLACE mark
        doctest = seq(Lit(">>>"), opt(seq(Chars(" \t"), REST)))
        lines = spaced(Ref("code-line"))
        edit = seq(
            Lit("<<<<<<< SEARCH\n"), lines, Lit("=======\n"), lines, Lit(">>>>>>> REPLACE\n")
        )
        rules: list[tuple[str, Expr]] = [
            root(self.exit_signal, end, line="sentence"),
            ("file", seq(
                Ref("path"), Lit("\n```"), tag, NEWLINE, alt(Rep(edit, 1), lines), Lit("```")
            )),
            ("path", alt(
                seq(folders, segment, Lit("."), Rep(Chars(_ALNUM), 1)),
                seq(Lit("./"), folders, segment),
            )),
            ("code-line", seq(INDENT, alt(seq(code, REST), doctest), NEWLINE)),
            *prose("sentence", end="."),
        ]  # fmt: skip
        if shell is not None:
            rules += command(shell, self.exit_signal)
        return grammar_of(*rules)

    @checked
    def __call__(self, reply: Reply, /) -> Parsed:
        return text_only(
            self._read(reply),
            reply,
            "Tool calls are not run here: write file edits and ```bash blocks in the text "
            "of your reply.",
        )

    def _read(self, reply: Reply) -> Parsed:
        content = reply.content
        tags = _lowered(tuple(self.tags))
        blocks = fenced_blocks(content, tags)
        lines = content.replace("\r\n", "\n").split("\n")
        edits: list[FileEdit] = []
        commands: list[str] = []
        previous_end = 0  # the last reply line used by an earlier block
        for block in blocks:
            path = _heading(lines, block, previous_end)
            previous_end = block.last
            if not block.closed:
                return self.error(
                    f"The block that opens on line {block.line} is never closed "
                    "(no line with only ``` after it), so nothing was done."
                )
            body_lines = block.body.split("\n")
            if any(_SEARCH.match(line) for line in body_lines):
                parsed = _search_replace(body_lines, path, block.line)
                if isinstance(parsed, str):
                    return self.error(parsed)
                edits.extend(parsed)
            elif path is not None:
                newline = "\n" if block.body and not block.body.endswith("\n") else ""
                edits.append(WholeFile(path, block.body + newline, block.line))
            elif block.tag in tags and block.body.strip():
                commands.append(_command(block))
            elif block.tag in tags:
                return self.error(f"The ```{block.tag} block on line {block.line} is empty.")
        actions: list[Action | Rejected] = [EditAction(edits=tuple(edits))] if edits else []
        actions.extend(Action(command) for command in commands)
        if actions:
            return Success(actions)
        problem = "Your reply has no file edit and no ```bash block, so nothing was done."
        if first := next((b for b in blocks if b.body.strip()), None):  # a block left unused
            problem = f"The ```{first.tag or ''} block on line {first.line} {_NO_FILE}."
        return self.no_action(reply, blocks, problem, _NO_FILE)


def _heading(lines: Sequence[str], block: Block, previous_end: int) -> str | None:
    """The path heading ``block``: in its info string, or on the line before its fence
    (one blank line between is allowed), never inside an earlier block."""
    info = lines[block.line - 1].strip().lstrip("`~").split()
    for word in info:
        for part in word.split(":"):
            if (path := path_of(part)) is not None and not part.startswith("."):
                return path
    index = block.line - 2  # 0-based index of the line before the fence
    if index >= 0 and not lines[index].strip():
        index -= 1
    return path_of(lines[index]) if index >= previous_end else None  # previous_end >= 0


def _search_replace(
    lines: Sequence[str], path: str | None, fence_line: int
) -> list[FileEdit] | str:
    """The SEARCH/REPLACE blocks of a fenced block's body, or what is wrong with them."""
    edits: list[FileEdit] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        here = fence_line + 1 + index  # the line's number in the reply
        if not _SEARCH.match(line):
            if line.strip() and (named := path_of(line)) is not None:
                path = named  # a path line inside the fence, as some models write it
            elif line.strip():
                return (
                    f"Line {here} is outside any SEARCH/REPLACE block: {line.strip()[:80]!r}. "
                    "Inside the fence, write only SEARCH/REPLACE blocks."
                )
            index += 1
            continue
        divider = _find(lines, index + 1, _DIVIDER)
        end = _find(lines, (divider or index) + 1, _REPLACE) if divider is not None else None
        if divider is None or end is None:
            missing = "=======" if divider is None else ">>>>>>> REPLACE"
            return f"The SEARCH block on line {here} has no {missing} line after it."
        if path is None:
            return (
                f"The SEARCH block on line {here} names no file: put the file's path alone "
                "on the line before the fence."
            )
        search = "\n".join(lines[index + 1 : divider])
        replace = "\n".join(lines[divider + 1 : end])
        edits.append(SearchReplace(path, search, replace, here))
        index = end + 1
    return edits


def _find(lines: Sequence[str], start: int, marker: re.Pattern[str]) -> int | None:
    for index in range(start, len(lines)):
        if marker.match(lines[index]):
            return index
        if _SEARCH.match(lines[index]):
            return None
    return None


@checked
def edit_parse(
    tags: Sequence[str] = DEFAULT_TAGS,
    *,
    finish_on_plain_text: bool = False,
    exit_signal: str = EXIT_SIGNAL,
) -> EditParse:
    """V1 that reads file edits (whole files, SEARCH/REPLACE blocks headed by their
    path) and shell commands; docs/domains.md has the rules.

    >>> from four import Assistant
    >>> reply = Assistant("a.py\\n```python\\n<<<<<<< SEARCH\\nx = 1\\n=======\\nx = 2\\n>>>>>>> REPLACE\\n```")
    >>> edit_parse()(reply).unwrap()[0].edits
    (SearchReplace(path='a.py', search='x = 1', replace='x = 2', line=3),)
    """
    return EditParse(tuple(tags), finish_on_plain_text, exit_signal)


# --- applying edits to texts (pure) ---------------------------------------------------


@checked
def apply_edits(
    edits: Sequence[FileEdit], read: Callable[[str], str | None]
) -> Result[dict[str, str], FormatError]:
    """The new text of every file ``edits`` touch (``read(path)``: its text, or None if
    it does not exist), or a ``FormatError`` naming each edit that does not apply (a
    SEARCH found nowhere or more than once, with the closest match); then none applies.

    >>> apply_edits([SearchReplace("a.py", "x = 1", "x = 2")], {"a.py": "x = 1\\n"}.get).unwrap()
    {'a.py': 'x = 2\\n'}
    """
    texts: dict[str, str] = {}
    problems: list[str] = []
    for number, edit in enumerate(edits, 1):
        if edit.path not in texts:
            current = read(edit.path)
            if current is None and isinstance(edit, SearchReplace) and edit.search.strip():
                problems.append(f"Edit {number} ({edit.path}): the file does not exist.")
                continue
            texts[edit.path] = current or ""
        if isinstance(edit, WholeFile):
            texts[edit.path] = edit.content
            continue
        changed, problem = _replace(texts[edit.path], edit)
        if changed is None:
            where = f"{edit.path}, SEARCH on reply line {edit.line}"
            problems.append(f"Edit {number} ({where}): {problem}")
        else:
            texts[edit.path] = changed
    if problems:
        return Failure(FormatError("No file was changed.\n" + "\n".join(problems)))
    return Success(texts)


def _replace(text: str, edit: SearchReplace) -> tuple[str, None] | tuple[None, str]:
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline) if text else []
    ends_open = bool(text) and not text.endswith(newline)  # the last line has no newline
    if text and not ends_open:
        lines.pop()
    replace = edit.replace.split("\n") if edit.replace else []
    if not edit.search.strip():
        joined = newline.join([*lines, *replace])
        return joined + (newline if lines or replace else ""), None
    search = edit.search.split("\n")
    for same in _MATCHERS:
        found = [
            (start, shift)
            for start in range(len(lines) - len(search) + 1)
            if (shift := same(lines[start : start + len(search)], search)) is not None
        ]
        if len(found) > 1:
            where = ", ".join(_span(start, len(search)) for start, _ in found)
            return None, (
                f"the SEARCH text matches {len(found)} places (lines {where}); "
                "add lines around it so that it matches one."
            )
        if found:
            ((start, (add, remove)),) = found
            shifted = [
                add + line.removeprefix(remove) if line.strip() else line for line in replace
            ]
            lines[start : start + len(search)] = shifted
            return newline.join(lines) + ("" if ends_open else newline), None
    return None, "the SEARCH text is not in the file." + _closest(lines, search)


def _span(start: int, length: int) -> str:
    return f"{start + 1}-{start + length}" if length > 1 else str(start + 1)


_Shift: TypeAlias = tuple[str, str]
"""Indentation to add to, and to remove from, every REPLACE line."""
_NONE: _Shift = ("", "")


def _exact(window: Sequence[str], search: Sequence[str]) -> _Shift | None:
    return _NONE if list(window) == list(search) else None


def _trailing(window: Sequence[str], search: Sequence[str]) -> _Shift | None:
    return _NONE if [a.rstrip() for a in window] == [b.rstrip() for b in search] else None


def _indented(window: Sequence[str], search: Sequence[str]) -> _Shift | None:
    """The same lines but for one indentation added (or removed) on every non-blank line."""
    shift: _Shift | None = None
    for have, want in zip(window, search, strict=True):
        have, want = have.rstrip(), want.rstrip()
        if not want or not have:
            if want or have:
                return None
            continue
        if have.endswith(want):
            this = (have[: len(have) - len(want)], "")
        elif want.endswith(have):
            this = ("", want[: len(want) - len(have)])
        else:
            return None
        if (this[0] + this[1]).strip():  # only whitespace may differ
            return None
        if shift is None:
            shift = this
        elif this != shift:
            return None
    return shift


_MATCHERS = (_exact, _trailing, _indented)


def _alike(window: Sequence[str], search: Sequence[str]) -> float:
    """How alike two runs of lines are: the mean likeness of their lines, pair by pair
    (per line, so the cost stays linear in the lines)."""
    pairs = zip(window, search, strict=False)
    return sum(difflib.SequenceMatcher(None, a, b).ratio() for a, b in pairs) / len(search)


def _closest(lines: Sequence[str], search: Sequence[str]) -> str:
    """The run of lines most like ``search``, with its line numbers, for the model: only the
    few places where lines of ``search`` occur (stripped) at their offset, else where its
    first line nearly occurs, are compared line by line (a long SEARCH in a long file is cheap)."""
    if not lines:
        return " The file is empty."
    size = min(len(search), len(lines))
    last = len(lines) - size
    at: dict[str, list[int]] = {}
    for index, line in enumerate(lines):
        at.setdefault(line.strip(), []).append(index)
    votes: Counter[int] = Counter()
    for offset, want in enumerate(search):
        if want.strip():
            places = at.get(want.strip(), [])[:200]
            votes.update(i - offset for i in places if 0 <= i - offset <= last)
    starts = [start for start, _ in votes.most_common(5)]
    if not starts:
        offset, first = next(((o, w.strip()) for o, w in enumerate(search) if w.strip()), (0, ""))
        near = difflib.get_close_matches(first, list(at), n=3, cutoff=0.5)
        starts = [min(max(i - offset, 0), last) for key in near for i in at[key][:5]]
    alike = ((_alike(lines[start : start + size], search), start) for start in starts)
    best, best_start = max(alike, key=lambda pair: pair[0], default=(0.0, 0))
    if best < 0.5:
        return ""
    shown = [
        f"{best_start + 1 + offset:>5} | {line}"
        for offset, line in enumerate(lines[best_start : best_start + min(size, _SHOWN)])
    ]
    if size > _SHOWN:
        shown.append(f"      ... ({size - _SHOWN} more lines)")
    where = "lines" if size > 1 else "line"
    span = _span(best_start, size)
    return f" The closest match is {where} {span} ({best:.0%} alike):\n" + "\n".join(shown)
