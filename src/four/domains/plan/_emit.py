"""emit of the plan domain: the launch folder, sealed with the plan's own trajectory.

The folder holds ``tasks.jsonl`` (what ``four batch`` runs), ``four.toml`` (its flags),
``PLAN.md`` (for the person), ``system.md`` (a system prompt of the launch's own, if
any) and ``held_out/<id>/...``. It is written as the artifact of the planning run
(``save_with_artifact``), so every file's SHA-256 is under that run's seal: ``four audit
LAUNCH/`` fails when a file was changed, removed or added since it was validated.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from four._outcomes import Outcome
from four._types import JSON
from four.domains.plan._launch import Launch, cost
from four.domains.plan._plan import Plan, PlanTask
from four.domains.plan._validate import PlanEnv, Rejection

OURS = ("tasks.jsonl", "four.toml", "PLAN.md", "system.md", "held_out")
"""What a launch folder holds besides the planning run's trajectory."""
KEY = "launch"
"""The trajectory's record of the launch (``stats.launch``)."""
SUPERSEDED = ".superseded"

if TYPE_CHECKING:
    from four.trajectory import ArtifactRecorder
    from four.trajectory._sign import SigningKey


def write_launch(folder: Path, plan: Plan, launch: Launch, mission: str,
                 rejected: Sequence[Rejection]) -> dict[str, JSON]:  # fmt: skip
    """Write the launch's files into ``folder``; what the trajectory records of them."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(_item(task, plan, launch), ensure_ascii=False) for task in plan.tasks]
    (folder / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for task in plan.tasks:
        for place, content in task.held_out.items():
            target = folder / "held_out" / task.id / place
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
    if plan.system is not None:
        (folder / "system.md").write_text(plan.system, encoding="utf-8")
    (folder / "four.toml").write_text(settings_text(launch, plan), encoding="utf-8")
    (folder / "PLAN.md").write_text(plan_text(plan, launch, mission, rejected), encoding="utf-8")
    return {"tasks": len(plan.tasks), "mission": mission, "workspace": str(launch.workspace)}


def _item(task: PlanTask, plan: Plan, launch: Launch) -> dict[str, JSON]:
    item: dict[str, JSON] = {"id": task.id, "task": task.task, "domain": task.domain,
                             "check": task.check, "cwd": str(launch.workspace)}  # fmt: skip
    if task.max_steps is not None:
        item["max_steps"] = min(task.max_steps, launch.max_steps)
    if launch.feedback != "verdict":
        item["feedback"] = launch.feedback
    places = sorted({PurePosixPath(p).parts[0] for p in task.held_out})
    if places:
        item["check_files"] = [f"{p}=held_out/{task.id}/{p}" for p in places]
    return item


def _toml(value: JSON) -> str:
    """A TOML value: a basic string, a number or a boolean."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = json.dumps(str(value), ensure_ascii=False)  # a TOML basic string but for DEL
    return text.replace("\x7f", "\\u007f")


_ABOUT = {
    "model": "the agents' model (litellm name)",
    "local": "the agents' model, run on this machine",
    "api-base": "an OpenAI-compatible server",
    "env": "where the agents' commands run",
    "image": "the container image",
    "workers": "runs at once",
    "max-steps": "model calls per run at most",
    "timeout": "seconds a run may take",
    "command-timeout": "seconds one command may take",
    "cost-limit": "USD per run at most",
    "feedback": "what a failing check tells the agent",
    "system": "the launch's own system prompt",
}


def settings_text(launch: Launch, plan: Plan) -> str:
    """``four.toml``: the flags ``four batch`` takes for this launch, one a line."""
    settings = launch.settings()
    if plan.system is not None:
        settings["system"] = "system.md"
    lines = [
        "# four batch reads this file when it runs tasks.jsonl beside it: each key is one",
        "# of its flags; a flag given on the command line wins. Edit, then validate again:",
        "# four plan --check THIS_FOLDER",
    ]
    for key, value in settings.items():
        lines.append(f"{key} = {_toml(value)}  # {_ABOUT.get(key, '')}".rstrip(" #"))
    return "\n".join(lines) + "\n"


def run_line(task: PlanTask, launch: Launch, folder: Path, plan: Plan) -> str:
    """The ``four run`` command line that runs one task of the launch as ``four batch``
    does."""
    words = ["four", "run", "--domain", task.domain, "--cwd", str(launch.workspace)]
    words += ["--check", task.check]
    for place in sorted({PurePosixPath(p).parts[0] for p in task.held_out}):
        words += ["--check-files", f"{place}={folder / 'held_out' / task.id / place}"]
    for key, value in launch.settings().items():
        if key == "workers":
            continue
        if key == "local":
            words += ["--local", str(value)]
        elif key == "max-steps" and task.max_steps is not None:
            words += ["--max-steps", str(min(task.max_steps, launch.max_steps))]
        else:
            words += [f"--{key}", str(value)]
    if plan.system is not None:
        words += ["--system", str(folder / "system.md")]
    return shlex.join([*words, task.task])


def plan_text(plan: Plan, launch: Launch, mission: str, rejected: Sequence[Rejection]) -> str:
    """``PLAN.md``: the tasks, why each check proves its task done, the most the launch
    can cost, and what was rejected during validation and why."""
    folder = launch.folder
    bound = cost(launch, [t.max_steps or launch.max_steps for t in plan.tasks])
    out = [f"# Launch: {mission.strip().splitlines()[0][:100] if mission.strip() else ''}", ""]
    out += ["## Mission", "", mission.strip(), ""]
    out += [f"The agents work in `{launch.workspace}`, their commands in `--env {launch.env}`.", ""]
    out += ["## Tasks", ""]
    for task in plan.tasks:
        steps = min(task.max_steps or launch.max_steps, launch.max_steps)
        out += [f"### {task.id} ({task.domain}, at most {steps} steps)", "", task.task.strip(), ""]
        out += ["Check (exits 0 when the task is done; it failed, the same way twice, on the "
                "starting workspace):", "", "```bash", task.check, "```", ""]  # fmt: skip
        out += [f"Why it proves the task done: {task.why}", ""]
        if task.held_out:
            names = ", ".join(f"`held_out/{task.id}/{p}`" for p in sorted(task.held_out))
            out += [f"Held-out files (put in place only while the check runs): {names}", ""]
    out += ["## What it costs at most", "", *bound.lines(), ""]
    out += ["## Rejected during validation", ""]
    if not rejected:
        out += ["Nothing: the first plan passed.", ""]
    for attempt in sorted({r.attempt for r in rejected}):
        out += [f"Plan {attempt}:", ""]
        out += [f"- {r}" for r in rejected if r.attempt == attempt]
        out += [""]
    warnings = _warnings(plan, launch)
    if warnings:
        out += ["## Warnings", "", *[f"- {w}" for w in warnings], ""]
    tasks = shlex.quote(str(folder / "tasks.jsonl"))
    out += ["## Running it", "", "Check the model, the endpoint and the wall-clock budget "
            "first, then run it:", "", "```bash", f"four doctor batch {tasks} --probe",
            f"four batch {tasks}", "```", "", "One task alone (the same settings, as flags):",
            ""]  # fmt: skip
    for task in plan.tasks:
        out += ["```bash", run_line(task, launch, folder, plan), "```", ""]
    out += ["Before and after editing:", "", "```bash",
            f"four audit {shlex.quote(str(folder))}",
            f"four plan --check {shlex.quote(str(folder))}", "```", ""]  # fmt: skip
    return "\n".join(out)


def _warnings(plan: Plan, launch: Launch) -> list[str]:
    found = []
    if launch.workers > 1 and len(plan.tasks) > 1 and launch.env != "docker":
        found.append(f"the {len(plan.tasks)} tasks share the workspace {launch.workspace} and "
                     f"{launch.workers} run at once: their edits can collide")  # fmt: skip
    if launch.env in ("local", "persistent"):
        found.append("--env local: the agents' commands can read and write anything you can "
                     "(this folder and its checks too); run untrusted models in sandbox or docker")  # fmt: skip
    return found


def launch_emit(
    folder: Path,
    env: PlanEnv,
    mission: str,
    signing_key: SigningKey | None = None,
    keep: Mapping[str, bytes] | None = None,
) -> ArtifactRecorder:
    """emit of the plan domain: the planning run's trajectory in ``folder``, and, when
    the run ended with a validated plan, the launch beside it under its seal. ``keep``:
    files written as they are (a person's edited ``tasks.jsonl`` and ``four.toml``, when
    an existing launch is validated again), not made anew from the plan."""
    from four.trajectory import save_trajectory, save_with_artifact

    def artifact(stem: Path, outcome: Outcome) -> Mapping[str, JSON]:
        staging = stem.parent
        if env.accepted is None:  # an existing launch is left as it is
            if not (folder / "tasks.jsonl").exists():
                text = plan_failed(env, mission, outcome)
                (staging / "PLAN.md").write_text(text, encoding="utf-8")
            return {"valid": False, "rejected": len(env.rejected)}
        _retire(folder, keep=stem.name)
        record = write_launch(staging, env.accepted, env.launch, mission, env.rejected)
        for name, data in (keep or {}).items():
            (staging / name).write_bytes(data)
        return {**record, "valid": True, "rejected": len(env.rejected)}

    return save_with_artifact(save_trajectory(folder, signing_key=signing_key), KEY, artifact)


def plan_failed(env: PlanEnv, mission: str, outcome: Outcome) -> str:
    last = max((r.attempt for r in env.rejected), default=0)
    lines = [f"- {r}" for r in env.rejected if r.attempt == last]
    return "\n".join([
        "# No launch", "", "## Mission", "", mission.strip(), "",
        f"The planning run ended `{outcome.text}` without a plan that validates.", "",
        "## The last plan's problems", "", *(lines or ["- (no plan was read)"]), "",
    ])  # fmt: skip


def _retire(folder: Path, keep: str) -> None:
    """Take an earlier launch out of ``folder``: its files removed, its trajectories
    renamed ``*.superseded`` (kept, no longer audited as the launch's)."""
    import shutil

    for name in OURS:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    for path in folder.iterdir():
        if path.suffix in (".json", ".jsonl") and not path.name.startswith(keep.split(".")[0]):
            os.rename(path, path.with_name(path.name + SUPERSEDED))
