"""The seed's example, verbatim, against a model that answers on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from four import load_trajectory
from tests._server import MESSAGES, LoopbackServer, anthropic, anthropic_problems

FIND = "```bash\nfind /tmp -maxdepth 1 -name '*.py' | head -3 | xargs -r wc -l\n```"
DONE = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\necho counted\n```"


def test_seed_example_runs_verbatim(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_BASE", server.root)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    server.push(anthropic("Let me look.\n\n" + FIND), anthropic("Done.\n\n" + DONE))

    # --- the seed, verbatim ---
    from four import litellm_invoke, local_env, regex_parse, run, save_trajectory

    run(
        G=litellm_invoke("anthropic/claude-sonnet-4-5-20250929"),
        V1=regex_parse(),
        V2=local_env(),
        emit=save_trajectory(),
        system="You are a helpful assistant that executes bash commands.",
        prompt="Find all Python files in /tmp and count lines in each",
        max_steps=50,
    )
    # --- end of the seed ---

    (saved,) = (tmp_path / "trajectories").glob("*.json")
    trajectory = load_trajectory(saved)
    assert trajectory.outcome == "exit:task_complete"
    assert trajectory.detail.output == "counted"
    bodies = server.bodies(MESSAGES)
    assert len(bodies) == 2
    assert all(anthropic_problems(body) == [] for body in bodies)
    assert "<returncode>0</returncode>" in str(bodies[1]["messages"])
