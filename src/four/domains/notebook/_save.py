"""emit of the notebook domain: the usual trajectory, and beside it the run's ``.ipynb``."""

from __future__ import annotations

import copy
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from four._outcomes import Outcome
from four.domains.notebook._kernel import KernelEnv
from four.domains.notebook._nb import notebook, to_text
from four.domains.notebook._outputs import figures
from four.trajectory import ArtifactRecorder, save_trajectory, save_with_artifact
from four.trajectory._durable import write_atomic
from four.types import JSON

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from four.trajectory._sign import SigningKey

KeepFailed = Literal["drop", "mark", "keep"]
"""What becomes of a cell that failed (raised, bad syntax, interrupted, lost with a
restarted kernel): left out, kept and tagged ``raises-exception`` (Jupyter's mark for a
cell expected to fail: a re-run goes on past it), or kept as it is."""

KEEP_FAILED: tuple[KeepFailed, ...] = ("drop", "mark", "keep")


def notebook_cells(env: KernelEnv, keep_failed: KeepFailed = "drop") -> list[NotebookNode]:
    """The notebook's cells as a reader gets them: copies of ``env``'s cells, failed
    code cells dropped, marked or kept."""
    cells: list[NotebookNode] = []
    for cell in env.cells:
        status = cell.metadata.get("four", {}).get("status", "ok")
        if cell.cell_type == "code" and status != "ok":
            if keep_failed == "drop":
                continue
            cell = copy.deepcopy(cell)
            if keep_failed == "mark":
                tags = list(cell.metadata.get("tags", []))
                cell.metadata["tags"] = [*tags, "raises-exception"]
        else:
            cell = copy.deepcopy(cell)
        cells.append(cell)
    return cells


def build_notebook(cells: Sequence[NotebookNode], **metadata: JSON) -> NotebookNode:
    """A notebook of ``cells`` with the Python 3 kernel's spec and language info."""
    return notebook(
        cells,
        kernelspec={
            "name": "python3",
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
        },
        language_info={"name": "python", "version": platform.python_version()},
        **metadata,
    )


@dataclass(frozen=True, slots=True)
class NotebookFile:
    """The artifact of ``save_notebook``: ``<stem>.ipynb``, the cells of ``env`` as a
    reader gets them, written atomically; the trajectory's ``stats.notebook`` says what
    it holds."""

    env: KernelEnv = field(repr=False)  # described once, as the run's V2
    keep_failed: KeepFailed = "drop"

    def __call__(self, stem: Path, outcome: Outcome, /) -> dict[str, JSON]:
        target = stem.with_name(stem.name + ".ipynb")
        cells = notebook_cells(self.env, self.keep_failed)
        made = sum(len(figures(c.get("outputs", []))) for c in cells)
        four: dict[str, JSON] = {"trajectory": f"{stem.name}.json", "outcome": outcome.text}
        text = to_text(build_notebook(cells, four=four))
        write_atomic(target.parent, target.name, text.encode())
        code = sum(1 for c in cells if c.cell_type == "code")
        return {"path": target.name, "cells": len(cells), "code_cells": code, "figures": made}


def save_notebook(
    output_dir: str | os.PathLike[str],
    env: KernelEnv,
    *,
    keep_failed: KeepFailed = "drop",
    signing_key: str | os.PathLike[str] | SigningKey | None = None,
) -> ArtifactRecorder:
    """emit for the notebook domain: the trajectory as ``save_trajectory`` writes it
    (streamed, then sealed), and beside it ``<stem>.ipynb``: ``env``'s cells with their
    outputs (figures as embedded PNGs), every cell with an id, checked by
    ``nbformat.validate`` and written atomically. Failed cells are dropped by default
    (a reader gets the cells that ran); ``keep_failed="mark"`` keeps them tagged
    ``raises-exception``, ``"keep"`` keeps them as they are. The trajectory's
    ``stats.notebook`` names the file (or says why it could not be written);
    ``signing_key`` signs its seal, as with ``save_trajectory``.

    >>> from four.domains.notebook import kernel_env
    >>> save_notebook("/tmp/four-doc-nb", kernel_env()).artifact.keep_failed
    'drop'
    """
    if not isinstance(env, KernelEnv):
        raise TypeError(f"env: give the run's kernel_env(), not {type(env).__name__}")
    if keep_failed not in KEEP_FAILED:
        raise ValueError(f"keep_failed={keep_failed!r}: use one of {', '.join(KEEP_FAILED)}")
    writer = save_trajectory(output_dir, signing_key=signing_key)
    return save_with_artifact(writer, "notebook", NotebookFile(env, keep_failed))
