"""The verified loop against real bash: the tests decide, not the model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from four import Message, User, audit, load_trajectory, run, save_trajectory, scripted_invoke
from four.checks import Claim, all_of, command_check, file_check, verify
from four.execute import local_env
from four.parse import regex_parse
from four.quaternary import Verdict

CHECK_SH = """\
[ -f answer.txt ] || { echo "FAIL: answer.txt missing"; exit 1; }
grep -qx 42 answer.txt || { echo "FAIL: answer.txt is not 42"; exit 1; }
echo ok
"""
SUBMIT = "I am done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ncat answer.txt 2>/dev/null || true\n```"


def fix_from_feedback(history: Sequence[Message]) -> str:
    """The scripted model reads the check's feedback and fixes what it names."""
    feedback = next(m.content for m in reversed(history) if isinstance(m, User))
    if "answer.txt missing" in feedback:
        return "```bash\necho 41 > answer.txt\n```"
    assert "answer.txt is not 42" in feedback, feedback
    return "```bash\necho 42 > answer.txt\n```"


def test_two_failures_with_different_reasons_then_accepted(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text(CHECK_SH)
    model = scripted_invoke([SUBMIT, fix_from_feedback, SUBMIT, fix_from_feedback, SUBMIT])
    path = run(
        model,
        regex_parse(),
        local_env(cwd=str(tmp_path)),
        save_trajectory(tmp_path / "runs"),
        "Make check.sh pass.",
        "Write the answer.",
        max_steps=10,
        check=command_check("bash check.sh", timeout=30, feedback="output"),
    )
    trajectory = load_trajectory(path)
    assert trajectory.outcome == "accepted"
    assert trajectory.detail.output == "42"
    record = trajectory.stats.verdicts
    assert record is not None and record.evaluations == 3
    reasons = [entry.reason for entry in record.log if entry.reason is not None]
    assert reasons == [
        "`bash check.sh` failed (exit 1): FAIL: answer.txt missing",
        "`bash check.sh` failed (exit 1): FAIL: answer.txt is not 42",
    ]
    result = audit(path)
    assert result.valid and result.evaluations == 3


def test_a_timeout_is_maybe_then_rerun_with_more_time(tmp_path: Path) -> None:
    (tmp_path / "slow.sh").write_text(
        "if [ -f ran-once ]; then exit 0; fi; touch ran-once; sleep 5\n"
    )
    seen = []
    check = command_check("bash slow.sh", timeout=0.5)

    def spy(claim: Claim) -> object:
        result = check(claim)
        seen.append(result.verdict)
        return result

    _, outcome = run(
        scripted_invoke([SUBMIT]),
        regex_parse(),
        local_env(cwd=str(tmp_path)),
        lambda m, o: (m, o),
        "s",
        "p",
        check=verify(spy, evidence=check.evidence),  # type: ignore[arg-type]
    )
    assert seen == [Verdict.MAYBE, Verdict.YES]
    assert outcome.text == "accepted"


def test_file_check_and_all_of(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("result: 7\n")
    env = local_env(cwd=str(tmp_path))
    claim = Claim("", (), env)
    assert file_check("out.txt", contains="result: 7")(claim).verdict == Verdict.YES
    assert file_check("out.txt", pattern="^result: [0-9]+$")(claim).verdict == Verdict.YES
    assert file_check("missing.txt")(claim).reason == "missing.txt does not exist"
    assert file_check("out.txt", contains="8")(claim).reason == "out.txt does not contain '8'"
    unmet = file_check("out.txt", contains="8", pattern="^result")(claim)  # both must hold
    assert unmet.reason == "out.txt does not contain '8'"
    both = all_of(file_check("out.txt"), command_check("exit 2", timeout=5))
    assert both(claim).reason == "`exit 2` failed (exit 2): no output"
