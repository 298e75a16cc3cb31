"""note_repeats: the model is told when a command gives exactly what it gave just before."""

from __future__ import annotations

from pathlib import Path

from four import Action
from four.execute import local_env, note_repeats


def test_a_command_repeated_with_the_same_output_is_pointed_out(tmp_path: Path) -> None:
    V2 = note_repeats(local_env(cwd=str(tmp_path)))
    first = V2(Action("ls")).unwrap()
    again = V2(Action(" ls\n")).unwrap()
    third = V2(Action("ls")).unwrap()
    assert "<warning>" not in first.content
    assert again.content.startswith("<warning>The same command gave the same output 2 times")
    assert third.content.startswith("<warning>The same command gave the same output 3 times")
    assert again.content.endswith(first.content) and again.returncode == 0
    assert V2.cwd == str(tmp_path)  # the wrapped environment's settings show through


def test_a_command_again_after_another_one_is_a_check_not_a_repeat(tmp_path: Path) -> None:
    V2 = note_repeats(local_env(cwd=str(tmp_path)))
    contents = [V2(Action(c)).unwrap().content for c in ("ls", "true", "ls", "touch f", "ls")]
    assert not any("<warning>" in c for c in contents)
