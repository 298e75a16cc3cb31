"""The workspace's preview: what the model is shown of its folder as a run begins."""

from __future__ import annotations

import json
import os
from pathlib import Path

from four.domains._preview import (
    CHARACTERS,
    FILES,
    LINES,
    TEXT_BYTES,
    WIDTH,
    preview,
    prompt_with_preview,
)


def test_files_with_their_sizes_and_the_first_lines_of_text(tmp_path: Path) -> None:
    (tmp_path / "sales.csv").write_text("region,amount\nnorth,120\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "blob.bin").write_bytes(b"\0\1\2" * 100)
    (tmp_path / "data" / "one").write_bytes(b"x")
    assert preview(tmp_path) == (
        "The working folder, when the task began:\n"
        "sales.csv (24 bytes, 2 lines):\n"
        "  region,amount\n"
        "  north,120\n"
        "data/blob.bin (300 bytes)\n"
        "data/one (1 byte, 1 line):\n"
        "  x"
    )  # a folder's own files before its subfolders


def test_long_files_and_lines_are_cut_and_say_so(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("".join(f"{i} " + "y" * 200 + "\n" for i in range(50)))
    shown = preview(tmp_path).splitlines()
    assert shown[1] == "log.txt (10,190 bytes, 50 lines):"
    assert shown[2] == "  0 " + "y" * (WIDTH - 2) + "..."
    assert len(shown) == 2 + LINES + 1 and shown[-1] == f"  ... ({50 - LINES} more lines)"


def test_a_large_file_is_named_with_its_size_only(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("x\n" * (TEXT_BYTES // 2 + 1))
    assert preview(tmp_path).splitlines()[1:] == [f"big.log ({TEXT_BYTES + 2:,} bytes)"]


def test_a_notebook_is_shown_by_its_cells(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title"]},
        {"cell_type": "code", "metadata": {}, "source": "x = 1\n\nprint(x)", "outputs": []},
    ]
    (tmp_path / "a.ipynb").write_text(json.dumps({"cells": cells, "nbformat": 4}, indent=1))
    (tmp_path / "b.ipynb").write_text('{"not": "a notebook"}')
    shown = preview(tmp_path).splitlines()
    assert shown[1].endswith("a Jupyter notebook, 2 cells):")
    assert shown[2:4] == ["  cell 1 (markdown): # Title", "  cell 2 (code): x = 1 | print(x)"]
    assert shown[4].startswith("b.ipynb (") and shown[5] == '  {"not": "a notebook"}'
    # Then how to change and run one: as JSON, not as text; in place, its outputs kept.
    assert shown[6].startswith("Notebooks are JSON: read and change their cells with python3")
    assert "`jupyter execute --inplace NAME.ipynb`" in shown[6] and len(shown) == 7
    (tmp_path / "a.ipynb").unlink()
    assert "Notebooks are JSON" not in preview(tmp_path)  # said only when one is shown


def test_hidden_files_and_left_out_folders_are_not_shown(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref\n")
    (tmp_path / ".env").write_text("KEY=secret\n")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "run.json").write_text("{}\n")
    (tmp_path / "a.txt").write_text("a\n")
    shown = preview(tmp_path, leave_out=[tmp_path / "runs"])
    assert "a.txt" in shown
    assert ".git" not in shown and "secret" not in shown and "run.json" not in shown


def test_a_large_folder_is_named_in_part_and_counted(tmp_path: Path) -> None:
    for i in range(FILES + 5):
        (tmp_path / f"f{i:03}.txt").write_text("z\n" * 3)
    shown = preview(tmp_path)
    assert len(shown) <= CHARACTERS
    assert shown.endswith("... and 5 more files")
    for i in range(2000):
        (tmp_path / f"g{i:04}.py").write_text("pass\n")
    shown = preview(tmp_path)
    assert len(shown) <= CHARACTERS and shown.endswith("... and more files")


def test_an_empty_or_missing_folder_adds_nothing(tmp_path: Path) -> None:
    assert preview(tmp_path) == preview(tmp_path / "missing") == ""
    assert prompt_with_preview("Solve it.", tmp_path) == "Solve it."
    (tmp_path / "n.txt").write_text("7\n")
    assert prompt_with_preview("Solve it.", tmp_path) == (
        "Solve it.\nThe working folder, when the task began:\nn.txt (2 bytes, 1 line):\n  7"
    )


def test_a_link_is_named_never_followed(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("outside\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(tmp_path / "secret")
    os.mkfifo(work / "fifo")
    assert preview(work) == "The working folder, when the task began:\nfifo\nlink"
