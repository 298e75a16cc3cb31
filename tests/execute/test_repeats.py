"""note_repeats: the model is told when a command gives exactly what it gave before."""

from __future__ import annotations

from pathlib import Path

from four import Action
from four.execute import local_env, note_repeats


def test_a_repeated_command_and_output_is_pointed_out(tmp_path: Path) -> None:
    V2 = note_repeats(local_env(cwd=str(tmp_path)))
    first = V2(Action("ls")).unwrap()
    other = V2(Action("echo x > f")).unwrap()
    changed = V2(Action("ls")).unwrap()  # same command, new output: not a repeat
    again = V2(Action(" ls\n")).unwrap()
    assert "<warning>" not in first.content + other.content + changed.content
    assert again.content.startswith(
        "<warning>This is the same command and the same output as command 3 of this run"
    )
    assert again.content.endswith(changed.content) and again.returncode == 0
    assert V2.cwd == str(tmp_path)  # the wrapped environment's settings show through
