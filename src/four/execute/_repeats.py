"""V2 that tells the model when a command gave exactly what it gave before: a stuck small
model runs ``ls -la`` nine times and reads the same output each time. Only a repeat of the
command just before counts (with another in between, it may be a check). It also says what
went wrong when bash refused a block that was not shell: Python, or a line the command
before printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from returns.result import Success

from four._checked import checked
from four._types import (
    Action,
    AsyncCloseable,
    AsyncExecute,
    Checked,
    Closeable,
    Execute,
    Observation,
)
from four.execute._output import Executed

_WARNING = "<warning>The same command gave the same output "
_END = "</warning>\n"
_PYTHON = re.compile(
    r"(def|class|for|if|while|with) .*:$|import \w|from [\w.]+ import |print\(|return\b"
    r"|[A-Za-z_][\w.]*(\[.*\])? = "
)
_REFUSED = ("syntax error near unexpected token", "command not found")
PYTHON_NOTE = (
    "\n<note>bash ran this block as shell commands, but it starts with Python. To change a "
    ".py file, write the whole file: cat > name.py <<'EOF' ... EOF; to run Python, "
    "python3 - <<'EOF' ... EOF.</note>"
)
QUOTED_NOTE = (
    "\n<note>bash ran `{line}` as a command, but it is a line your last command printed, "
    "not a command. To write a value to a file: echo VALUE > NAME.txt; to save what a "
    "command prints: COMMAND > NAME.txt.</note>"
)
"""Said when the model's block is a line of the output before: its thought cut short at
"The output shows", the built-in model wrote ``23 total`` as its command, then the error
that gave, and so on."""


def typed_python(command: str, output: str) -> bool:
    """Whether bash refused ``command`` (its ``output``) because it starts with Python.

    >>> typed_python("print(last([1, 2]))", "syntax error near unexpected token `last'")
    True
    >>> typed_python("for f in *.txt; do wc -l $f; done", "wc: command not found")
    False
    """
    first = command.strip().partition("\n")[0].rstrip()
    return _PYTHON.match(first) is not None and any(r in output for r in _REFUSED)


def quoted_output(command: str, output: str, before: str) -> str | None:
    """The line of ``command`` that bash refused (``output``) because it is no command but
    a line of ``before``, the observation just before it; None when it is not that.

    >>> quoted_output("23 total", "bash: line 1: 23: command not found", "  7 a.py\\n 23 total")
    '23 total'
    >>> quoted_output("wc -l a.py", "bash: wc: command not found", "23 total") is None
    True
    """
    line = command.strip().partition("\n")[0].strip()
    word = line.split(maxsplit=1)[0] if line else ""
    if not word or f"{word}: command not found" not in output:
        return None
    return line if any(seen.strip() == line for seen in before.splitlines()) else None


def unwarned(content: str) -> str:
    """An observation's content without the warning ``note_repeats`` put before it.

    >>> unwarned(NoteRepeats(print).noted(Action("ls"), Success(Observation("a"))).unwrap().content)
    'a'
    """
    if content.startswith(_WARNING) and (end := content.find(_END)) >= 0:
        return content[end + len(_END) :]
    return content


@dataclass(slots=True)
class NoteRepeats(Checked):
    """V2 over ``inner`` adding a warning to a (command, output) that repeats the one
    just before it, and a note to Python, or a printed line, that bash refused. One per run."""

    inner: Execute
    _last: tuple[str, str] | None = field(default=None, repr=False)
    _times: int = field(default=0, repr=False)

    def __call__(self, action: Action, /) -> Executed:
        return self.noted(action, self.inner(action))

    def noted(self, action: Action, result: Executed) -> Executed:
        """``result`` of ``action``, with the warning if it repeats the one before."""
        if not isinstance(result, Success):
            return result
        observation: Observation = result.unwrap()
        content = observation.content
        key = (action.command.strip(), content)
        before = "" if self._last is None else self._last[1]
        self._times = self._times + 1 if key == self._last else 1
        self._last = key
        if typed_python(action.command, content):
            content += PYTHON_NOTE
        elif (line := quoted_output(action.command, content, before)) is not None:
            content += QUOTED_NOTE.format(line=line)
        if self._times > 1:
            content = (
                f"{_WARNING}{self._times} times in a row: running it again changes nothing. "
                f"Take the next step of the task, or finish if it is done.{_END}{content}"
            )
        if content is observation.content:
            return result
        return Success(replace(observation, content=content))

    def close(self) -> None:
        if isinstance(self.inner, Closeable):
            self.inner.close()

    def __getattr__(self, name: str) -> object:  # the wrapped environment's settings
        if name.startswith("_") or name == "inner":  # not set yet (copy, pickle)
            raise AttributeError(name)
        return getattr(self.inner, name)


@checked
def note_repeats(env: Execute) -> NoteRepeats:
    """V2 that warns the model when a command repeats an earlier command and its output,
    tells it how to write or run Python that it typed into bash, and says so when it ran
    a line the command before printed.

    >>> from four.execute import local_env
    >>> V2 = note_repeats(local_env())
    >>> first, again = V2(Action("echo hi")).unwrap(), V2(Action("echo hi")).unwrap()
    >>> "<warning>" in first.content, "same command" in again.content
    (False, True)
    """
    return NoteRepeats(env)


@dataclass(frozen=True, slots=True)
class AsyncNoteRepeats:
    """The warning of ``notes`` over an async V2 (``alocal_env``, for ``arun``); ``notes.inner``
    is not called. ``aclose()`` closes ``inner``."""

    notes: NoteRepeats
    inner: AsyncExecute

    async def __call__(self, action: Action, /) -> Executed:
        return self.notes.noted(action, await self.inner(action))

    async def aclose(self) -> None:
        if isinstance(self.inner, AsyncCloseable):
            await self.inner.aclose()
