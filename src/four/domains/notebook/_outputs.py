"""What the model is shown of a cell's outputs: text streams, the result, the error with a
trimmed traceback, and a line per figure. Bounded the way command output is."""

from __future__ import annotations

import base64
import binascii
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from four.execute import OutputBuffer

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TRACEBACK_LINES = 24
"""Lines of a traceback the model sees at most (its last ones: where it failed)."""


def strip_ansi(text: str) -> str:
    """Text without terminal colour codes (IPython colours its tracebacks).

    >>> strip_ansi("\\x1b[31mZeroDivisionError\\x1b[39m")
    'ZeroDivisionError'
    """
    return _ANSI.sub("", text)


def bounded(text: str, max_output: int) -> str:
    """``text`` cut to ``max_output`` characters, its head and tail kept.

    >>> bounded("0123456789abcdefghij", 10)
    '01234\\n[... 10 characters elided ...]\\nfghij'
    """
    buffer = OutputBuffer(max_output)
    buffer.feed(text.encode("utf-8", "surrogatepass"), True)
    return buffer.render()[0]


def png_size(data: str) -> tuple[int, int] | None:
    """Width and height of a base64 PNG (from its IHDR chunk), None if it is not one.

    >>> png_size(base64.b64encode(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(8) + struct.pack(">II", 640, 480)).decode())
    (640, 480)
    """
    try:
        head = base64.b64decode(data[:44], validate=False)
    except (binascii.Error, ValueError):
        return None
    if len(head) < 24 or not head.startswith(b"\x89PNG"):
        return None
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def figures(outputs: Iterable[Mapping[str, Any]]) -> list[str]:
    """A line per figure (PNG) among ``outputs``, e.g. ``640x480 PNG``."""
    found = []
    for output in outputs:
        data = output.get("data") or {}
        png = data.get("image/png")
        if isinstance(png, str):
            size = png_size(png)
            found.append(f"{size[0]}x{size[1]} PNG" if size else "PNG")
        elif "image/svg+xml" in data:
            found.append("SVG")
    return found


def trimmed_traceback(lines: Sequence[str]) -> str:
    """The traceback without colour codes, its last ``TRACEBACK_LINES`` lines."""
    text = strip_ansi("\n".join(lines))
    kept = [line for line in text.splitlines() if line.strip() and not set(line) <= {"-"}]
    if len(kept) > TRACEBACK_LINES:
        dropped = len(kept) - TRACEBACK_LINES
        kept = [f"[... {dropped} lines of the traceback elided ...]", *kept[-TRACEBACK_LINES:]]
    return "\n".join(kept)


def streams(outputs: Iterable[Mapping[str, Any]], name: str) -> str:
    """All the text a cell wrote to ``stdout`` or ``stderr``."""
    return "".join(
        str(o.get("text", ""))
        for o in outputs
        if o.get("output_type") == "stream" and o.get("name") == name
    )


def result_text(outputs: Iterable[Mapping[str, Any]]) -> str:
    """The cell's value (``execute_result``) and other displayed text, as plain text."""
    parts = []
    for output in outputs:
        if output.get("output_type") not in ("execute_result", "display_data"):
            continue
        data = output.get("data") or {}
        if "image/png" in data or "image/svg+xml" in data:
            continue  # a figure: its own line
        text = data.get("text/plain")
        if text:
            parts.append(str(text))
    return "\n".join(parts)


def error_of(outputs: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    return next((o for o in outputs if o.get("output_type") == "error"), None)


def describe_outputs(
    outputs: Sequence[Mapping[str, Any]], max_output: int, figure_base: int = 0
) -> list[str]:
    """The sections the model sees, in order: stdout, stderr, result, figures, error."""
    lines: list[str] = []
    for title, text in (
        ("stdout", streams(outputs, "stdout")),
        ("stderr", streams(outputs, "stderr")),
        ("result", result_text(outputs)),
    ):
        if text.strip():
            lines.append(f"[{title}]\n{bounded(text.rstrip(chr(10)), max_output)}")
    for number, kind in enumerate(figures(outputs), figure_base + 1):
        lines.append(f"figure {number}: {kind}")
    error = error_of(outputs)
    if error is not None:
        name, value = str(error.get("ename", "")), str(error.get("evalue", ""))
        traceback = trimmed_traceback([str(t) for t in error.get("traceback") or []])
        lines.append(f"[error] {name}: {strip_ansi(value)}")
        if traceback:
            lines.append(bounded(traceback, max_output))
    return lines
