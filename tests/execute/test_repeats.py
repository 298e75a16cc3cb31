"""note_repeats: the model is told when a command gives exactly what it gave just before,
and how to write or run Python it typed into bash."""

from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.mark.parametrize(
    "python",
    [
        "def last(xs):\n    return xs[-1]",
        "rate = 0.1\necho ran",  # bash goes on after the refused line
        'name = input("Name: ")\nprint(f"Hello, {name}!")',
        "for k in range(3):\n    print(k)",
    ],
)
def test_python_that_bash_refused_is_answered_with_how_to_run_it(
    tmp_path: Path, python: str
) -> None:
    seen = note_repeats(local_env(cwd=str(tmp_path)))(Action(python)).unwrap()
    assert "command not found" in seen.content or "syntax error" in seen.content
    assert seen.content.endswith(
        "<note>bash ran this block as shell commands, but it starts with Python. To change a "
        ".py file, write the whole file: cat > name.py <<'EOF' ... EOF; to run Python, "
        "python3 - <<'EOF' ... EOF.</note>"
    )


@pytest.mark.parametrize(
    "shell",
    [
        "cat > a.py <<'EOF'\ndef f():\n    return 1\nEOF",  # Python written the right way
        "x=1; echo $x",
        "for f in *; do nosuchtool $f; done",  # shell that fails on its own
        "python3 -c 'print(1 +)'",
    ],
)
def test_shell_commands_get_no_note_however_they_end(tmp_path: Path, shell: str) -> None:
    (tmp_path / "f").write_text("")
    seen = note_repeats(local_env(cwd=str(tmp_path)))(Action(shell)).unwrap()
    assert "<note>" not in seen.content


def test_a_line_the_command_before_printed_run_as_a_command_is_pointed_out(
    tmp_path: Path,
) -> None:
    for name, lines in (("a.py", 7), ("b.py", 16)):
        (tmp_path / name).write_text("x = 1\n" * lines)
    V2 = note_repeats(local_env(cwd=str(tmp_path)))
    counted = V2(Action("wc -l a.py b.py")).unwrap()
    assert " 23 total" in counted.content
    seen = V2(Action("23 total")).unwrap()
    assert "command not found" in seen.content
    assert seen.content.endswith(
        "<note>bash ran `23 total` as a command, but it is a line your last command printed, "
        "not a command. To write a value to a file: echo VALUE > NAME.txt; to save what a "
        "command prints: COMMAND > NAME.txt.</note>"
    )


@pytest.mark.parametrize(
    ("before", "command"),
    [
        ("echo 23 total", "24 total"),  # not a line of the output before
        ("echo nosuchtool", "nosuchtool"),  # printed, and no command: the note is for this
        ("echo wc -l a.py", "wc -l a.py"),  # printed, but a command that ran
        ("true", "23 total"),  # nothing printed before
    ],
)
def test_only_a_refused_line_of_the_output_before_gets_the_note(
    tmp_path: Path, before: str, command: str
) -> None:
    (tmp_path / "a.py").write_text("")
    V2 = note_repeats(local_env(cwd=str(tmp_path)))
    V2(Action(before))
    seen = V2(Action(command)).unwrap()
    assert ("<note>" in seen.content) is (before == "echo nosuchtool")
