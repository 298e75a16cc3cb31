"""The laws of four.testing hold for the notebook domain's components too."""

from __future__ import annotations

import tempfile

from four import Action
from four.domains.notebook import cell_parse, kernel_env, save_notebook
from four.testing import check_emit, check_execute, check_parse


def test_cell_parse_keeps_the_parse_law() -> None:
    check_parse(cell_parse(), max_examples=150, seed=1)
    check_parse(cell_parse(markdown=False), max_examples=50, seed=2)


def test_save_notebook_keeps_the_emit_law() -> None:
    check_emit(lambda: save_notebook(tempfile.mkdtemp(), kernel_env()), max_examples=20, seed=3)


def test_kernel_env_keeps_the_execute_law() -> None:
    # Few examples: each starts a kernel. The timeout law with a cell that never ends.
    check_execute(
        lambda: kernel_env(timeout=1, interrupt_grace=2),
        timeout_action=Action("while True: pass"),
        max_examples=3,
        seed=4,
    )
