"""The end-to-end claim on the built-in model: a task it fails at temperature 0 is solved
within 4 attempts, by `four run --local --check CMD --attempts 4` as a user types it.

Bounded as tests/invoke/test_local_model.py bounds a real-model test: few steps, short
replies, one thread; it needs the model pulled and the local extra, and skips (fails
with FOUR_REQUIRE_SERVICES=1) where they are missing. Slow under load, never timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from four.search import audit_group
from tests.invoke.test_local_model import SRC, model

__all__ = ["model"]  # the fixture

STATS = "def last(xs):\n    return xs[len(xs)]\n\n\nprint(last([3, 1, 4, 1, 5, 9]))\n"
TASK = (
    "`python3 stats.py` crashes with an IndexError. Fix the function last() in stats.py "
    "so that it returns the last element of the list."
)
# The output compared by its SHA-256 (the bench's output_check), and the function itself.
# (A word count was the task here until a NO showed the files the task names: shown
# "23 story.txt" in words.txt, greedy decoding fixes it in attempt 1.)
CHECK = (
    'test "$(python3 stats.py 2>/dev/null | sha256sum | cut -c1-64)" = '
    "2e6d31a5983a91251bfae5aefa1c0a19d8ba3cf601d0e8a706b4cfa9661a6b8a"
    " && python3 -c 'import stats; assert stats.last([7, 8]) == 8' >/dev/null"
)


def test_a_task_failed_at_temperature_0_is_solved_within_4_attempts(
    model: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "stats.py").write_text(STATS)
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "FOUR_LOCAL_THREADS": "1",
        "FOUR_LOCAL_MAX_TOKENS": "256",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run(
        [sys.executable, "-m", "four.cli", "run", TASK, "--local", "--check", CHECK,
         "--attempts", "4", "--max-steps", "6", "-o", str(tmp_path / "runs"), "--json"],
        cwd=work, env=env, capture_output=True, text=True, timeout=7200,
    )  # fmt: skip
    result = json.loads(done.stdout)
    members = result["attempts"]["members"]
    assert members[0]["temperature"] == 0.0
    assert members[0]["outcome"] != "accepted", "the premise: greedy decoding fails this task"
    assert result["outcome"] == "accepted" and done.returncode == 0, (members, done.stderr[-2000:])
    assert 2 <= len(members) <= 4
    assert subprocess.run(["bash", "-c", CHECK], cwd=work, check=False).returncode == 0
    assert audit_group(result["attempts"]["record"]).valid
