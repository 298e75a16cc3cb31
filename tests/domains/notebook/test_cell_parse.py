"""cell_parse: ```python blocks become cells in order, prose becomes markdown cells."""

from __future__ import annotations

from returns.result import Failure, Success

from four import Action, Assistant, FormatError, Submitted
from four.domains.notebook import MARKDOWN, cell_parse

REPLY = """First the data.

```python
import pandas as pd
df = pd.read_csv("data.csv")
```

Then a chart:

```py
df.plot()
```
```bash
ls
```
That is all for now."""


def commands(reply: str, markdown: bool = True) -> list[str]:
    result = cell_parse(markdown=markdown)(Assistant(reply))
    assert isinstance(result, Success), result
    return [a.command for a in result.unwrap() if isinstance(a, Action)]


def test_code_blocks_are_cells_in_order_and_prose_is_markdown() -> None:
    assert commands(REPLY) == [
        MARKDOWN + "First the data.",
        'import pandas as pd\ndf = pd.read_csv("data.csv")',
        MARKDOWN + "Then a chart:",
        "df.plot()",
        MARKDOWN + "```bash\nls\n```\nThat is all for now.",
    ]


def test_markdown_cells_can_be_turned_off() -> None:
    assert commands(REPLY, markdown=False) == [
        'import pandas as pd\ndf = pd.read_csv("data.csv")',
        "df.plot()",
    ]


def test_a_reply_without_code_is_a_format_error_saying_how_to_write_a_cell() -> None:
    for reply in ("I will plot it.", "```bash\nls\n```", "", "```python\n\n```"):
        result = cell_parse()(Assistant(reply))
        assert isinstance(result, Failure) and isinstance(result.failure(), FormatError)
        assert "```python" in result.failure().feedback, reply


def test_an_unclosed_block_runs_nothing() -> None:
    result = cell_parse()(Assistant("```python\nx = 1\n```\n```python\ny = 2"))
    assert isinstance(result, Failure) and "not closed" in str(result.failure())


def test_the_exit_signal_submits_a_reply_without_code() -> None:
    reply = "The notebook plots sales by month.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    assert cell_parse()(Assistant(reply)) == Failure(
        Submitted("The notebook plots sales by month.")
    )
    # the signal beside code is not a markdown cell
    assert commands("```python\nx = 1\n```\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT") == ["x = 1"]
