"""What the working folder holds when a run begins, in a few lines for the model.

A small model writes commands blind: it sums the rows of ``North`` in a file whose rows
say ``north``, or sorts numbers as text, never having looked. Shown the folder's files
and the first lines of the small text ones, it starts from what is there. The preview
is a function of the folder's contents, so a run made again from the same folder is sent
the same prompt.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from four._files import Unreadable, read_regular

FILES = 30
"""Files named at most (sorted, hidden ones left out); more are counted."""
LINES = 6
"""First lines shown of a small text file."""
WIDTH = 100
"""Characters kept of a shown line."""
TEXT_BYTES = 64 * 1024
"""A file larger than this is named with its size only."""
CHARACTERS = 2000
"""The preview's length at most: files after it are counted, not shown."""
HEAD = "The working folder, when the task began:\n"
NOTEBOOKS = (
    "Notebooks are JSON: read and change their cells with python3 and its json module, "
    "never with sed; `jupyter execute --inplace NAME.ipynb` runs one and saves its outputs "
    "in it."
)
"""Said after a preview that shows a notebook: the built-in model edited notebooks as
text with sed, and ran them with ``jupyter execute`` alone, which saves nothing."""


def preview(
    folder: str | os.PathLike[str], leave_out: Sequence[str | os.PathLike[str]] = ()
) -> str:
    """The files under ``folder`` with their sizes, and the first lines of small text
    files (a notebook's cells); "" for a folder that holds no file or cannot be read.
    Hidden files and folders, and the folders of ``leave_out``, are not shown.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.csv").write_text("x,y\\n1,2\\n")
    >>> print(preview(d))
    The working folder, when the task began:
    a.csv (8 bytes, 2 lines):
      x,y
      1,2
    """
    root = Path(folder)
    files, complete = _files(root, {Path(p).resolve() for p in leave_out})
    out, left = [HEAD], CHARACTERS - len(HEAD)
    for i, path in enumerate(files):
        entry = _entry(root, path) if i < FILES else ""
        if not entry or len(entry) > left:
            rest = _count(len(files) - i, "more file") if complete else "more files"
            out.append(f"... and {rest}\n")
            break
        out.append(entry)
        left -= len(entry)
    if any(", a Jupyter notebook, " in entry for entry in out):
        out.append(NOTEBOOKS)
    return "".join(out).rstrip("\n") if files else ""


def prompt_with_preview(
    system: str, folder: str | os.PathLike[str], leave_out: Sequence[str | os.PathLike[str]] = ()
) -> str:
    """``system`` followed by ``folder``'s preview (as ``four run --preview`` sends it).

    >>> import tempfile
    >>> prompt_with_preview("Solve it.", tempfile.mkdtemp())
    'Solve it.'
    """
    shown = preview(folder, leave_out)
    return f"{system}\n{shown}" if shown else system


def _files(root: Path, leave_out: set[Path]) -> tuple[list[Path], bool]:
    """The files under ``root``, sorted, and whether that is all of them."""
    found: list[Path] = []
    for here, dirs, names in os.walk(root):  # an unreadable folder is passed over
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and Path(here, d).resolve() not in leave_out
        )
        found += (Path(here, n) for n in sorted(names) if not n.startswith("."))
        if len(found) > 10 * FILES:  # a large tree: enough to name some and say so
            return found, False
    return found, True


def _entry(root: Path, path: Path) -> str:
    name = path.relative_to(root).as_posix()
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            return f"{name}\n"  # a link, a FIFO, a device: named, never followed or read
        size = info.st_size
        data = read_regular(path, max_bytes=TEXT_BYTES, follow=False) if size <= TEXT_BYTES else b""
    except Unreadable:  # it grew past the bound, or was swapped for a FIFO, while read
        data = b""
    except OSError:
        return f"{name}\n"
    unit = "byte" if size == 1 else "bytes"
    if not data or b"\0" in data:
        return f"{name} ({size:,} {unit})\n"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"{name} ({size:,} {unit})\n"
    if name.endswith(".ipynb"):
        cells = _cells(text)
        if cells is not None:
            return f"{name} ({size:,} {unit}, a Jupyter notebook, {cells}"
    lines = text.splitlines()
    count = _count(len(lines), "line")
    shown = "".join(
        f"  {line[:WIDTH]}{'...' if len(line) > WIDTH else ''}\n" for line in lines[:LINES]
    )
    more = f"  ... ({_count(len(lines) - LINES, 'more line')})\n" if len(lines) > LINES else ""
    return f"{name} ({size:,} {unit}, {count}):\n{shown}{more}"


def _cells(text: str) -> str | None:
    """A notebook's cells, one line each (its JSON says little in six lines); None when
    the text is not a notebook's."""
    try:
        cells = json.loads(text)["cells"]
        kinds = [(str(c["cell_type"]), _source(c["source"])) for c in cells]
    except (ValueError, KeyError, TypeError):
        return None
    count = _count(len(kinds), "cell")
    shown = "".join(
        f"  cell {i} ({kind}): {source[:WIDTH]}{'...' if len(source) > WIDTH else ''}\n"
        for i, (kind, source) in enumerate(kinds[: 2 * LINES], 1)
    )
    more = (
        f"  ... ({_count(len(kinds) - 2 * LINES, 'more cell')})\n" if len(kinds) > 2 * LINES else ""
    )
    return f"{count}):\n{shown}{more}"


def _source(source: object) -> str:
    text = "".join(source) if isinstance(source, list) else str(source)
    return " | ".join(line for line in text.splitlines() if line.strip())


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
