"""edit_parse reads whole files, SEARCH/REPLACE blocks and commands from any language's
blocks; apply_edits applies a turn's edits to texts all or none."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from four import Action, Assistant, FormatError, Rejected, Submitted
from four.parse import EditAction, FileEdit, SearchReplace, WholeFile, apply_edits, edit_parse
from four.testing import check_parse

SR = "<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE"


def block(path: str, old: str, new: str, tag: str = "python") -> str:
    return f"{path}\n```{tag}\n{SR.format(old=old, new=new)}\n```\n"


def actions(text: str) -> Sequence[Action]:
    parsed = edit_parse()(Assistant(text))
    assert isinstance(parsed, Success), parsed
    return [a for a in parsed.unwrap() if isinstance(a, Action)]


def feedback(text: str) -> str:
    parsed = edit_parse()(Assistant(text))
    assert isinstance(parsed, Failure)
    error = parsed.failure()
    assert isinstance(error, FormatError), error
    return error.feedback


def test_a_block_headed_by_its_path_is_a_whole_file() -> None:
    (edit,) = actions("Here it is.\n\nsrc/tool.py\n```python\nx = 1\n```")
    assert isinstance(edit, EditAction)
    assert edit.edits == (WholeFile("src/tool.py", "x = 1\n", 4),)


def test_decorated_headings_and_info_strings_name_the_path() -> None:
    for text in (
        "**tool.py**\n```python\nx = 1\n```",
        "`tool.py`:\n\n```python\nx = 1\n```",
        "```python tool.py\nx = 1\n```",
        "```python:tool.py\nx = 1\n```",
    ):
        (edit,) = actions(text)
        assert isinstance(edit, EditAction)
        assert edit.edits[0].path == "tool.py", text


def test_search_replace_blocks_in_one_fence_and_in_several() -> None:
    text = (
        "tool.py\n```python\n"
        + SR.format(old="a = 1", new="a = 2")
        + "\n"
        + SR.format(old="b = 1", new="b = 2")
        + "\n```\n"
        + block("other.c", "int x;", "long x;", tag="c")
    )
    (edit,) = actions(text)
    assert isinstance(edit, EditAction)
    assert [(e.path, type(e).__name__) for e in edit.edits] == [
        ("tool.py", "SearchReplace"),
        ("tool.py", "SearchReplace"),
        ("other.c", "SearchReplace"),
    ]
    assert edit.edits[2] == SearchReplace("other.c", "int x;", "long x;", 16)


def test_one_file_has_one_name() -> None:
    (edit,) = actions("./src//a.py\n```python\nx = 1\n```\n../b.py\n```python\ny\n```")
    assert isinstance(edit, EditAction)
    assert [e.path for e in edit.edits] == ["src/a.py", "../b.py"]  # '..' is V2's to refuse


def test_a_path_inside_the_fence_is_read_too() -> None:
    (edit,) = actions("```python\ntool.py\n" + SR.format(old="a", new="b") + "\n```")
    assert isinstance(edit, EditAction)
    assert edit.edits == (SearchReplace("tool.py", "a", "b", 3),)


def test_edits_come_first_as_one_action_then_commands_in_order() -> None:
    text = "```bash\necho one\n```\n" + block("a.py", "x", "y") + "```bash\necho two\n```"
    first, second, third = actions(text)
    assert isinstance(first, EditAction)
    assert [second.command, third.command] == ["echo one", "echo two"]
    assert type(second) is Action


def test_an_edit_action_run_as_shell_does_nothing_and_says_so() -> None:
    from four.execute import local_env

    (edit,) = actions(block("a.py", "x", "y"))
    seen = local_env()(edit).unwrap()
    assert seen.returncode == 2 and "cannot apply file edits" in seen.content


def test_a_shell_block_headed_by_a_path_is_a_file_not_a_command() -> None:
    (edit,) = actions("run.sh\n```bash\nrm -rf /\n```")
    assert isinstance(edit, EditAction)
    assert edit.edits == (WholeFile("run.sh", "rm -rf /\n", 2),)


def test_prose_before_a_fence_is_not_a_path() -> None:
    text = "Here is an example:\n```python\nx = 1\n```"
    assert "has no path on the line before it" in feedback(text)


def test_broken_search_blocks_are_format_errors_naming_the_line() -> None:
    assert "has no ======= line" in feedback("a.py\n```python\n<<<<<<< SEARCH\nx\n```")
    no_end = "a.py\n```python\n<<<<<<< SEARCH\nx\n=======\ny\n```"
    assert "on line 3 has no >>>>>>> REPLACE" in feedback(no_end)
    assert "names no file" in feedback("```python\n" + SR.format(old="x", new="y") + "\n```")


def test_the_exit_signal_submits_when_there_is_nothing_to_do() -> None:
    parsed = edit_parse()(Assistant("All done.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"))
    assert parsed == Failure(Submitted("All done."))


def test_apply_edits_applies_in_order_to_the_evolving_text() -> None:
    edits: list[FileEdit] = [
        SearchReplace("a.py", "x = 1", "x = 2"),
        SearchReplace("a.py", "x = 2", "x = 3\ny = 4"),
        WholeFile("b.py", "new\n"),
    ]
    assert apply_edits(edits, {"a.py": "x = 1\nz = 0\n"}.get).unwrap() == {
        "a.py": "x = 3\ny = 4\nz = 0\n",
        "b.py": "new\n",
    }


def test_a_search_found_twice_names_both_places_and_changes_nothing() -> None:
    text = "def f():\n    return 1\n\ndef g():\n    return 1\n"
    result = apply_edits(
        [WholeFile("c.py", "ok\n"), SearchReplace("a.py", "    return 1", "    return 2")],
        {"a.py": text}.get,
    )
    assert isinstance(result, Failure)
    message = result.failure().feedback
    assert "No file was changed" in message
    assert "a.py" in message and "matches 2 places (lines 2, 5)" in message


def test_a_search_not_found_shows_the_closest_lines_with_their_numbers() -> None:
    text = "import os\n\n\ndef main() -> None:\n    print('helo world')\n"
    result = apply_edits(
        [SearchReplace("a.py", "    print('hello world')", "")], {"a.py": text}.get
    )
    assert isinstance(result, Failure)
    message = result.failure().feedback
    assert "a.py" in message and "not in the file" in message
    assert "closest match is line 5" in message and "    5 |     print('helo world')" in message


def test_trailing_spaces_and_a_shifted_indent_still_match_once() -> None:
    text = "class A:\n    def f(self) -> int:\n        return 1\n"
    edit = SearchReplace(
        "a.py", "def f(self) -> int:   \n    return 1", "def f(self) -> int:\n    return 2"
    )
    assert apply_edits([edit], {"a.py": text}.get).unwrap()["a.py"] == (
        "class A:\n    def f(self) -> int:\n        return 2\n"
    )


def test_an_empty_search_creates_or_appends() -> None:
    create = SearchReplace("new.py", "", "x = 1")
    append = SearchReplace("old.py", "", "y = 2")
    result = apply_edits([create, append], {"old.py": "x = 1\n"}.get).unwrap()
    assert result == {"new.py": "x = 1\n", "old.py": "x = 1\ny = 2\n"}


def test_a_search_in_a_missing_file_is_an_error() -> None:
    nothing: dict[str, str] = {}
    result = apply_edits([SearchReplace("gone.py", "x", "y")], nothing.get)
    assert isinstance(result, Failure)
    assert "gone.py): the file does not exist" in result.failure().feedback


def test_crlf_files_keep_their_line_ends() -> None:
    result = apply_edits(
        [SearchReplace("a.c", "int x;", "long x;")], {"a.c": "int x;\r\nint y;\r\n"}.get
    )
    assert result.unwrap() == {"a.c": "long x;\r\nint y;\r\n"}


@given(
    st.lists(st.sampled_from(["a = 1", "b = 2", "", "    c()", "d"]), min_size=1, max_size=12),
    st.data(),
)
def test_a_search_applies_exactly_when_its_lines_occur_once(
    lines: list[str], data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(lines) - 1))
    end = data.draw(st.integers(start + 1, len(lines)))
    window = lines[start:end]
    if not any(line.strip() for line in window):
        return  # a blank SEARCH means "create or append"
    text = "\n".join(lines) + "\n"
    places = [
        i for i in range(len(lines) - len(window) + 1) if lines[i : i + len(window)] == window
    ]
    result = apply_edits([SearchReplace("f.py", "\n".join(window), "NEW")], {"f.py": text}.get)
    if len(places) == 1:
        assert result.unwrap()["f.py"] == "\n".join([*lines[:start], "NEW", *lines[end:]]) + "\n"
    else:
        assert isinstance(result, Failure)
        assert f"matches {len(places)} places" in result.failure().feedback


@pytest.mark.parametrize("plain_text_submits", [False, True])
def test_edit_parse_obeys_the_parse_law(plain_text_submits: bool) -> None:
    check_parse(
        edit_parse(finish_on_plain_text=plain_text_submits), plain_text_submits=plain_text_submits
    )


def test_tool_calls_are_answered_not_run() -> None:
    from four import ToolCall

    reply = Assistant(
        "```bash\nls\n```", tool_calls=(ToolCall("c1", "bash", '{"command": "rm x"}'),)
    )
    command, rejected = edit_parse()(reply).unwrap()
    assert isinstance(command, Action) and command.command == "ls"
    assert isinstance(rejected, Rejected) and rejected.call_id == "c1"
