"""The terminal belongs to the user: model text and command output are shown, never obeyed.

Everything ``four`` prints passes one sanitiser, ``visible``: a control character other
than newline and tab (the C0 range, DEL, the C1 range) and the bidirectional overrides
are printed as a visible escape (``\\x1b``, ``\\x9b``, ``\\u202e``), so an OSC 52
clipboard write, an OSC 8 link, a window title, a screen clear or a cursor move in a
reply or an output is shown as text and the terminal does nothing (rich strips only BEL,
BS, VT, FF and CR). ``guarded()`` applies it to ``print``, ``console()`` to rich; the views
pass model text through ``visible`` first too, so rich measures what is shown.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{code:02x}" if (code := ord(match.group())) < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character a terminal could act on shown as an escape.

    Newline and tab stay; a CRLF line end is a newline (a lone CR, which would let a
    line overwrite itself, is shown).

    >>> visible("ok\\x1b]52;c;cHduZWQ=\\x07 line\\r\\nnext\\x9b2J")
    'ok\\\\x1b]52;c;cHduZWQ=\\\\x07 line\\nnext\\\\x9b2J'
    """
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(_escaped, text.replace("\r\n", "\n"))


class VisibleStream:
    """A text stream that writes ``visible(text)`` to the stream it wraps."""

    def __init__(self, raw: IO[str]) -> None:
        self.raw: IO[str] = raw.raw if isinstance(raw, VisibleStream) else raw  # (once)

    def write(self, text: str) -> int:
        self.raw.write(visible(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        self.raw.writelines(map(visible, lines))

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding...
        return getattr(self.raw, name)


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """Within: ``sys.stdout`` and ``sys.stderr`` sanitise whatever is written to them."""
    out, err = cast(TextIO, VisibleStream(sys.stdout)), cast(TextIO, VisibleStream(sys.stderr))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield


def console(stream: IO[str] | None = None, **options: Any) -> Console:
    """A rich console on ``stream`` (stdout by default) that shows control characters: every
    text segment it renders passes ``visible``; its own styles and cursor moves (control
    segments) are the only escapes it writes."""
    raw = VisibleStream(stream or sys.stdout).raw  # unwrapped: its own styles pass
    return _visible_console()(file=raw, **options)


@cache
def _visible_console() -> type[Console]:
    from rich.console import Console
    from rich.segment import Segment

    class VisibleConsole(Console):
        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterable[Segment]:
            for segment in super().render(renderable, options):
                if segment.control or _CONTROL.search(segment.text) is None:
                    yield segment
                else:
                    yield Segment(visible(segment.text), segment.style)

    return VisibleConsole
