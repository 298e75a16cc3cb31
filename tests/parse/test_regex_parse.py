"""regex_parse: replies as real models write them, and the seed parser's hazards."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from four import Action, Assistant, FormatError, Rejected, Submitted
from four.execute import EXIT_SIGNAL
from four.parse import fenced_blocks, regex_parse

Parsed = Result[Sequence[Action | Rejected], FormatError | Submitted]


def parse(
    content: str,
    *,
    code_tags: bool = False,
    one_action: bool = False,
    finish_on_plain_text: bool = False,
) -> Parsed:
    parser = regex_parse(
        code_tags=code_tags, one_action=one_action, finish_on_plain_text=finish_on_plain_text
    )
    return parser(Assistant(content))


def commands(content: str, *, code_tags: bool = False, one_action: bool = False) -> list[str]:
    result = parse(content, code_tags=code_tags, one_action=one_action)
    assert isinstance(result, Success), result
    return [a.command for a in result.unwrap() if isinstance(a, Action)]


def feedback(content: str, *, one_action: bool = False) -> str:
    result = parse(content, one_action=one_action)
    assert isinstance(result, Failure), result
    error = result.failure()
    assert isinstance(error, FormatError), error
    return error.feedback


# --- replies as models write them ---------------------------------------------------


def test_mini_swe_agent_textbased_reply() -> None:
    reply = (
        "THOUGHT: I need to find where the parser lives before I change it.\n\n"
        "```mswea_bash_command\nfind . -name '*.py' | xargs grep -n 'def parse' | head -20\n```"
    )
    assert commands(reply) == ["find . -name '*.py' | xargs grep -n 'def parse' | head -20"]


def test_prose_block_prose() -> None:
    reply = (
        "I'll check the failing test first.\n\n"
        "```bash\ncd /repo && python -m pytest tests/test_x.py -x -q 2>&1 | tail -30\n```\n\n"
        "Then I'll look at the traceback."
    )
    assert commands(reply) == ["cd /repo && python -m pytest tests/test_x.py -x -q 2>&1 | tail -30"]


def test_several_shell_blocks_run_in_order_whatever_their_tag() -> None:
    reply = (
        "First:\n```bash\nls\n```\nthen\n```sh\npwd\n```\nand\n```shell\nid\n```\n```zsh\ndate\n```"
    )
    assert commands(reply) == ["ls", "pwd", "id", "date"]


def test_python_block_beside_a_bash_block_is_not_run() -> None:
    reply = "```python\nimport os\nos.remove('x')\n```\nRun it:\n```bash\npython fix.py\n```"
    assert commands(reply) == ["python fix.py"]


def test_tag_case_and_attributes_and_tildes() -> None:
    assert commands("```Bash title=run.sh\nls\n```") == ["ls"]
    assert commands("~~~bash\nls\n~~~") == ["ls"]
    assert commands("```{bash}\nls\n```") == ["ls"]


def test_console_block_runs_its_prompt_lines_only() -> None:
    reply = "```console\n$ ls -la\ntotal 0\n$ echo hi\nhi\n```"
    assert commands(reply) == ["ls -la\necho hi"]
    assert commands("```console\nls\n```") == ["ls"]


def test_multiline_script_keeps_its_lines_and_inner_indentation() -> None:
    body = 'for f in *.py; do\n    echo "$f"\ndone'
    assert commands(f"```bash\n{body}\n```") == [body]


def test_indented_fence_in_a_list_is_unindented() -> None:
    reply = "1. Look:\n   ```bash\n   ls -la\n   cat x\n   ```\n2. done"
    assert commands(reply) == ["ls -la\ncat x"]


def test_longer_outer_fence_contains_a_short_one() -> None:
    reply = "````bash\ncat > a.md <<EOF\n```\nx\n```\nEOF\n````"
    assert commands(reply) == ["cat > a.md <<EOF\n```\nx\n```\nEOF"]


def test_crlf_line_ends() -> None:
    assert commands("Run:\r\n```bash\r\nls\r\n```\r\n") == ["ls"]


def test_reasoning_is_never_parsed() -> None:
    reply = Assistant("", reasoning="maybe\n```bash\nrm -rf /\n```")
    result = regex_parse()(reply)
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), FormatError)


# --- the seed parser's hazards (four-spec.md 1.6) ----------------------------------------


def test_prose_between_two_non_shell_fences_is_never_run() -> None:
    reply = (
        "Here is the fix:\n```python\nx = 1\n```\n"
        "Now delete the cache with rm -rf ~/.cache and rerun.\n"
        "```python\ny = 2\n```"
    )
    text = feedback(reply)
    assert "python" in text and "nothing was run" in text


def test_untagged_fence_is_not_run() -> None:
    assert "untagged" in feedback("```\nrm -rf build\n```")


def test_inline_code_tag_is_not_run_unless_asked() -> None:
    reply = "You could run <code>ls -la</code> to see."
    assert "no fenced" in feedback(reply)
    assert commands(reply, code_tags=True) == ["ls -la"]
    assert commands("<code>echo &lt;x&gt;</code>", code_tags=True) == ["echo <x>"]


def test_code_tag_inside_a_fence_is_not_a_second_action() -> None:
    reply = "```bash\necho '<code>x</code>'\n```"
    assert commands(reply, code_tags=True) == ["echo '<code>x</code>'"]


def test_heredoc_with_fences_stays_whole() -> None:
    heredoc = (
        "cat > README.md <<'EOF'\n# Title\n\n```python\nprint('hi')\n```\n\nMore text.\nEOF\n"
        "wc -l README.md"
    )
    assert commands(f"Writing the readme.\n```bash\n{heredoc}\n```\nDone.") == [heredoc]


def test_heredoc_variants() -> None:
    for opener, closer in [
        ("<<EOF", "EOF"),
        ('<< "END"', "END"),
        ("<<-PY", "\tPY"),
        ("<<\\X", "X"),
    ]:
        body = f"cat {opener} > f\n```\n{closer}"
        assert commands(f"```bash\n{body}\n```") == [body], opener


def test_unterminated_heredoc_falls_back_to_the_first_fence_line() -> None:
    assert commands("```bash\ncat <<EOF > f\nhello\n```\nprose") == ["cat <<EOF > f\nhello"]


def test_here_string_and_shift_are_not_heredocs() -> None:
    assert commands('```bash\ngrep x <<< "$v"\n```\n```bash\necho $((1 << 2))\n```') == [
        'grep x <<< "$v"',
        "echo $((1 << 2))",
    ]


def test_backticks_inside_a_command_do_not_close_the_block() -> None:
    reply = "```bash\necho 'use ``` to fence'\necho `date`\n```"
    assert commands(reply) == ["echo 'use ``` to fence'\necho `date`"]


def test_one_line_fence_is_inline_code_not_a_block() -> None:
    assert "nothing was run" in feedback("Run ```bash ls``` now.")


def test_mixed_bash_and_sh_blocks_all_run() -> None:
    assert commands("```bash\na\n```\n```sh\nb\n```\n```bash\nc\n```") == ["a", "b", "c"]


def test_unclosed_shell_fence_is_a_format_error_and_nothing_runs() -> None:
    text = feedback("```bash\nls\n```\nand\n```bash\nrm -rf build\n")
    assert "line 5" in text and "never closed" in text


def test_unclosed_other_fence_with_content_is_a_format_error() -> None:
    assert "never closed" in feedback("```bash\nls\n```\n```python\nprint(1)")


def test_stray_closing_fence_at_the_end_is_ignored() -> None:
    assert commands("```bash\nls\n```\n```") == ["ls"]


def test_shell_and_console_and_zsh_are_not_completion() -> None:
    for tag in ("shell", "console", "zsh"):
        assert commands(f"```{tag}\nls\n```") == ["ls"]


def test_empty_shell_block_is_a_format_error() -> None:
    assert "is empty" in feedback("```bash\n\n```")


# --- completion rule ------------------------------------------------------------------


def test_exit_signal_line_submits_the_rest_of_the_text() -> None:
    result = parse(f"The bug is fixed: the parser now reads heredocs.\n{EXIT_SIGNAL}")
    assert result == Failure(Submitted("The bug is fixed: the parser now reads heredocs."))
    assert parse(f"`{EXIT_SIGNAL}`") == Failure(Submitted(""))


def test_plain_text_is_a_format_error_by_default() -> None:
    text = feedback("I have finished the task.")
    assert "no fenced ```bash block" in text
    assert EXIT_SIGNAL in text  # it says how to finish


def test_plain_text_finishes_only_when_asked() -> None:
    assert parse("All done.\n", finish_on_plain_text=True) == Failure(Submitted("All done."))


@pytest.mark.parametrize(
    "reply", ["", "   \n\n", "```python\nprint(1)\n```", "```bash\nls\n", "```\n```"]
)
def test_unreadable_replies_never_count_as_success(reply: str) -> None:
    for plain in (False, True):
        result = parse(reply, finish_on_plain_text=plain)
        assert isinstance(result, Failure)
        assert isinstance(result.failure(), FormatError), (reply, plain)


def test_empty_reply_feedback_names_the_format() -> None:
    text = feedback("")
    assert text.startswith("Your reply was empty")
    assert "```bash\nls -la\n```" in text


def test_shell_block_wins_over_a_signal_in_prose() -> None:
    assert commands(f"Next I will print {EXIT_SIGNAL}:\n```bash\nls\n```") == ["ls"]


def test_one_action_demands_exactly_one_block() -> None:
    text = feedback("```bash\na\n```\n```bash\nb\n```", one_action=True)
    assert "2 shell blocks" in text and "exactly one fenced block" in text
    assert commands("```bash\na\n```", one_action=True) == ["a"]


def test_custom_tags() -> None:
    p = regex_parse(["python"])
    assert p(Assistant("```python\nprint(1)\n```")) == Success([Action("print(1)")])
    assert isinstance(p(Assistant("```bash\nls\n```")), Failure)


def test_each_parser_reads_its_own_tags_in_any_case() -> None:
    # The lower-cased tags are kept per set of tags: one parser's never serve another.
    from four.parse import RegexParse

    shell, python = RegexParse(("SH",)), RegexParse(("Python",))
    listed = RegexParse(["ZSH"])  # type: ignore[arg-type]  # a list, not the tuple it types
    for _ in range(2):
        assert shell(Assistant("```sh\nls\n```")) == Success([Action("ls")])
        assert isinstance(shell(Assistant("```python\nls\n```")), Failure)
        assert python(Assistant("```python\nls\n```")) == Success([Action("ls")])
        assert listed(Assistant("```zsh\nls\n```")) == Success([Action("ls")])


# --- properties ------------------------------------------------------------------------

_line = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=30
)
_command = (
    st.lists(_line, min_size=1, max_size=5)
    .map("\n".join)
    .filter(
        lambda c: (
            c.strip()
            and not any(line.strip().startswith(("```", "~~~")) for line in c.split("\n"))
            and "<<" not in c
        )
    )
)


@given(st.text(max_size=300))
def test_any_text_parses_to_a_value(content: str) -> None:
    result = parse(content)
    if isinstance(result, Success):
        assert result.unwrap() and all(
            isinstance(a, Action) and a.command.strip() for a in result.unwrap()
        )
    else:
        error = result.failure()
        if isinstance(error, Submitted):
            assert EXIT_SIGNAL in content
        else:
            assert error.feedback


@given(
    _line.filter(lambda s: "```" not in s and "~~~" not in s),
    _command,
    _line.filter(lambda s: "```" not in s and "~~~" not in s),
)
def test_a_block_between_prose_gives_back_its_command(
    before: str, command: str, after: str
) -> None:
    assert commands(f"{before}\n```bash\n{command}\n```\n{after}") == [command.strip("\n")]


def test_fenced_blocks_reports_lines() -> None:
    blocks = fenced_blocks("a\n```bash\nls\n```\n```py\nx")
    assert [(b.tag, b.line, b.last, b.closed) for b in blocks] == [
        ("bash", 2, 4, True),
        ("py", 5, 6, False),
    ]


def test_gpt_style_reply_with_a_diff_and_a_command() -> None:
    reply = (
        "### Plan\n\n1. Patch the parser:\n\n```diff\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n"
        "-old\n+new\n```\n\n2. Apply and test:\n\n```bash\ngit apply fix.patch && pytest -q\n```\n"
    )
    assert commands(reply) == ["git apply fix.patch && pytest -q"]


def test_submission_command_in_a_block_is_an_action() -> None:
    reply = f"All tests pass.\n```bash\necho {EXIT_SIGNAL} && git diff\n```"
    assert commands(reply) == [f"echo {EXIT_SIGNAL} && git diff"]


_body_line = st.one_of(
    _line, st.sampled_from(["```", "```python", "~~~", "````", "  ```", "EOF2", "```bash"])
).filter(lambda s: s.strip() != "EOF")


@given(st.lists(_body_line, max_size=8))
def test_any_heredoc_body_stays_whole(body: list[str]) -> None:
    command = "cat > notes.md <<'EOF'\n" + "\n".join(body) + "\nEOF\nwc -l notes.md"
    assert commands(f"Writing notes.\n```bash\n{command}\n```\nDone.") == [command]


# --- the exit signal run as a command (small models do this) -------------------------


def test_a_block_holding_only_the_exit_signal_is_told_to_echo_it() -> None:
    text = feedback(f"Done.\n```bash\n{EXIT_SIGNAL}\n```")
    assert f"echo {EXIT_SIGNAL}" in text
    assert "exit 127" in text and "nothing was run" in text


def test_the_bare_exit_signal_among_other_commands_runs_nothing() -> None:
    text = feedback(f"```bash\nchmod +x run.sh\n./run.sh > out.txt\n{EXIT_SIGNAL}\n```")
    assert "among its commands" in text and f"echo {EXIT_SIGNAL}" in text


def test_the_exit_signal_echoed_after_the_work_runs_nothing() -> None:
    text = feedback(f"```bash\nchmod +x hello.sh\n./hello.sh\necho {EXIT_SIGNAL}\n```")
    assert f"echoes {EXIT_SIGNAL} after other commands" in text
    assert "nothing was run" in text and text.endswith(f"```bash\necho {EXIT_SIGNAL}\n```")


def test_the_exit_signal_echoed_first_or_in_a_heredoc_still_runs() -> None:
    assert commands(f"```bash\necho {EXIT_SIGNAL}\n```") == [f"echo {EXIT_SIGNAL}"]
    answer = f"echo {EXIT_SIGNAL}\ncat answer.txt"
    assert commands(f"```bash\n{answer}\n```") == [answer]
    heredoc = f"cat <<'EOF'\n{EXIT_SIGNAL}\nall done\nEOF"
    assert commands(f"```bash\n{heredoc}\n```") == [heredoc]


def test_finishing_in_the_same_reply_as_other_commands_runs_nothing() -> None:
    reply = f"```bash\nls\n```\n```bash\npython fizz.py\n```\n```bash\necho {EXIT_SIGNAL}\n```"
    text = feedback(reply)
    assert "finishes the task in the same reply as other commands" in text
    assert "block on line 7" in text and "nothing was run" in text


@pytest.mark.parametrize(
    "line",
    [
        "COMPLETE_TASK_AND_SUBMIT_FINALOUTPUT",
        "COMPLETE_TASK_AND_SUBMIT_FINAL Output",
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL OUTPUT",
        "echo 'complete_task_and_submit_final_output'",
    ],
)
def test_a_block_that_only_misspells_the_exit_signal_finishes(line: str) -> None:
    """Seen on the built-in model at temperature 0.7: bash ran these as "command not
    found" (or echoed a line that is not the signal), three times in an attempt."""
    assert commands(f"Done.\n```bash\n{line}\n```") == [f"echo {EXIT_SIGNAL}"]


def test_a_misspelled_signal_among_other_commands_is_run_as_it_is() -> None:
    block = f"```bash\nls\necho {EXIT_SIGNAL[:-7]} OUTPUT\n```"
    assert commands(block) == [f"ls\necho {EXIT_SIGNAL[:-7]} OUTPUT"]
    assert commands("```bash\necho COMPLETE\n```") == ["echo COMPLETE"]
