"""With `recap=True`, an attempt after the first is told what the attempts before it did:
their commands (with a failing one's exit status), the files they changed, how they ended
and the check's last word; the first attempt, and every attempt by default, is told the
task alone. Scripted models over real bash."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from returns.result import Result

from four import Message, Reply, User, load_trajectory, regex_parse, save_trajectory
from four._types import ModelError
from four.checks import command_check, verify
from four.execute import local_env
from four.invoke import scripted_invoke
from four.search import Attempt, attempts

SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
TASK = "2 + 2 into answer.txt"


class Told:
    """The task each attempt's model was given (its first user message)."""

    def __init__(self) -> None:
        self.tasks: dict[int, str] = {}

    def invoke(self, a: Attempt, replies: Sequence[str]) -> object:
        scripted = scripted_invoke(list(replies))

        def G(messages: Sequence[Message]) -> Result[Reply, ModelError]:
            first = next(m for m in messages if isinstance(m, User))
            self.tasks.setdefault(a.index, first.content)
            return scripted(messages)

        return G


def search(tmp_path: Path, scripts: dict[int, list[str]], **options: object) -> tuple[Told, object]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the user's\n")
    told = Told()
    check = verify(command_check("grep -qx 4 answer.txt"), retries_per_reason=1)

    def make(a: Attempt) -> Path:
        return a.run(
            told.invoke(a, scripts[a.index]),  # type: ignore[arg-type]
            regex_parse(),
            local_env(cwd=a.cwd),
            save_trajectory(tmp_path / "runs"),
            max_steps=4,
            check=check,
        )

    found = attempts(make, len(scripts), task=TASK, workspace=work, **options)  # type: ignore[arg-type]
    return told, found


def test_attempt_2_is_told_attempt_1_s_commands_files_end_and_check(tmp_path: Path) -> None:
    scripts = {
        1: ["```bash\necho 5 > answer.txt\n```", SUBMIT, "```bash\nrm notes.txt\n```", SUBMIT],
        2: ["```bash\necho 4 > answer.txt\n```", SUBMIT],
    }
    told, found = search(tmp_path, scripts, recap=True)
    assert found.ended == "accepted"  # type: ignore[attr-defined]
    assert told.tasks[1] == TASK
    assert told.tasks[2] == (
        f"{TASK}\n\nEarlier attempts at this task were not accepted. Each began from the same "
        "files as you do now (their changes are undone). Do not do what they did again: read "
        "the task once more, look at the files, and find another way.\n\n"
        "Attempt 1 was held: its work was submitted and not accepted.\n"
        "Its commands: `echo 5 > answer.txt` · `rm notes.txt`\n"
        "The files it changed: answer.txt, notes.txt.\n"
        # The check's word at the feedback level the run had (here the default, verdict).
        "The check said: Your submission was checked and not accepted (failure 1; the check's "
        "details are not shown)."
    )
    # The recap is part of the attempt's sealed record.
    second = found.members[1].path  # type: ignore[attr-defined]
    assert load_trajectory(second).messages[1].content == told.tasks[2]


def test_each_later_attempt_is_told_of_every_one_before_it(tmp_path: Path) -> None:
    looks = [
        "```bash\nls\n```",
        "```bash\ncat notes.txt\n```",
        "```bash\nfalse\n```",
        "```bash\nls\n```",
    ]
    scripts = {1: looks, 2: looks, 3: ["```bash\necho 4 > answer.txt\n```", SUBMIT]}
    told, found = search(tmp_path, scripts, recap=True)
    assert found.ended == "accepted"  # type: ignore[attr-defined]
    third = told.tasks[3]
    assert third.count("used all its steps without an accepted submission.") == 2
    assert "Attempt 1 used" in third and "Attempt 2 used" in third
    # Each command once, in order, a failing one with its status; no file changed.
    assert "Its commands: `ls` · `cat notes.txt` · `false` (exit 1)\nIt changed no file." in third
    assert "The check said" not in third  # nothing was submitted, so nothing was judged


def test_by_default_every_attempt_is_told_the_task_alone(tmp_path: Path) -> None:
    scripts = {1: ["```bash\necho 5 > answer.txt\n```", SUBMIT, "```bash\nls\n```", SUBMIT],
               2: ["```bash\necho 4 > answer.txt\n```", SUBMIT]}  # fmt: skip
    told, found = search(tmp_path, scripts)
    assert found.ended == "accepted"  # type: ignore[attr-defined]
    assert told.tasks == {1: TASK, 2: TASK}


def test_recap_must_be_true_or_false(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="recap=1: give True or False"):
        search(tmp_path, {1: [SUBMIT]}, recap=1)


def test_a_long_command_is_named_by_its_first_line_cut_short() -> None:
    from four._outcomes import StepsExhausted
    from four.search._recap import summary

    heredoc = "cat > fix.py <<'EOF'\n" + "x = 1\n" * 50 + "EOF"
    long = "echo " + "a" * 200
    text = summary(3, StepsExhausted(), [User("", "observation", 0, heredoc),
                                          User("", "observation", 0, long)], None)  # fmt: skip
    assert "`cat > fix.py <<'EOF' ...`" in text
    assert f"`echo {'a' * 92}...`" in text  # 100 characters
    assert "changed" not in text  # no copy of its own: the files it changed are not known


def test_an_audit_refuses_a_recap_of_attempts_not_yet_ended(tmp_path: Path) -> None:
    from four.search import audit_group
    from four.search._recap import recap

    work = tmp_path / "work"
    work.mkdir()
    claimed = f"{TASK}\n\n{recap(['Attempt 1 was held: its work was submitted and not accepted.'])}"

    def make(a: Attempt) -> Path:
        return a.run(
            scripted_invoke(["```bash\necho 4 > answer.txt\n```", SUBMIT]),
            regex_parse(),
            local_env(cwd=a.cwd),
            save_trajectory(tmp_path / "runs"),
            prompt=claimed,  # attempt 1 told of itself
            max_steps=4,
            check=verify(command_check("grep -qx 4 answer.txt")),
        )

    found = attempts(make, 2, task=TASK, workspace=work, recap=True)
    assert found.ended == "accepted"
    audit = audit_group(found.record or "")
    assert audit.errors == ("attempt 1: its recap names attempts [1]",)
