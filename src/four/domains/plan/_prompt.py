"""What the planning model is told: the system prompt, and the mission with the facts
of the workspace its agents will start from."""

from __future__ import annotations

import os
from pathlib import Path

from four.domains.plan._launch import Launch

SYSTEM = """You plan a launch: a batch of tasks for coding agents that run overnight with
nobody watching. Each task is judged by its check, a shell command run in the agents'
workspace when an agent says it is done: exit 0 means done. Nobody reads the agents'
claims; only the checks decide, so each check must prove its task done.

Reply with the whole plan in one ```json block:

```json
{"tasks": [
  {"id": "greet",
   "task": "Write greet.sh, an executable shell script that prints hello, NAME for its first argument.",
   "check": "test -x greet.sh && test \\"$(./greet.sh Ada)\\" = 'hello, Ada'",
   "why": "it runs the script the task asks for on an input and compares its output"}
]}
```

Fields of a task: id (letters, digits, '-', '_'; unique), task (what the agent is told:
self-contained, naming files and expected behaviour), check (one shell command), why
(one sentence: why passing the check means the task is done). Optional: domain (bash,
the default; python for Python edits judged by ruff and mypy; cli for a C tool with a
man page), max_steps (the agent's model calls, at most the launch's), held_out (files
the check needs that the agent must not see, as {"hidden/test_greet.sh": "content"}:
each in a folder of its own, put in place only while the check runs).

Your plan is validated before anything runs, and every problem is told back to you:
- each check is run on the starting workspace, where it must fail (the work is not
  done yet) and fail the same way twice (no randomness, no clock, no network);
- the programs and options the tasks and checks use must exist;
- held-out files must be out of the agents' reach.
Fix what is reported and reply with the whole plan again. Keep tasks small and
independent: each agent sees only its own task.
"""


def mission_prompt(mission: str, launch: Launch, limit: int = 60) -> str:
    """The planning model's task: the mission, and where and how the agents will work."""
    listing = _listing(launch.workspace, limit)
    return (
        f"Mission: {mission.strip()}\n\n"
        f"The agents work in {launch.workspace} (commands run in --env {launch.env}), "
        f"each with at most {launch.max_steps} model calls. Its files"
        f"{' (the first ' + str(limit) + ')' if len(listing) >= limit else ''}:\n"
        + ("\n".join(listing) if listing else "(none: it is empty)")
        + "\n\nWrite the plan."
    )


def _listing(folder: Path, limit: int) -> list[str]:
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            found.append(os.path.relpath(os.path.join(dirpath, name), folder))
            if len(found) >= limit:
                return found
    return found
