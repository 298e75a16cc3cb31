"""Typed doors to nbformat (it ships no annotations): the few calls this domain makes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbformat import NotebookNode


def code_cell(source: str) -> NotebookNode:
    """A new code cell (with an id), no outputs yet."""
    import nbformat

    cell: NotebookNode = nbformat.v4.new_code_cell(source)  # type: ignore[no-untyped-call]
    return cell


def markdown_cell(source: str) -> NotebookNode:
    import nbformat

    cell: NotebookNode = nbformat.v4.new_markdown_cell(source)  # type: ignore[no-untyped-call]
    return cell


def notebook(cells: Sequence[NotebookNode] = (), **metadata: Any) -> NotebookNode:
    """A version 4.5 notebook holding ``cells``."""
    import nbformat

    made: NotebookNode = nbformat.v4.new_notebook(  # type: ignore[no-untyped-call]
        cells=list(cells), metadata=metadata
    )
    return made


def error_output(name: str, value: str) -> NotebookNode:
    import nbformat

    output: NotebookNode = nbformat.v4.new_output(  # type: ignore[no-untyped-call]
        "error", ename=name, evalue=value, traceback=[]
    )
    return output


def to_text(nb: NotebookNode) -> str:
    """The notebook as .ipynb JSON, after ``nbformat.validate`` (which raises
    ``nbformat.ValidationError`` on an invalid one)."""
    import nbformat

    nbformat.validate(nb)
    text: str = nbformat.writes(nb)  # type: ignore[no-untyped-call]
    return text
