"""After a NO the model is shown what the files its task names hold now (missing, empty,
their first lines) and, against the run's start, which it left unchanged and what it
changed, at every feedback level: a small model that wrote its result with `cmd > file`
and saw no output otherwise never reads the file and repeats the command, and one whose
edit did not happen, or dropped lines, submits it again."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from returns.result import Result

from four import Accepted, Message, ModelError, Reply, User, arun, run, scripted_invoke
from four.checks import FeedbackLevel, command_check, verify
from four.checks._named_files import LINES, files_now, named_files
from four.execute import alocal_env, local_env
from four.parse import regex_parse
from four.quaternary import no, yes
from tests._doubles import FakeEnv

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
TASK = "log.txt holds one number per line. Write their sum to total.txt."


def test_the_names_a_task_gives_are_found_in_order_once() -> None:
    task = (
        "`python3 tools/stats.py` crashes: fix last() in tools/stats.py, then write "
        "the result to out.json (see notes.md, e.g. the example)."
    )
    assert named_files(task) == ("tools/stats.py", "out.json", "notes.md")


@pytest.mark.parametrize(
    "text",
    ["mail ann@example.org", "see https://example.org/index.html", "i.e. this", "python3.11"],
)
def test_addresses_links_abbreviations_and_versions_are_not_files(text: str) -> None:
    assert named_files(text) == ()


def test_each_named_file_is_described_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("".join(f"{n}\n" for n in range(20)))
    (tmp_path / "total.txt").write_text("")
    (tmp_path / "data.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / "out.d").mkdir()
    text = files_now(
        local_env(cwd=str(tmp_path)), "From log.txt and data.bin to total.txt, out.d, b.py"
    )
    assert text.splitlines() == [
        "The files the task names, as they are now:",
        "log.txt (50 bytes, 20 lines) (its first lines):",
        *(f"  {n}" for n in range(LINES)),
        "data.bin: 3 bytes of binary data.",
        "total.txt: empty (0 bytes).",
        "out.d: a folder.",
    ]  # four names at most: b.py is left out


def test_a_short_file_is_shown_whole_and_a_missing_one_said_missing(tmp_path: Path) -> None:
    (tmp_path / "words.txt").write_text("20 story.txt\n")
    text = files_now(local_env(cwd=str(tmp_path)), "Write the count to words.txt and line.txt.")
    assert text.splitlines()[1:] == [
        "words.txt (13 bytes, 1 line):",
        "  20 story.txt",
        "line.txt: does not exist.",
    ]


def test_a_python_or_json_file_that_does_not_parse_says_where(tmp_path: Path) -> None:
    """An edit's indentation slip is invisible in a diff to a small model, and a check that
    hides its errors prints nothing: the parser's own words name the line."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n  def mul(a, b):\n")
    (tmp_path / "report.ipynb").write_text('{"cells": [1,]}')
    (tmp_path / "ok.py").write_text("print('\\d')\n")  # a warning, not an error
    text = files_now(local_env(cwd=str(tmp_path)), "Fix calc.py, report.ipynb and ok.py.")
    assert text.splitlines()[1:] == [
        "calc.py (49 bytes, 3 lines):",
        "  def add(a, b):",
        "      return a + b",
        "    def mul(a, b):",
        "  calc.py does not parse as Python: IndentationError: "
        "unindent does not match any outer indentation level (line 3).",
        "report.ipynb (15 bytes, 0 lines):",
        '  {"cells": [1,]}',
        "  report.ipynb is not valid JSON: Expecting value: line 1 column 14 (char 13).",
        "ok.py (12 bytes, 1 line):",
        "  print('\\d')",
    ]


def test_a_file_read_only_in_part_is_not_judged_by_its_part(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * 2000)  # 12,000 bytes: more than is read
    text = files_now(local_env(cwd=str(tmp_path)), "Fix big.py.")
    assert text.splitlines()[1] == "big.py (12000 bytes, 2000 lines) (its first lines):"
    assert "parse" not in text


def test_nothing_is_added_without_names_or_without_a_shell(tmp_path: Path) -> None:
    assert files_now(local_env(cwd=str(tmp_path)), "Count the files here.") == ""
    assert files_now(FakeEnv(), TASK) == ""  # it echoes: no marker comes back


class Seen:
    """A scripted model that keeps every history it was sent."""

    def __init__(self, replies: list[str]) -> None:
        self.sent: list[list[Message]] = []
        self.script = scripted_invoke(replies)

    def __call__(self, history: Sequence[Message]) -> Result[Reply, ModelError]:
        self.sent.append(list(history))
        return self.script(history)

    def feedback(self) -> list[str]:
        last = self.sent[-1]
        return [m.content for m in last if isinstance(m, User) and m.kind == "feedback"]


@pytest.mark.parametrize("level", ["output", "verdict"])
def test_a_silent_no_shows_the_empty_result_file_and_the_model_fixes_it(
    tmp_path: Path, level: FeedbackLevel
) -> None:
    (tmp_path / "log.txt").write_text("3\n4\n")
    model = Seen(
        [
            "```bash\ngrep -c x log.txt > /dev/null; : > total.txt\n```",
            SUBMIT,
            "```bash\nawk '{s += $1} END {print s}' log.txt > total.txt\n```",
            SUBMIT,
        ]
    )
    check = command_check('test "$(cat total.txt)" = 7', feedback=level)
    _, outcome = run(
        model,
        regex_parse(),
        local_env(cwd=str(tmp_path)),
        lambda messages, outcome: (messages, outcome),
        "You sum numbers.",
        TASK,
        max_steps=6,
        check=verify(check),
    )
    assert outcome == Accepted("")
    told = model.feedback()[0]
    assert "total.txt: empty (0 bytes)." in told
    assert "log.txt (4 bytes, 2 lines): unchanged since the task began." in told
    assert ("the check failed (exit 1) and printed nothing" in told) == (level == "output")
    assert "no output" not in told


FIX = "`python3 stats.py` crashes. Fix last() in stats.py so that it returns the last element."
BROKEN = "def last(xs):\n    return xs[len(xs)]\n\n\nprint(last([3, 1, 4]))\n"
CHECK = 'test "$(python3 stats.py)" = 4'


def fixed(lines: str) -> str:
    return f"```bash\ncat > stats.py <<'EOF'\n{lines}EOF\n```"


def test_an_edit_that_did_not_happen_is_said_unchanged(tmp_path: Path) -> None:
    (tmp_path / "stats.py").write_text(BROKEN)
    no_redirect = "```bash\ncat stats.py <<'EOF'\ndef last(xs):\n    return xs[-1]\nEOF\n```"
    model = Seen([no_redirect, SUBMIT, fixed(BROKEN.replace("len(xs)", "-1")), SUBMIT])
    _, outcome = run(
        model, regex_parse(), local_env(cwd=str(tmp_path)),
        lambda messages, outcome: (messages, outcome), "You fix code.", FIX, max_steps=6,
        check=verify(command_check(CHECK, feedback="verdict")),
    )  # fmt: skip
    assert outcome == Accepted("")
    assert "stats.py (62 bytes, 5 lines): unchanged since the task began." in model.feedback()[0]


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_rewrite_that_dropped_lines_is_shown_as_the_lines_removed_and_added(
    tmp_path: Path, driver: str
) -> None:
    (tmp_path / "stats.py").write_text(BROKEN)
    model = Seen([fixed("def last(xs):\n    return xs[-1]\n"), SUBMIT, SUBMIT])
    check = verify(command_check(CHECK, feedback="verdict"))

    def emit(messages: Sequence[Message], outcome: object) -> None:
        return None

    if driver == "run":
        env = local_env(cwd=str(tmp_path))
        run(model, regex_parse(), env, emit, "You fix code.", FIX, max_steps=3, check=check)
    else:
        aenv = alocal_env(cwd=str(tmp_path))
        ran = arun(model, regex_parse(), aenv, emit, "You fix code.", FIX, max_steps=3, check=check)
        asyncio.run(ran)
    told = model.feedback()[0]
    assert (
        "stats.py (32 bytes, 2 lines), changed since the task began:\n"
        "  -    return xs[len(xs)]\n  -\n  -\n  -print(last([3, 1, 4]))\n  +    return xs[-1]\n"
    ) in told


def test_a_file_the_agent_deleted_is_said_to_have_existed(tmp_path: Path) -> None:
    (tmp_path / "stats.py").write_text(BROKEN)
    model = Seen(["```bash\nrm stats.py\n```", SUBMIT, SUBMIT])
    run(
        model, regex_parse(), local_env(cwd=str(tmp_path)),
        lambda messages, outcome: (messages, outcome), "You fix code.", FIX, max_steps=3,
        check=verify(command_check(CHECK)),
    )  # fmt: skip
    assert "stats.py: does not exist (it did when the task began)." in model.feedback()[0]


def test_an_environment_the_check_runs_no_shell_in_is_sent_nothing_by_the_judge() -> None:
    """A check of the judge's own (a function, the plan domain's) does not say the run's
    environment takes shell commands: the judge sends it none, at the start or after a NO."""
    env = FakeEnv()
    verdicts = iter([no("not yet"), yes()])
    model = Seen(["```bash\necho one\n```", "```bash\nsubmit a\n```", "```bash\nsubmit b\n```"])
    _, outcome = run(
        model, regex_parse(), env, lambda messages, outcome: (messages, outcome),
        "You write files.", TASK, max_steps=4, check=verify(lambda claim: next(verdicts)),
    )  # fmt: skip
    assert outcome == Accepted("b")
    assert env.seen == ["echo one", "submit a", "submit b"]
    assert "The files the task names" not in model.feedback()[0]


def feedback_of(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages if isinstance(m, User) and m.kind == "feedback"]


def test_a_resumed_run_shows_the_files_as_they_are_not_as_unchanged(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("3\n4\n")
    check = command_check('test "$(cat total.txt)" = 7', feedback="verdict")
    first, _ = run(
        scripted_invoke(["```bash\necho 34 > total.txt\n```", SUBMIT]), regex_parse(),
        local_env(cwd=str(tmp_path)), lambda messages, outcome: (messages, outcome),
        "You sum numbers.", TASK, max_steps=2, check=verify(check),
    )  # fmt: skip
    assert "total.txt (3 bytes, 1 line):\n  34" in feedback_of(first)[0]
    again, _ = run(
        scripted_invoke([SUBMIT]), regex_parse(), local_env(cwd=str(tmp_path)),
        lambda messages, outcome: (messages, outcome), max_steps=1, resume=first,
        check=verify(check),
    )  # fmt: skip
    # total.txt is as the earlier run left it, which is not how the task began
    assert len(feedback_of(again)) == 2  # the earlier run's NO, and this run's
    told = feedback_of(again)[-1]
    assert "total.txt (3 bytes, 1 line):\n  34" in told
    assert "unchanged since the task began" not in told
