"""The figures of a notebook run, for ``four show`` and ``four view``: read from the
``.ipynb`` the run wrote beside its trajectory (plain JSON: no notebook extra needed)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from four.trajectory import Trajectory
from four.types import JSON

_LINE = re.compile(r"^figure (\d+): ", re.M)


@dataclass(frozen=True, slots=True)
class Figure:
    """One PNG of the notebook: its run-wide number (as the model was told), the cell
    (1-based, in the saved notebook) that made it, and the image, base64."""

    number: int
    cell: int
    png: str


@dataclass(frozen=True, slots=True)
class Notebook:
    """The run's saved notebook, as far as show and view need it."""

    path: Path
    cells: int
    figures: tuple[Figure, ...]
    problem: str = ""

    def by_number(self) -> dict[int, Figure]:
        return {f.number: f for f in self.figures}


def notebook_of(trajectory: Trajectory) -> Notebook | None:
    """The notebook a run saved (named in ``stats.notebook``), or None for a run that
    saved none. A notebook that cannot be read is returned with its ``problem``."""
    record = trajectory.stats.notebook
    if not isinstance(record, Mapping):
        return None
    name = record.get("path")
    if not isinstance(name, str):
        error = record.get("error")
        return Notebook(trajectory.path.with_suffix(".ipynb"), 0, (), f"not saved: {error}")
    path = trajectory.path.parent / Path(name).name  # beside the trajectory, never elsewhere
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Notebook(path, 0, (), f"cannot be read: {exc}")
    cells = doc.get("cells") if isinstance(doc, dict) else None
    if not isinstance(cells, list):
        return Notebook(path, 0, (), "cannot be read: it has no cells")
    return Notebook(path, len(cells), tuple(_figures(cells)))


def _figures(cells: list[JSON]) -> list[Figure]:
    found: list[Figure] = []
    for index, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            continue
        metadata = cell.get("metadata")
        four = metadata.get("four") if isinstance(metadata, dict) else None
        numbers = four.get("figures") if isinstance(four, dict) else None
        outputs = cell.get("outputs")
        pngs = [
            png
            for output in (outputs if isinstance(outputs, list) else [])
            if isinstance(output, dict)
            and isinstance(data := output.get("data"), dict)
            and isinstance(png := data.get("image/png"), str)
        ]
        told = [n for n in numbers if isinstance(n, int)] if isinstance(numbers, list) else []
        for n, png in enumerate(pngs):
            number = told[n] if n < len(told) else len(found) + 1
            found.append(Figure(number, index, png.replace("\n", "")))
    return found


def mentioned(observation: str) -> list[int]:
    """The figure numbers an observation reports (``figure 3: 640x480 PNG``)."""
    return [int(m.group(1)) for m in _LINE.finditer(observation)]
