"""V1 of the notebook domain: the reply's ```python blocks become cells, in order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from returns.result import Failure, Result, Success

from four._grammar import Grammar, Ref, Rep, Seq, grammar_of
from four.domains.notebook._kernel import MARKDOWN
from four.execute import EXIT_SIGNAL
from four.parse import fenced_blocks
from four.parse._regex import Rules
from four.parse._shapes import NEWLINE, body, fenced, plain_line, prose, root
from four.types import Action, FormatError, Rejected, Reply, Submitted

PYTHON_TAGS = ("python", "py", "python3", "ipython", "ipython3")
MAX_CELLS = 4
"""Cells a reply of the grammar holds at most."""


@dataclass(frozen=True, slots=True)
class CellParse(Rules):
    """V1: code cells from ```python blocks, markdown cells from the prose between them
    (with ``markdown``); see ``cell_parse``."""

    markdown: bool = True
    exit_signal: str = EXIT_SIGNAL

    def expected(self) -> str:
        return (
            "Write each cell of the notebook as a fenced Python block:\n\n"
            "```python\nimport pandas as pd\ndf = pd.read_csv('data.csv')\ndf.head()\n```\n\n"
            "Text outside the blocks becomes markdown cells. When the notebook is done, "
            f"reply with {self.exit_signal} alone on a line (and a short summary)."
        )

    def grammar(self) -> Grammar:
        """The replies the built-in model is held to (see ``Constrained``): a short
        thought (up to three lines of prose), then up to four ```python cells; or the exit
        signal alone on the last line.

        >>> print(cell_parse().grammar().gbnf().splitlines()[0])
        root ::= prose{1,3} (cells | "COMPLETE\\x5FTASK\\x5FAND\\x5FSUBMIT\\x5FFINAL\\x5FOUTPUT")
        """
        cells = Seq((Ref("cell"), Rep(Seq((NEWLINE, Ref("cell"))), 0, MAX_CELLS - 1)))
        return grammar_of(
            root(self.exit_signal, Ref("cells")),
            ("cells", cells),
            ("cell", fenced("python", "cell-body")),
            *body("cell-body", plain_line()),
            *prose(),
        )

    def __call__(
        self, reply: Reply, /
    ) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        text = reply.content
        blocks = fenced_blocks(text, ())
        code = [b for b in blocks if b.tag in PYTHON_TAGS]
        if not code:
            if not text.strip():
                problem = "Your reply was empty, so no cell was run."
            elif blocks:
                tags = ", ".join(sorted({b.tag or "(none)" for b in blocks}))
                problem = f"Your reply has code blocks tagged {tags}, but no ```python block."
            else:
                problem = "Your reply has no ```python block, so no cell was run."
            why = "is not a ```python block, so no cell was run"
            return self.no_action(reply, blocks, problem, why)
        if any(not b.closed for b in code):
            return Failure(
                FormatError(
                    "A ```python block of your reply is not closed, so nothing was run. "
                    "Close every block with ``` on a line of its own."
                )
            )
        if not any(b.body.strip() for b in code):
            return self.error("Your ```python blocks are empty.")
        lines = text.split("\n")
        actions: list[Action | Rejected] = []
        start = 0  # the first line (0-based) not yet taken
        for block in code:
            if self.markdown:
                self._prose(lines[start : block.line - 1], actions)
            if block.body.strip():
                actions.append(Action(block.body))
            start = block.last
        if self.markdown:
            self._prose(lines[start:], actions)
        return Success(actions)

    def _prose(self, lines: Sequence[str], actions: list[Action | Rejected]) -> None:
        text = "\n".join(line for line in lines if line.strip() != self.exit_signal).strip()
        if text:
            actions.append(Action(MARKDOWN + text))


def cell_parse(*, markdown: bool = True, exit_signal: str = EXIT_SIGNAL) -> CellParse:
    """V1 for notebooks: each ```python block of the reply is a cell to run, in order;
    with ``markdown`` (the default) the prose around them becomes markdown cells.

    A reply with no code is a submission when a line of it is the exit signal, and
    otherwise a format error that says how to write a cell.

    >>> from four import Assistant
    >>> cell_parse(markdown=False)(Assistant("Load it.\\n```python\\nx = 1\\n```")).unwrap()[0].command
    'x = 1'
    """
    return CellParse(markdown, exit_signal)
