"""The plan domain put together: ``compile_launch`` (a mission to a launch folder) and
``check_launch`` (an existing launch validated again, the same loop with its plan as
the only reply)."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from four._types import JSON, Execute, Invoke
from four.checks import Claim, verify
from four.domains import Domain, DomainSetup
from four.domains.plan._emit import OURS, SUPERSEDED, launch_emit
from four.domains.plan._launch import Launch
from four.domains.plan._plan import Plan, PlanTask, plan_parse
from four.domains.plan._prompt import SYSTEM, mission_prompt
from four.domains.plan._validate import PlanEnv, Rejection, digest, plan_env
from four.quaternary import CheckResult, no, yes
from four.types import Recorder, Verify

if TYPE_CHECKING:
    from four.trajectory._sign import SigningKey


@dataclass(frozen=True, slots=True)
class PlanCheck:
    """The plan domain's check: YES only for a plan V2 validated in this run."""

    env: PlanEnv

    def __call__(self, claim: Claim, /) -> CheckResult:
        if digest(claim.output) in self.env.validated:
            return yes()
        return no("this plan was not validated: reply with the plan in one ```json block",
                  feedback="full")  # fmt: skip


def plan_domain(launch: Launch, mission: str, keep: Mapping[str, bytes] | None = None) -> Domain:
    """The plan domain's functions for one launch (not one of ``four run``'s domains:
    its V2 and emit need the launch's settings)."""

    def environment(setup: DomainSetup) -> Execute:
        return plan_env(launch)

    def emit(setup: DomainSetup, env: Execute) -> Recorder[Path]:
        assert isinstance(env, PlanEnv)
        return launch_emit(setup.output_dir, env, mission, setup.signing_key, keep)

    def check(setup: DomainSetup, env: Execute, command: str | None) -> Verify | None:
        assert isinstance(env, PlanEnv)
        return verify(PlanCheck(env), failures=2, last_judgement=False)

    return Domain("plan", "a mission compiled into a validated launch", SYSTEM, plan_parse,
                  environment, emit, check)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Compiled:
    """What a planning run made: the launch folder, its trajectory, how the run ended,
    the validated plan (None: none validated) and every rejection on the way."""

    folder: Path
    trajectory: Path
    outcome: str
    plan: Plan | None
    rejected: tuple[Rejection, ...]
    problem: str = ""  # why a validated plan's launch is not there (a full disk...)

    @property
    def valid(self) -> bool:
        return self.plan is not None and self.outcome == "accepted" and not self.problem


def compile_launch(
    mission: str,
    G: Invoke,
    launch: Launch,
    *,
    max_steps: int = 6,
    signing_key: SigningKey | None = None,
) -> Compiled:
    """Have ``G`` plan ``mission`` as ``launch``: each plan it writes is validated and
    its problems told back, for at most ``max_steps`` model calls. The launch folder is
    written only for a plan that validates (else a ``PLAN.md`` saying what was wrong).

    >>> compile_launch("  ", G=lambda m: None, launch=None)  # type: ignore[arg-type]
    Traceback (most recent call last):
    ...
    ValueError: mission: the mission is empty
    """
    if not mission.strip():
        raise ValueError("mission: the mission is empty")
    return _run(G, launch, mission, mission_prompt(mission, launch), max_steps, signing_key, None)


def _run(
    G: Invoke,
    launch: Launch,
    mission: str,
    prompt: str,
    max_steps: int,
    signing_key: SigningKey | None,
    keep: Mapping[str, bytes] | None,
) -> Compiled:
    from four import run
    from four.trajectory import load_trajectory

    domain = plan_domain(launch, mission, keep)
    setup = DomainSetup(launch.workspace, launch.folder, signing_key=signing_key)
    env = domain.environment(setup)
    assert isinstance(env, PlanEnv)
    path = run(G, domain.parse(), env, domain.emit(setup, env), domain.system, prompt,
               max_steps, check=domain.check(setup, env, None))  # fmt: skip
    record = load_trajectory(path)
    outcome = record.outcome or "unfinished"
    plan = env.accepted if outcome == "accepted" else None
    written = record.stats.launch
    problem = ""
    if plan is not None and not (isinstance(written, dict) and written.get("valid") is True):
        error = written.get("error") if isinstance(written, dict) else None
        problem = f"the launch could not be written: {error or 'no record of it'}"
    return Compiled(launch.folder, path, outcome, plan, tuple(env.rejected), problem)


def check_launch(
    folder: str | os.PathLike[str], *, signing_key: SigningKey | None = None
) -> Compiled:
    """Validate the launch in ``folder`` again, as it is now (after a person edited it):
    the same loop, its plan the only reply. Valid: sealed anew (the earlier record kept as
    ``*.superseded``). Not valid: the folder is left as it is, with the record of the
    rejection beside it, and ``four audit`` keeps failing on it."""
    from four.invoke import scripted_invoke

    plan, launch, mission = read_launch(folder)
    G = scripted_invoke([f"```json\n{plan.text()}\n```"])
    prompt = f"Validate the launch in {launch.folder} again.\n\n{mission_prompt(mission, launch)}"
    kept = {name: (launch.folder / name).read_bytes() for name in ("tasks.jsonl", "four.toml")}
    return _run(G, launch, mission, prompt, 1, signing_key, kept)


def read_launch(folder: str | os.PathLike[str]) -> tuple[Plan, Launch, str]:
    """The plan, settings and mission of a launch folder, as its files say now.
    ``ValueError`` names the file and what is wrong."""
    where = Path(folder).absolute()
    tasks_file = where / "tasks.jsonl"
    try:
        lines = tasks_file.read_text(encoding="utf-8").splitlines()
        settings = tomllib.loads((where / "four.toml").read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{where} is no launch: {exc.strerror}: {exc.filename}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}/four.toml: {exc}") from None
    tasks: list[PlanTask] = []
    workspace: str | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            tasks.append(_task(item, where))
        except (ValueError, KeyError, TypeError, OSError) as exc:
            raise ValueError(f"{tasks_file}:{number}: {exc}") from None
        workspace = workspace or str(item.get("cwd") or "")
    if not tasks:
        raise ValueError(f"{tasks_file} has no tasks")
    system_file = settings.get("system")
    system = (where / str(system_file)).read_text(encoding="utf-8") if system_file else None
    launch = _launch(settings, where, Path(workspace or os.getcwd()))
    return Plan(tuple(tasks), system), launch, _mission(where)


def _task(item: dict[str, JSON], folder: Path) -> PlanTask:
    held: dict[str, str] = {}
    files = item.get("check_files") or []
    for given in files if isinstance(files, list) else []:
        dest, _, source = str(given).partition("=")
        root = folder / source
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            held[f"{dest}/{path.relative_to(root).as_posix()}"] = path.read_text(encoding="utf-8")
    steps = item.get("max_steps")
    return PlanTask(str(item["id"]), str(item["task"]), str(item["check"]), _why(folder, str(item["id"])),
                    str(item.get("domain") or "bash"), steps if isinstance(steps, int) else None,
                    held)  # fmt: skip


def _why(folder: Path, task_id: str) -> str:
    """A task's reason, from PLAN.md (it is for the person, not for the runs)."""
    try:
        text = (folder / "PLAN.md").read_text(encoding="utf-8")
    except OSError:
        return "(not given)"
    head = f"### {task_id} ("
    if head in text:
        part = text.split(head, 1)[1]
        marker = "Why it proves the task done: "
        if marker in part:
            return part.split(marker, 1)[1].split("\n", 1)[0].strip() or "(not given)"
    return "(not given)"


def _launch(settings: dict[str, object], folder: Path, workspace: Path) -> Launch:
    def number(key: str, default: float) -> float:
        value = settings.get(key, default)
        return float(value) if isinstance(value, int | float) else default

    local = settings.get("local")
    return Launch(
        folder,
        workspace,
        env=str(settings.get("env", "local")),
        image=str(settings["image"]) if settings.get("image") else None,
        model=str(settings["model"]) if settings.get("model") else None,
        local=str(local) if isinstance(local, str) else None,
        api_base=str(settings["api-base"]) if settings.get("api-base") else None,
        workers=int(number("workers", 1)),
        max_steps=int(number("max-steps", 30)),
        timeout=number("timeout", 1800.0),
        cost_limit=number("cost-limit", 0.0) or None,
        command_timeout=number("command-timeout", 120.0),
    )


def _mission(folder: Path) -> str:
    try:
        text = (folder / "PLAN.md").read_text(encoding="utf-8")
    except OSError:
        return "(the mission is not recorded)"
    if "## Mission\n\n" in text:
        return text.split("## Mission\n\n", 1)[1].split("\n\nThe agents work in", 1)[0].strip()
    return "(the mission is not recorded)"


def launch_problems(folder: str | os.PathLike[str]) -> list[str]:
    """What is wrong with a launch folder beyond what its trajectory's seal shows: no
    sealed launch at all, or a file added since it was sealed (the seal lists every file
    it wrote with its digest; ``four audit`` checks those)."""
    where = Path(folder)
    record = _current(where)
    if record is None:
        return [f"{where}: no sealed launch (no planning run's record with a valid launch)"]
    listed = set(record)
    found = []
    for dirpath, dirnames, filenames in os.walk(where):
        dirnames.sort()
        for name in sorted(filenames):
            relative = Path(dirpath, name).relative_to(where).as_posix()
            trajectory = "/" not in relative and (
                name.endswith((".json", ".jsonl", SUPERSEDED)) or name.startswith(".")
            )
            if relative not in listed and not trajectory:
                found.append(f"{relative} was added after the launch was sealed")
        if Path(dirpath) == where:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
    return found


def _current(folder: Path) -> Mapping[str, JSON] | None:
    """The artifacts (file -> digest) of the latest planning run in ``folder`` that
    recorded a valid launch, as the trajectory reader gives them."""
    from four.trajectory import TrajectoryError, load_trajectory

    latest: Mapping[str, JSON] | None = None
    for path in sorted(folder.glob("*.json")):
        try:
            stats = load_trajectory(path).stats
        except (TrajectoryError, OSError):
            continue
        record, files = stats.launch, stats.artifacts
        if isinstance(record, dict) and record.get("valid") is True and isinstance(files, dict):
            latest = files
    return latest


__all__ = ["OURS", "Compiled", "check_launch", "compile_launch", "launch_problems", "read_launch"]
