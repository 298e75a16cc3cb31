"""An offline demo: a scripted model drives real bash through the loop.

python -m four.demo
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from four import (
    Assistant,
    ToolResult,
    User,
    load_trajectory,
    local_env,
    regex_parse,
    run,
    save_trajectory,
    scripted_invoke,
)

SCRIPT = [
    "Let me look around first.\n\n```bash\nmkdir -p demo && cd demo && printf 'a\\nb\\nc\\n' > x.py && "
    "printf 'print(1)\\n' > y.py && ls\n```",
    "Now count the lines of each Python file.\n\n```bash\ncd demo && wc -l *.py\n```",
    "Checking bash features work (not sh):\n\n```bash\n[[ -d demo ]] && echo {1..3}\n```",
    "All done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\ncd demo && wc -l *.py | tail -1\n```",
]


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="four-demo-"))
    path = run(
        G=scripted_invoke(SCRIPT),
        V1=regex_parse(),
        V2=local_env(cwd=str(work)),
        emit=save_trajectory(work / "trajectories"),
        system="You are a helpful assistant that executes bash commands.",
        prompt="Create two Python files and count the lines in each",
        max_steps=10,
    )
    trajectory = load_trajectory(path)
    for message in trajectory.messages[2:]:
        if isinstance(message, Assistant):
            print(f"\n--- model ---\n{message.content}")
        elif isinstance(message, User | ToolResult):
            print(f"--- observation ---\n{message.content}")
    print(f"\noutcome: {trajectory.outcome}")
    print(f"final output: {trajectory.detail.get('output', '')!r}")
    print(f"trajectory: {path}")
    return 0 if trajectory.outcome == "exit:task_complete" else 1


if __name__ == "__main__":
    sys.exit(main())
