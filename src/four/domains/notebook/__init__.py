"""The notebook domain: an agent that writes a Jupyter notebook, judged by running it.

    cell_parse()              V1: the reply's ```python blocks become cells, its prose markdown
    kernel_env()              V2: each cell checked with ast, then run in one Jupyter kernel
    save_notebook(dir, env)   emit: the trajectory, and beside it the run's .ipynb
    notebook_check(env)       the verified loop: the notebook re-run top to bottom, fresh

Needs the ``notebook`` extra (``pip install 'four-loop[notebook]'``): nbformat, nbclient,
jupyter_client, ipykernel, matplotlib. They load when a kernel starts or a notebook is
written, not on import.

>>> from four import run, scripted_invoke
>>> env = kernel_env(timeout=30)
>>> path = run(scripted_invoke(["```python\\nx = 6 * 7\\nx\\n```", "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]),
...            cell_parse(), env, save_notebook("/tmp/four-doc-nb", env), prompt="compute")
>>> path.with_suffix(".ipynb").exists()
True
"""

from four.domains.notebook._check import NotebookCheck, notebook_check
from four.domains.notebook._kernel import MARKDOWN, KernelEnv, Status, kernel_env
from four.domains.notebook._parse import CellParse, cell_parse
from four.domains.notebook._save import (
    KeepFailed,
    NotebookFile,
    notebook_cells,
    save_notebook,
)

__all__ = [
    "MARKDOWN",
    "CellParse",
    "KeepFailed",
    "KernelEnv",
    "NotebookCheck",
    "NotebookFile",
    "Status",
    "cell_parse",
    "kernel_env",
    "notebook_cells",
    "notebook_check",
    "save_notebook",
]
