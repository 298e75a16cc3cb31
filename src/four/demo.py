"""An offline demo: a scripted model drives real bash through the loop, twice.

    python -m four.demo

1. A plain run: the model runs commands and submits with the exit signal.
2. A verified run: the model claims a failing test is fixed before it is; the check
   (the test itself) says NO, the model reads why and fixes it, the check says YES.
   The verdicts' receipts are stored in the trajectory and audited.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from four import (
    Assistant,
    Message,
    ToolResult,
    User,
    audit,
    command_check,
    load_trajectory,
    local_env,
    regex_parse,
    run,
    save_trajectory,
    scripted_invoke,
)

PLAIN = [
    "Let me look around first.\n\n```bash\nmkdir -p demo && cd demo && printf 'a\\nb\\nc\\n' > x.py && "
    "printf 'print(1)\\n' > y.py && ls\n```",
    "Now count the lines of each Python file.\n\n```bash\ncd demo && wc -l *.py\n```",
    "Checking bash features work (not sh):\n\n```bash\n[[ -d demo ]] && echo {1..3}\n```",
    "All done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ncd demo && wc -l *.py | tail -1\n```",
]

CALC = "add() { echo $(( $1 - $2 )); }\n"  # the bug the agent must fix
TEST = (
    'source ./calc.sh\n[ "$(add 2 2)" = 4 ] || { echo "FAILED test_add: add 2 2 gave $(add 2 2)"; exit 1; }\n'
    'echo "1 passed"\n'
)
SUBMIT = "The tests pass now.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\necho fixed add\n```"


def fix_after_feedback(history: Sequence[Message]) -> str:
    """The scripted model reads the check's feedback, then makes the fix it asks for."""
    feedback = next(m.content for m in reversed(history) if isinstance(m, User))
    if "FAILED test_add" not in feedback:
        return "```bash\ncat calc.sh\n```"
    return (
        "The check says add is wrong. Fixing it:\n\n```bash\nsed -i 's/- \\$2/+ $2/' calc.sh\n```"
    )


def show(path: Path) -> str | None:
    trajectory = load_trajectory(path)
    for message in trajectory.messages[2:]:
        if isinstance(message, Assistant):
            print(f"\n--- model ---\n{message.content}")
        elif isinstance(message, User | ToolResult):
            print(f"--- back to the model ---\n{message.content}")
    print(f"\noutcome: {trajectory.outcome}")
    print(f"final output: {trajectory.detail.output or ''!r}")
    print(f"trajectory: {path}")
    return trajectory.outcome


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="four-demo-"))
    print("=== 1. a plain run ===")
    plain = run(
        G=scripted_invoke(PLAIN),
        V1=regex_parse(),
        V2=local_env(cwd=str(work)),
        emit=save_trajectory(work / "trajectories"),
        system="You are a helpful assistant that executes bash commands.",
        prompt="Create two Python files and count the lines in each",
        max_steps=10,
    )
    first = show(plain)

    print("\n=== 2. a verified run: the tests decide when it is done ===")
    (work / "calc.sh").write_text(CALC)
    (work / "test_calc.sh").write_text(TEST)
    verified = run(
        G=scripted_invoke([SUBMIT, fix_after_feedback, SUBMIT]),
        V1=regex_parse(),
        V2=local_env(cwd=str(work)),
        emit=save_trajectory(work / "trajectories"),
        system="You fix bugs with bash.",
        prompt="Make test_calc.sh pass.",
        max_steps=10,
        check=command_check("bash test_calc.sh", timeout=30, feedback="output"),
    )
    second = show(verified)
    result = audit(verified)
    print(
        f"audit: {'valid' if result.valid else 'INVALID'} ({result.evaluations} evaluations, "
        f"bound {result.initial_rank + 1})"
    )
    ok = first == "exit:task_complete" and second == "accepted" and result.valid
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
