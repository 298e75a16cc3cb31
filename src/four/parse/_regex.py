"""V1 for text replies: shell commands in fenced code blocks, found by a line scanner (not
one regex) that follows a shell block's here-documents (the rules: docs/components.md).
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import checked
from four._grammar import Grammar, Ref, grammar_of
from four._types import Action, Checked, FormatError, Rejected, Reply, Submitted
from four.execute._output import EXIT_SIGNAL
from four.parse._shapes import command, prose, root, shell_tag

DEFAULT_TAGS: tuple[str, ...] = ("mswea_bash_command", "bash", "sh", "shell", "console", "zsh")
"""Info-string tags whose blocks are run (compared in lower case)."""

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
# `<<` or `<<-` then a word, optionally quoted; `<<<` (a here-string) is not a heredoc.
_HEREDOC = re.compile(
    r"(?<!<)<<(?!<)(?P<dash>-?)[ \t]*"
    r"(?:'(?P<single>[^'\n]+)'|\"(?P<double>[^\"\n]+)\"|\\?(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
_CODE = re.compile(r"<code>(.*?)</code>", re.DOTALL | re.IGNORECASE)
Parsed: TypeAlias = Result[Sequence[Action | Rejected], FormatError | Submitted]
"""What a parser makes of a reply (``four.types.Parse``)."""


@dataclass(frozen=True, slots=True)
class Block(Checked):
    """One fenced block: its tag (lower case, "" if none), body, first and last line (1-based).

    ``last`` is the closing fence's line, or the reply's last line if the block is open.
    """

    tag: str
    body: str
    line: int
    last: int
    closed: bool = True


@checked
def fenced_blocks(text: str, shell_tags: Sequence[str] = DEFAULT_TAGS) -> list[Block]:
    """The fenced blocks of ``text``, in order; a block left open runs to the end.

    >>> [b.tag for b in fenced_blocks("a\\n```python\\nx\\n```\\nb\\n```bash\\nls\\n```")]
    ['python', 'bash']
    """
    lines = text.split("\n")
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = _OPEN.match(lines[index])
        # A backtick fence's info string cannot hold backticks (```x``` is inline code).
        if opened is None or (opened["fence"][0] == "`" and "`" in opened["info"]):
            index += 1
            continue
        fence, indent = opened["fence"], len(opened["indent"].expandtabs(4))
        words = opened["info"].strip().strip("{}").split()
        tag = words[0].lower().lstrip(".") if words else ""
        start = index + 1
        close = _closing(lines, start, fence, heredocs=tag in shell_tags)
        if close is None and tag in shell_tags:
            # An unterminated heredoc (or `x << y` arithmetic): scan as plain markdown.
            close = _closing(lines, start, fence, heredocs=False)
        end = len(lines) if close is None else close
        inside = lines[start:end]
        if indent:  # an indented fence indents its body: up to ``indent`` spaces go
            inside = [line[min(indent, len(line) - len(line.lstrip(" "))) :] for line in inside]
        body = "\n".join(inside)
        blocks.append(Block(tag, body, index + 1, min(end + 1, len(lines)), close is not None))
        index = end + 1
    return blocks


def _closing(lines: Sequence[str], start: int, fence: str, heredocs: bool) -> int | None:
    pending: list[tuple[str, bool]] = []  # heredoc delimiters still open, tab-stripping
    for index in range(start, len(lines)):
        line = lines[index]
        if pending:
            delimiter, strip_tabs = pending[0]
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                pending.pop(0)
            continue
        stripped = line.strip()
        if len(stripped) >= len(fence) and stripped == fence[0] * len(stripped):
            return index
        if heredocs and "<<" in line:
            for m in _HEREDOC.finditer(_without_comment(line)):
                word = m["single"] or m["double"] or m["bare"]
                pending.append((word, m["dash"] == "-"))
    return None


def _without_comment(line: str) -> str:
    """The line up to an unquoted ``#`` that starts a comment (good enough for heredocs)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;"):
            return line[:i]
    return line


def _command(block: Block) -> str:
    """A shell block's commands; a ``console`` block shows a session: only its ``$ ``
    prompt lines run, if it has any."""
    lines = block.body.splitlines() if block.tag == "console" else []
    prompts = [line.lstrip()[2:] for line in lines if line.lstrip().startswith("$ ")]
    return ("\n".join(prompts) if prompts else block.body).strip("\n")


def finish_rule(exit_signal: str, finish_on_plain_text: bool) -> str:
    """How to finish, in the words the model is given."""
    text = (
        f"To finish, run a command whose output starts with the line {exit_signal} "
        f"followed by your final output (echo {exit_signal} && cat result.txt), "
        f"or reply with {exit_signal} alone on a line"
    )
    if finish_on_plain_text:
        return text + ", or reply with your final answer as plain text and no code block."
    return text + "."


class Rules:
    """What the parsers share: a format error's feedback ends with the reply format
    (``expected``), and a reply with no action follows the completion rule."""

    __slots__ = ()
    exit_signal: str
    finish_on_plain_text: bool = False

    def expected(self) -> str:
        """The reply format, as the model is told it after a format error."""
        raise NotImplementedError

    def error(self, problem: str) -> Failure[FormatError]:
        return Failure(FormatError(f"{problem}\n\n{self.expected()}"))

    def no_action(self, reply: Reply, blocks: Sequence[Block], problem: str, why: str) -> Parsed:
        """The completion rule for a reply with no action: the feedback is ``problem`` (or
        "empty" for a blank reply). The first of ``blocks`` that holds something was not
        applied (``why`` says why): a reply that submits beside it is a format error, or
        the model would believe its work done."""
        content, signal = reply.content, self.exit_signal
        lines = content.splitlines()  # a line that is the exit signal submits the others
        at = [i for i, line in enumerate(lines) if line.strip().strip("`").strip() == signal]
        submitted = (
            "\n".join(lines[: at[0]] + lines[at[0] + 1 :]).strip() if signal and at else None
        )
        kept = next((b for b in blocks if b.body.strip()), None)
        if submitted is not None and kept is not None:
            return self.error(
                f"Your reply submits (the line {signal}) but also holds a ```{kept.tag} "
                f"block on line {kept.line}, which {why}: nothing was submitted. If that "
                "block is work still to do, send it in a form that is applied and look at "
                "the result; finish in a reply of its own, with no code block."
            )
        if submitted is not None:
            return Failure(Submitted(submitted))
        plain = self.finish_on_plain_text and not reply.tool_calls  # a tool call is no answer
        if plain and content.strip() and not blocks:
            return Failure(Submitted(content.strip()))
        if not content.strip():
            problem = "Your reply was empty, so nothing was run."
        return self.error(problem)


def text_only(read: Parsed, reply: Reply, why: str) -> Parsed:
    """``read`` of a parser of text, each tool call of ``reply`` rejected with ``why``: a
    format error answers every call, a submission ends the turn."""
    if not reply.tool_calls or not isinstance(read, Success):
        return read
    return Success([*read.unwrap(), *(Rejected(c.id, why) for c in reply.tool_calls)])


@dataclass(frozen=True, slots=True)
class RegexParse(Checked, Rules):
    """V1 for text replies. See ``regex_parse``."""

    tags: tuple[str, ...] = DEFAULT_TAGS
    code_tags: bool = False
    one_action: bool = False
    finish_on_plain_text: bool = False
    exit_signal: str = EXIT_SIGNAL

    def _tag(self) -> str:
        """The tag the model is asked to use."""
        return "bash" if "bash" in self.tags or not self.tags else self.tags[0]

    def expected(self) -> str:
        tag = self._tag()
        count = "exactly one fenced block" if self.one_action else "one or more fenced blocks"
        return (
            f"Reply with {count} tagged {tag}, holding the shell commands to run, e.g.\n\n"
            f"```{tag}\nls -la\n```\n\n"
            "Commands run with bash; text outside the block is not run. "
            + finish_rule(self.exit_signal, self.finish_on_plain_text)
        )

    def grammar(self) -> Grammar:
        """The replies the built-in model is held to (see ``Constrained``; docs/search.md).

        >>> print(regex_parse().grammar().gbnf().splitlines()[0])
        root ::= prose{1,3} (command | "COMPLETE\\x5FTASK\\x5FAND\\x5FSUBMIT\\x5FFINAL\\x5FOUTPUT")
        """
        tag = shell_tag(self.tags)
        if tag is None:
            return grammar_of(root(self.exit_signal), *prose())
        commands = command(tag, self.exit_signal)
        return grammar_of(root(self.exit_signal, Ref("command")), *prose(), *commands)

    def _misused_signal(self, block: Block, command: str, alone: bool) -> str | None:
        """Feedback for a block that runs the exit signal as a command, echoes it after
        other commands (no submission: small models then believe they are done) or finishes
        beside other blocks, before their output is seen; None for any other block."""
        signal = self.exit_signal
        if not signal or signal not in command:
            return None
        lines = [line.strip() for line in command.splitlines() if line.strip()]
        echoes = {f"echo {signal}", f'echo "{signal}"', f"echo '{signal}'"}
        late = [i for i, line in enumerate(lines) if line in echoes and i > 0]
        where = f"Your ```{block.tag} block on line {block.line}"
        finish = f"```{self._tag()}\necho {signal}\n```"
        if "<<" in command or (signal not in lines and not late):
            if alone or lines[0].removeprefix("echo ").strip("'\" ") != signal:
                return None
            return (
                f"{where} finishes the task in the same reply as other commands, before you "
                "have seen their output, so nothing was run. Send the other commands without "
                f"it and look at their output; finish in a reply of its own, holding only "
                f"this block\n\n{finish}"
            )
        if lines == [signal]:
            return (
                f"{where} runs {signal} as a command; bash has no such command (exit 127), "
                f"so nothing was run. To finish, print it with echo: reply with only this "
                f"block\n\n{finish}"
            )
        if signal in lines:
            problem = f"has the line {signal} among its commands; bash has no such command"
        else:
            problem = (
                f"echoes {signal} after other commands; it finishes the task only as the "
                "first line of a command's output"
            )
        return (
            f"{where} {problem}, so nothing was run. Run the other commands without it and "
            "look at their output; when the work is done and checked, finish with a reply "
            f"holding only this block\n\n{finish}"
        )

    def _meant(self, command: str) -> str:
        """``command``, or ``echo SIGNAL`` when it is one line that only misspells the
        exit signal (as the built-in model does above temperature 0).

        >>> regex_parse()._meant("COMPLETE_TASK_AND_SUBMIT_FINAL Output")
        'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'
        >>> regex_parse()._meant("echo COMPLETE")
        'echo COMPLETE'
        """
        signal = self.exit_signal
        lines = [line.strip() for line in command.splitlines() if line.strip()]
        if not signal or len(lines) != 1 or lines[0] == signal:
            return command
        said = lines[0].removeprefix("echo ").strip("'\" ")
        if said != signal and _squashed(said) == _squashed(signal):
            return f"echo {signal}"
        return command

    @checked
    def __call__(self, reply: Reply, /) -> Parsed:
        return text_only(
            self._read(reply),
            reply,
            f"Tool calls are not run here: write the command in a ```{self._tag()} block "
            "in the text of your reply.",
        )

    def _read(self, reply: Reply) -> Parsed:
        content = reply.content
        tags = _lowered(tuple(self.tags))
        blocks = fenced_blocks(content, tags)
        for block in blocks:
            if not block.closed and (block.tag in tags or block.body.strip()):
                what = f"```{block.tag} block" if block.tag else "``` block"
                return self.error(
                    f"Your {what} that opens on line {block.line} is never closed "
                    "(no line with only ``` after it), so nothing was run."
                )
        shell = [b for b in blocks if b.tag in tags]
        if shell:
            commands = [self._meant(_command(b)) for b in shell]
            for block, command in zip(shell, commands, strict=True):
                if not command.strip():
                    return self.error(
                        f"The ```{block.tag} block on line {block.line} is empty, "
                        "so nothing was run."
                    )
            for block, command in zip(shell, commands, strict=True):
                if (misused := self._misused_signal(block, command, len(shell) == 1)) is not None:
                    return Failure(FormatError(misused))
            if self.one_action and len(commands) > 1:
                return self.error(
                    f"Your reply has {len(commands)} shell blocks (on lines "
                    f"{', '.join(str(b.line) for b in shell)}); nothing was run."
                )
            return Success([Action(command) for command in commands])
        if self.code_tags:
            inside = {i for b in blocks for i in range(b.line - 1, b.last)}  # <code> outside
            prose = "\n".join(line for i, line in enumerate(content.split("\n")) if i not in inside)
            snippets = [s for m in _CODE.findall(prose) if (s := html.unescape(m).strip())]
            if snippets and not (self.one_action and len(snippets) > 1):
                return Success([Action(s) for s in snippets])
        others = sorted({b.tag or "untagged" for b in blocks if b.body.strip()})
        tag = self._tag()
        if others:
            problem = (
                f"Your reply has {' and '.join(others)} code blocks but no ```{tag} block, "
                "so nothing was run (other blocks are never run)."
            )
        else:
            problem = f"Your reply has no fenced ```{tag} block, so nothing was run."
        return self.no_action(
            reply, blocks, problem, f"is not a ```{tag} block, so it is never run"
        )


def _squashed(text: str) -> str:
    return re.sub(r"[\s_-]", "", text).upper()


@functools.lru_cache(maxsize=64)  # every reply is parsed with the same few sets
def _lowered(tags: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(t.lower() for t in tags)


def regex_parse(
    tags: Sequence[str] = DEFAULT_TAGS,
    *,
    code_tags: bool = False,
    one_action: bool = False,
    finish_on_plain_text: bool = False,
    exit_signal: str = EXIT_SIGNAL,
) -> RegexParse:
    """V1 that reads shell commands from the fenced blocks tagged with one of ``tags``
    (heredoc-aware; prose and other fences never run); docs/components.md has the rules.

    >>> from four import Assistant
    >>> regex_parse()(Assistant("Let me look.\\n```bash\\nls -la\\n```")).unwrap()
    [Action(command='ls -la', call_id=None)]
    """
    check.names("regex_parse", "tags", tags)
    check.flag("regex_parse", "code_tags", code_tags)
    check.flag("regex_parse", "one_action", one_action)
    check.flag("regex_parse", "finish_on_plain_text", finish_on_plain_text)
    check.text("regex_parse", "exit_signal", exit_signal)
    return RegexParse(tuple(tags), code_tags, one_action, finish_on_plain_text, exit_signal)
