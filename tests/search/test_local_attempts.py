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

STORY = (
    "Once upon a time there was a small robot.\nIt liked to count words,\n"
    "and it counted them all day long.\n\nThe end.\n"
)
TASK = "How many words does story.txt have? Write only the number to words.txt."
# The answer compared by its SHA-256, so no feedback can hand it over (the bench's
# value_check).
CHECK = (
    'test "$(tr -d " \\t\\r\\n" < words.txt | sha256sum | cut -c1-64)" = '
    "535fa30d7e25dd8a49f1536779734ec8286108d115da5045d77f3b4185d8f790"
)


def test_a_task_failed_at_temperature_0_is_solved_within_4_attempts(
    model: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "story.txt").write_text(STORY)
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
