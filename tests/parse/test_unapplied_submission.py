"""A reply that submits and also holds a block its parser did not apply is a format error
that says so, in every domain: the model would believe that block's work was done."""

from __future__ import annotations

import pytest
from returns.result import Failure

from four import Action, Assistant, FormatError, Submitted, ToolCall
from four.domains import get_domain
from four.execute import EXIT_SIGNAL
from four.parse import toolcall_parse

# domain -> a block its parser never applies, and the words that say why
UNAPPLIED = {
    "bash": ("```python\nprint(sum(range(10)))\n```", "is not a ```bash block, so it is never run"),
    "python": ("```python\ndef add(a, b):\n    return a + b\n```", "has no path on the line"),
    "notebook": ("```bash\nls data/\n```", "is not a ```python block, so no cell was run"),
    "cli": ("```c\nint main(void) { return 0; }\n```", "has no path on the line"),
    "cli-go": ("```go\npackage main\n```", "has no path on the line"),
}


def feedback(result: object) -> str:
    assert isinstance(result, Failure), result
    error = result.failure()
    assert isinstance(error, FormatError), f"taken as {error!r}"
    return error.feedback


@pytest.mark.parametrize("domain", sorted(UNAPPLIED))
@pytest.mark.parametrize("signal_first", [True, False])
def test_the_signal_beside_an_unapplied_block_is_a_format_error(
    domain: str, signal_first: bool
) -> None:
    block, why = UNAPPLIED[domain]
    parts = [f"Done, here is the code.\n{EXIT_SIGNAL}", block]
    reply = "\n".join(parts if signal_first else parts[::-1])
    text = feedback(get_domain(domain).parse()(Assistant(reply)))
    assert text.startswith(f"Your reply submits (the line {EXIT_SIGNAL}) but also holds a ```")
    assert why in text and "nothing was submitted" in text
    line = reply.split("\n").index(block.split("\n")[0]) + 1
    assert f"block on line {line}, which" in text


@pytest.mark.parametrize("domain", sorted(UNAPPLIED))
def test_the_signal_alone_still_submits(domain: str) -> None:
    result = get_domain(domain).parse()(Assistant(f"All done: 3 files changed.\n{EXIT_SIGNAL}"))
    assert result == Failure(Submitted("All done: 3 files changed."))


@pytest.mark.parametrize("domain", sorted(UNAPPLIED))
def test_an_empty_block_beside_the_signal_carries_no_work(domain: str) -> None:
    result = get_domain(domain).parse()(Assistant(f"Finished.\n```\n```\n{EXIT_SIGNAL}"))
    assert result == Failure(Submitted("Finished.\n```\n```"))


def test_a_command_written_as_text_beside_the_signal_in_tool_call_mode() -> None:
    parse = toolcall_parse()
    text = feedback(parse(Assistant(f"```bash\nrm -r build\n```\n{EXIT_SIGNAL}")))
    assert "is text, not a tool call, so it was never run" in text
    assert parse(Assistant(f"Done.\n{EXIT_SIGNAL}")) == Failure(Submitted("Done."))
    call = ToolCall("c1", "bash", '{"command": "ls"}')
    ran = parse(Assistant(f"```bash\nx\n```\n{EXIT_SIGNAL}", (call,))).unwrap()
    assert ran == [Action("ls", "c1")]  # a call is run; the text beside it is not read


def test_the_python_domain_no_longer_submits_a_block_that_names_no_file(tmp_path: object) -> None:
    """The slip seen on the built-in model: the exit signal written above a ```python
    block that names no file ended the run as a submission; now it goes back to the
    model, and the run goes on to a real submission."""
    from pathlib import Path

    from four import run, scripted_invoke
    from four.domains import DomainSetup

    work = Path(str(tmp_path)) / "work"
    work.mkdir()
    python = get_domain("python")
    where = DomainSetup(workspace=work, output_dir=Path(str(tmp_path)) / "runs")
    slip = f"{EXIT_SIGNAL}\n```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
    fixed = "add.py\n```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
    G = scripted_invoke([slip, fixed, f"Wrote add.py.\n{EXIT_SIGNAL}"])
    V2 = python.environment(where)
    path = run(G, python.parse(), V2, python.emit(where, V2), python.system, "write add.py")
    from four.trajectory import load_trajectory

    loaded = load_trajectory(path)
    assert str(loaded.outcome) == "exit:task_complete"
    kinds = [getattr(m, "kind", None) for m in loaded.messages]
    assert "format_error" in kinds
    assert (work / "add.py").read_text().startswith("def add(")
