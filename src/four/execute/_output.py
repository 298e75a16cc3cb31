"""What every environment shares: the check of a command before it runs, bounded output
capture, the exit-signal rule, the observation text (the rules: docs/components.md), ``with``."""

from __future__ import annotations

import codecs
import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Self

from returns.result import Failure, Result, Success

from four import _arguments as arguments
from four._checked import checked
from four._secrets import SECRET_PATTERNS, name_matcher
from four._types import EXIT_SIGNAL as EXIT_SIGNAL  # the environments' default
from four._types import Action, ExecutionError, Observation, Submitted

TIMEOUT_RETURNCODE = 124
"""The return code reported for a command killed at its timeout (as GNU ``timeout`` does)."""

MAX_SUBMISSION = 1_000_000
"""Characters of a submission kept after the exit signal line (the rest is elided)."""

DEFAULT_INHERIT: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "TERM",
)
"""Host variables passed to commands by default (``fnmatch`` patterns, case-sensitive)."""

QUIET_ENV: Mapping[str, str] = {
    # Pagers and progress bars wait for a terminal that is not there.
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "PIP_PROGRESS_BAR": "off",
    "TQDM_DISABLE": "1",
}
"""Variables set for every command unless ``env`` overrides them."""

Executed = Result[Observation, Submitted | ExecutionError]
"""What an environment returns for one action."""


def refused(env: object, action: object) -> Observation | None:
    """The observation for a command no process can be handed (the model's fault, not
    ours: return code 126), or None. Raises TypeError when ``action`` is no ``Action``
    (``V2("echo hi")``: say so, not 'no attribute command')."""
    if not isinstance(action, Action):
        raise arguments.not_an_action(type(env).__name__, action)
    if "\0" in action.command:
        reason = "The command contains a NUL character, which no shell command can hold."
    elif not action.command.strip():
        reason = "The command is empty."
    else:
        return None
    return Observation(f"<returncode>126</returncode>\n<output>\n{reason}\n</output>", 126)


class ClosedOnExit:
    """``with env:`` gives the environment and calls its ``close()`` at the block's end
    (the environments that hold something: a shell, a container)."""

    __slots__ = ()
    close: Callable[[], None]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@checked
def command_env(
    inherit: Iterable[str] = DEFAULT_INHERIT,
    deny: Iterable[str] = SECRET_PATTERNS,
    env: Mapping[str, str] | None = None,
    host: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a command gets: the host variables named in ``inherit`` but not
    ``deny`` (ignoring case), then ``QUIET_ENV``, then ``env`` as given.

    >>> command_env(host={"PATH": "/bin", "OPENAI_API_KEY": "sk", "HOME": "/h"}, env={"X": "1"})["X"]
    '1'
    >>> "OPENAI_API_KEY" in command_env(inherit=["*"], host={"OPENAI_API_KEY": "sk"})
    False
    """
    allow = name_matcher(tuple(inherit), ignore_case=False)
    refuse = name_matcher(tuple(deny), ignore_case=True)
    source = os.environ if host is None else host  # read as it is now: it may change
    passed = {
        name: value
        for name, value in source.items()
        if allow(name) is not None and refuse(name) is None
    }
    return {**passed, **QUIET_ENV, **(env or {})}


class OutputBuffer:
    """Decoded command output (UTF-8, bad bytes replaced), bounded while it is read: a
    head, a counted middle, a tail. While the first line may be the exit signal, the head
    may grow by ``MAX_SUBMISSION`` characters: a submission is not cut at ``max_output``.

    >>> b = OutputBuffer(10)
    >>> b.feed(b"0123456789abcdefghij")
    >>> b.render()
    ('01234\\n[... 10 characters elided ...]\\nfghij', 10)
    """

    __slots__ = (
        "_head",
        "_head_cap",
        "_max_output",
        "_pending",
        "_signal",
        "_signal_open",
        "_tail",
        "_tail_cap",
        "_tail_len",
        "total",
    )

    @checked
    def __init__(self, max_output: int, exit_signal: str | None = None) -> None:
        self._max_output = max(0, max_output)
        self._pending = b""  # the start of a UTF-8 sequence cut by the end of a read
        self._signal = exit_signal or None
        self._signal_open = self._signal is not None
        self._tail_cap = self._max_output // 2
        self._head_cap = self._max_output - self._tail_cap
        if self._signal is not None:
            self._head_cap = max(self._head_cap, len(self._signal) + 64 + MAX_SUBMISSION)
        self._head = ""
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0

    def feed(self, data: bytes, final: bool = False) -> None:
        """Add raw bytes of output."""
        # What codecs' incremental UTF-8 decoder does, without its Python-level layers.
        if self._pending:
            data = self._pending + data
        text, used = codecs.utf_8_decode(data, "replace", final)
        self._pending = data[used:]
        self._add(text)

    def _add(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
            if self._signal_open:
                self._check_signal()
        if text and self._tail_cap:
            self._tail.append(text)
            self._tail_len += len(text)
            self._trim()

    def _trim(self) -> None:  # drop the chunks wholly before the tail's window
        while self._tail and self._tail_len - len(self._tail[0]) >= self._tail_cap:
            self._tail_len -= len(self._tail.popleft())

    def _check_signal(self) -> None:
        """Once the first line is known not to be the signal, shrink the head to its share."""
        stripped = self._head.lstrip()
        newline = stripped.find("\n")
        if newline < 0 and len(stripped) <= len(self._signal or ""):
            return  # the first line is not complete yet
        first = stripped if newline < 0 else stripped[:newline]
        self._signal_open = False
        if first.strip() == self._signal:
            return  # keep the extended head: it holds the submission
        cap = self._max_output - self._tail_cap
        if spill := self._head[cap:]:
            # What the head gives back joins the stream just after it (it precedes the tail).
            self._tail.appendleft(spill)
            self._tail_len += len(spill)
            self._trim()
        self._head, self._head_cap = self._head[:cap], cap

    def finish(self) -> None:
        """Flush a trailing partial UTF-8 sequence (as a replacement character)."""
        self.feed(b"", True)

    def _parts(self) -> tuple[str, str, int]:
        tail = "".join(self._tail)
        return self._head, tail, self.total - len(self._head) - len(tail)

    def text(self) -> str:
        """Everything kept (head and tail, with a marker where the middle was dropped)."""
        head, tail, gap = self._parts()
        return head + (_marker(gap) if gap else "") + tail

    def render(self) -> tuple[str, int]:
        """The output cut to ``max_output`` characters (head and tail), and the count elided."""
        head, tail, gap = self._parts()
        if not gap and len(head) + len(tail) <= self._max_output:
            return head + tail, 0
        share = self._tail_cap  # with a gap, the tail holds at least that many (``_add``)
        source = head + tail if not gap else tail
        shown_head = head[: self._max_output - share]
        shown_tail = source[len(source) - share :] if share else ""
        elided = self.total - len(shown_head) - len(shown_tail)
        if self._max_output == 0:
            return "", elided
        return shown_head + _marker(elided) + shown_tail, elided

    def submission(self) -> str | None:
        """The output after the exit-signal line when the output starts with it, else None."""
        if self._signal is None or not self.total:  # no output: no submission
            return None
        text = self.text().lstrip()
        first, _, rest = text.partition("\n")
        return rest if first.strip() == self._signal else None


def _marker(count: int) -> str:
    return f"\n[... {count} characters elided ...]\n"


@dataclass(frozen=True, slots=True)
class Ran:
    """What running a command gave, before it becomes an observation or a submission."""

    returncode: int | None
    output: OutputBuffer
    duration: float
    timed_out: bool = False
    timeout: float = 0.0
    notes: tuple[str, ...] = ()


def conclude(ran: Ran) -> Result[Observation, Submitted]:
    """The exit-signal rule (docs/components.md), else the observation the model sees."""
    if ran.returncode == 0 and not ran.timed_out:
        submitted = ran.output.submission()
        if submitted is not None:
            return Failure(Submitted(submitted.strip("\n")))
    return Success(observe(ran))


def observe(ran: Ran) -> Observation:
    """``<returncode>N</returncode>`` then notes (timeout, truncation) then ``<output>``."""
    shown, elided = ran.output.render()
    code = TIMEOUT_RETURNCODE if ran.timed_out else ran.returncode
    lines = [f"<returncode>{code}</returncode>"]
    if ran.timed_out:
        lines.append(
            f"<warning>The command timed out after {ran.timeout:g} s and was killed, "
            "with every process it started. The output below is what it printed until then.</warning>"
        )
    if elided:
        said = (
            f"{elided} in the middle are not shown. Use head, tail or grep, or redirect the "
            "output to a file."
            if shown
            else "none are shown (max_output=0)."
        )
        lines.append(f"<warning>The output had {ran.output.total} characters; {said}</warning>")
    if ran.notes:  # seldom: no generator made for none
        lines.extend(f"<warning>{note}</warning>" for note in ran.notes)
    body = shown if not shown or shown.endswith("\n") else shown + "\n"
    lines.append(f"<output>\n{body}</output>")
    return Observation("\n".join(lines), code, ran.timed_out, ran.duration)
