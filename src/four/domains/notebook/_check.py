"""The notebook domain's check: the notebook, re-run top to bottom in a fresh kernel."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from returns.result import Success

from four.checks import Claim
from four.checks._judge import Verifiable
from four.domains.notebook._kernel import KernelEnv
from four.domains.notebook._outputs import error_of, figures
from four.domains.notebook._save import notebook_cells
from four.quaternary import CheckResult, EvidenceNeed, maybe, no, yes
from four.types import Action

if TYPE_CHECKING:
    from nbformat import NotebookNode


@dataclass(frozen=True, slots=True)
class NotebookCheck(Verifiable):
    """YES when the run's notebook reproduces; see ``notebook_check``."""

    env: KernelEnv = field(repr=False)  # described once, as the run's V2
    min_figures: int = 0
    assertion: str | None = None
    timeout: float | None = None

    def __call__(self, claim: Claim, /) -> CheckResult:
        code = [c for c in notebook_cells(self.env) if c.cell_type == "code"]
        if not code:
            return shown("the notebook has no cell that ran without error")
        # In the same place as the run's kernel (its sandbox, its container).
        fresh = self.env.fresh(
            timeout=self.timeout or self.env.timeout,
            exit_signal="",  # a re-run submits nothing
        )
        made = 0
        with fresh:
            for number, cell in enumerate(code, 1):
                result = fresh(Action(cell.source))
                if not isinstance(result, Success):
                    return maybe(EvidenceNeed(f"the fresh kernel failed: {result.failure()}"))
                ran = fresh.cells[-1]
                made += len(figures(ran.outputs))
                if ran.metadata["four"]["status"] != "ok":
                    return shown(
                        f"run top to bottom in a fresh kernel, code cell {number} "
                        f"({_first_line(cell.source)}) fails: {_why(ran)}"
                    )
            if made < self.min_figures:
                return shown(
                    f"the notebook makes {made} figures; at least {self.min_figures} wanted"
                )
            if self.assertion:
                result = fresh(Action(self.assertion))
                ran = fresh.cells[-1]
                if not isinstance(result, Success) or ran.metadata["four"]["status"] != "ok":
                    return no(f"the check's assertion cell fails after the notebook: {_why(ran)}")
        return yes()


def _first_line(source: str) -> str:
    line = next((s for s in source.splitlines() if s.strip()), "")
    return line if len(line) <= 60 else line[:57] + "..."


def _why(cell: NotebookNode) -> str:
    status = cell.metadata["four"]["status"]
    error = error_of(cell.outputs)
    if error is not None and status == "error":
        return f"{error.get('ename')}: {error.get('evalue')}"
    return {"syntax_error": "a syntax error", "timed_out": "it timed out"}.get(
        status, "the kernel was lost"
    )


def notebook_check(
    env: KernelEnv,
    *,
    min_figures: int = 0,
    assertion: str | None = None,
    timeout: float | None = None,
) -> NotebookCheck:
    """Judge a notebook run by the notebook, not by the model's word: the cells that ran
    without error (what ``save_notebook`` keeps) are run again, top to bottom, in a
    fresh kernel. YES when every cell runs, at least ``min_figures`` figures are made,
    and ``assertion`` (a Python cell run after the notebook, e.g.
    ``assert df.shape[0] > 0``) passes. A notebook that only worked because of state left
    by a cell since dropped (hidden state) is refused, naming the cell that fails.

    >>> from four.domains.notebook import kernel_env
    >>> notebook_check(kernel_env(), min_figures=1).min_figures
    1
    """
    if not isinstance(env, KernelEnv):
        raise TypeError(f"env: give the run's kernel_env(), not {type(env).__name__}")
    if min_figures < 0:
        raise ValueError(f"min_figures={min_figures!r}: give 0 or more")
    return NotebookCheck(env, min_figures, assertion, timeout)


def shown(reason: str) -> CheckResult:
    """A NO the model is told whole: which cell fails and why is no answer key."""
    return no(reason, feedback="full")
