"""The notebook domain as ``four run --domain notebook`` takes it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from four.domains import Domain, DomainSetup
from four.domains._host import domain_host
from four.domains.notebook._check import notebook_check
from four.domains.notebook._kernel import KernelEnv, kernel_env
from four.domains.notebook._parse import cell_parse
from four.domains.notebook._save import save_notebook
from four.execute import EXIT_SIGNAL
from four.types import Execute, Recorder, Verify

EXTRA = ("nbformat", "nbclient", "jupyter_client", "ipykernel", "matplotlib")
"""The ``notebook`` extra's packages: looked for (not imported) when the domain is asked for."""

for _package in EXTRA:
    if importlib.util.find_spec(_package) is None:
        raise ImportError(f"No module named {_package!r}", name=_package)

DEFAULT_TIMEOUT = 120.0
"""Seconds one cell may run unless ``--command-timeout`` says otherwise."""

SYSTEM = f"""You are a data scientist writing a Jupyter notebook for a reader. You work in one
Python kernel that keeps its state from cell to cell; each cell you write is run at once
and its output comes back to you: stdout, stderr, the value of its last line, errors
with their traceback, and a line per figure it drew.

Format: write each cell as a fenced Python block. Text outside the blocks becomes the
notebook's markdown cells, so write it for the reader (what a cell does, what a result
shows). A reply may hold several cells; they run in order.

```python
import pandas as pd
df = pd.read_csv("data.csv")
df.describe()
```

Rules:
- Draw charts with matplotlib (`import matplotlib.pyplot as plt`, then `plt.show()`);
  they are kept in the notebook as images. Give each chart a title and axis labels.
- Keep outputs short: `df.head()`, not the whole frame.
- A cell that raised is left out of the saved notebook, and so is its state: when a
  cell fails, send a corrected cell that does the whole of its work again.
- Cells must not wait for input, and each may run only a limited time.
- The notebook is checked by running it again from the top in a fresh kernel: it must
  work from its own cells alone, in order.
- When the notebook is done, reply with {EXIT_SIGNAL} alone on a line, after a
  one-paragraph summary of what it shows.
"""


def _environment(setup: DomainSetup) -> Execute:
    timeout = DEFAULT_TIMEOUT if setup.command_timeout is None else setup.command_timeout
    host = domain_host(setup, timeout, name="notebook")
    return kernel_env(timeout, cwd=host.workspace, host=host).owns_host()


def _kernel(env: Execute) -> KernelEnv:
    if not isinstance(env, KernelEnv):
        raise TypeError(f"the notebook domain needs its own environment, not {type(env).__name__}")
    return env


def _emit(setup: DomainSetup, env: Execute) -> Recorder[Path]:
    return save_notebook(setup.output_dir, _kernel(env), signing_key=setup.signing_key)


def _check(setup: DomainSetup, env: Execute, assertion: str | None) -> Verify | None:
    # Always: an accepted notebook is one that reproduces. --check adds an assertion cell.
    return notebook_check(_kernel(env), assertion=assertion or None)


DOMAIN = Domain(
    name="notebook",
    summary="Python cells in one Jupyter kernel, saved as an .ipynb that must re-run",
    system=SYSTEM,
    parse=cell_parse,
    environment=_environment,
    emit=_emit,
    check=_check,
)
