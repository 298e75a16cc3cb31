"""V2 of the plan domain: a plan validated deterministically, every failure told back.

For each task: its domain exists and can run here; its prompt and its check pass ``four
lint`` where the agents' commands run; its check, run on a copy of the starting
workspace in an environment of the launch's kind (contained like any command), fails
there, and fails the same way a second time; its held-out files are out of the agents'
reach. Task ids are unique, safe as folder names, and the tasks fit the agents' context
window. A plan with no rejection is submitted; otherwise the rejections go back to the
model as the observation of its plan, and every one is kept for ``PLAN.md``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from returns.result import Failure, Result, Success

from four._types import Action, ExecutionError, Observation, Submitted
from four.domains._start import _not_regular
from four.domains.plan._launch import Launch
from four.domains.plan._plan import Plan, PlanTask, plan_from_json
from four.observe._interface import Toolbox, toolbox
from four.quaternary import CheckResult, EvidenceNeed

SHELL_DOMAINS = ("bash", "python", "cli", "cli-go", "cli-rust")
"""Domains whose check is a shell command (the notebook's is Python after a re-run)."""
_ID = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a plan (``task`` None) or one of its tasks was refused, at which attempt."""

    attempt: int
    task: str | None
    reason: str

    def __str__(self) -> str:
        return f"task {self.task}: {self.reason}" if self.task else self.reason


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a check said on the starting workspace: passed, its exit code (None: it did
    not finish), and the reason it gave."""

    passed: bool
    code: int | None
    reason: str


def validate(
    plan: Plan, launch: Launch, tools: Toolbox | None = None, attempt: int = 1
) -> list[Rejection]:
    """Every reason ``plan`` cannot be launched as ``launch`` (none: it can)."""
    if tools is None:
        with toolbox(launch.env, str(launch.workspace), image=launch.image) as made:
            return validate(plan, launch, made, attempt)
    out: list[Rejection] = []

    def reject(task: str | None, reason: str) -> None:
        out.append(Rejection(attempt, task, reason))

    seen: set[str] = set()
    for task in plan.tasks:
        if task.id in seen:
            reject(task.id, "the id is used by another task: give each task its own id")
        seen.add(task.id)
        if not set(task.id) <= _ID or task.id in (".", ".."):
            reject(task.id, "the id must be letters, digits, '.', '_' or '-' (it names a folder)")
    domains = {t.domain for t in plan.tasks}
    if plan.system is not None and len(domains) > 1:
        reject(None, f"one system prompt for tasks of {len(domains)} domains: drop it, or "
                     "keep the tasks in one domain")  # fmt: skip
    readable = _agents_can_read(launch) if any(t.held_out for t in plan.tasks) else None
    if plan.system is not None:
        for finding in _lint(plan.system, "the system prompt", tools):
            reject(None, finding)
    for task in plan.tasks:
        for reason in _task_problems(task, plan, launch, tools, readable):
            reject(task.id, reason)
    return out


def _task_problems(
    task: PlanTask, plan: Plan, launch: Launch, tools: Toolbox, readable: str | None
) -> list[str]:
    from four.domains import DomainError, get_domain

    if task.domain not in SHELL_DOMAINS:
        return [f"domain {task.domain!r}: use one of {', '.join(SHELL_DOMAINS)} (a check here "
                "is a shell command)"]  # fmt: skip
    try:
        domain = get_domain(task.domain)
    except DomainError as exc:
        return [f"domain {task.domain!r} cannot run here: {exc}"]
    problems: list[str] = []
    if task.held_out and task.domain != "bash":
        problems.append(
            "held-out files work with the bash domain only: drop them, or make it a bash task"
        )
    for place in task.held_out:
        if _bad_place(place):
            problems.append(f"held-out file {place!r}: give a relative path inside the workspace")
        elif len(Path(place).parts) < 2:
            problems.append(f"held-out file {place!r}: put it in a folder of its own, e.g. "
                            f"hidden/{place} (held-out files replace whole folders)")  # fmt: skip
    if task.held_out and readable:
        problems.append(readable)
    if launch.window is not None:
        from four.observe._doctor import context_fit

        fit = context_fit(plan.system or domain.system, task.task, launch.window)
        if fit.status == "NO-GO":
            problems.append(f"the task does not fit the agents' context: {fit.detail}")
    problems += _lint(task.task, "the task", tools)
    problems += _lint(f"```bash\n{task.check}\n```", "the check", tools)
    if problems:
        return problems  # the check is not run until the rest is right
    first, second = run_check(task, launch, times=2)
    if first.code is None and not first.passed:
        return [f"the check could not be judged on the starting workspace ({first.reason}): "
                "make it finish quickly, with a plain exit status"]  # fmt: skip
    if first.passed and second.passed:
        return ["the check already passes on the starting workspace, before any work: it "
                "proves nothing; make it test what the task asks for"]  # fmt: skip
    if (first.passed, first.code, first.reason) != (second.passed, second.code, second.reason):
        return [f"the check is flaky: run twice on the same starting workspace it said "
                f"{_said(first)}, then {_said(second)}; make it deterministic"]  # fmt: skip
    return []


def _said(verdict: Verdict) -> str:
    return "pass" if verdict.passed else f"fail ({verdict.reason})"


def _bad_place(place: str) -> bool:
    parts = Path(place).parts
    return not place.strip() or Path(place).is_absolute() or ".." in parts or not parts


def _lint(text: str, what: str, tools: Toolbox) -> list[str]:
    from four.observe._lint import lint_text

    return [
        f"{what} does not pass four lint: {str(f).split(': ', 1)[1]}"
        for f in lint_text(text, what, tools)
        if f.problem
    ]


def run_check(task: PlanTask, launch: Launch, times: int = 1) -> list[Verdict]:
    """``task``'s check, run ``times`` times on one copy of the starting workspace (its
    held-out files put in place for each run, as ``four batch`` will) in an environment of
    the launch's kind: what it says each time."""
    from four.checks import command_check
    from four.checks._claim import Claim
    from four.domains._bash import environment

    with tempfile.TemporaryDirectory(prefix="four-plan-") as scratch:
        cwd = str(launch.workspace)
        if launch.env != "docker":
            cwd = os.path.join(scratch, "work")
            shutil.copytree(launch.workspace, cwd, symlinks=True, ignore=_not_regular)
        env = environment(
            launch.env, image=launch.image, cwd=cwd, timeout=launch.check_timeout + 10
        )
        try:
            files = _held_folders(task, Path(scratch) / "held")
            check = command_check(task.check, timeout=launch.check_timeout, feedback="full",
                                  files=files or None)  # fmt: skip
            return [_verdict(check(Claim("", (), env)), check.need) for _ in range(times)]
        finally:
            close = getattr(env, "close", None)
            if callable(close):
                close()


def _held_folders(task: PlanTask, into: Path) -> dict[str, str | os.PathLike[str] | bytes]:
    """The task's held-out files written under ``into``, as ``four batch`` is given them
    (``--check-files DEST=DIR``: each top folder put in place whole)."""
    tops: dict[str, str | os.PathLike[str] | bytes] = {}
    for place, content in task.held_out.items():
        target = into / place
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        top = Path(place).parts[0]
        tops[f"{top}/"] = str(into / top)
    return tops


def _verdict(said: CheckResult, need: str) -> Verdict:
    from four.quaternary import Verdict as Four

    if said.verdict == Four.YES:
        return Verdict(True, 0, "")
    if said.verdict == Four.MAYBE:
        needed = said.needed
        text = needed.evidence if isinstance(needed, EvidenceNeed) else str(needed or "")
        late = text == need
        return Verdict(False, None, "it did not finish in time" if late else text[:300])
    reason = said.reason or ""
    code = _exit(reason)
    return Verdict(False, code, reason.split("): ", 1)[-1] if code is not None else reason)


def _exit(reason: str) -> int | None:
    marker = "(exit "
    if marker not in reason:
        return None
    digits = reason.split(marker, 1)[1].split(")", 1)[0]
    return int(digits) if digits.lstrip("-").isdigit() else None


def _agents_can_read(launch: Launch) -> str | None:
    """Why the agents' commands could read the launch folder (its held-out files), or
    None: a file is put there and an agent's command, in the launch's environment and
    workspace, tries to read it."""
    from four.domains._bash import environment

    launch.folder.mkdir(parents=True, exist_ok=True)
    secret = os.urandom(12).hex()
    probe = launch.folder / f".four-probe-{secret[:8]}"
    probe.write_text(secret)
    env = environment(launch.env, image=launch.image, cwd=str(launch.workspace), timeout=30)
    try:
        seen = env(Action(f"cat {probe} 2>/dev/null; true")).value_or(None)
    finally:
        probe.unlink(missing_ok=True)
        close = getattr(env, "close", None)
        if callable(close):
            close()
    if isinstance(seen, Observation) and secret in seen.content:
        return (f"the agents' commands (--env {launch.env}) can read the launch folder "
                f"{launch.folder}, so held-out files there would be no secret: drop them "
                "(a check the agent may see), or the launch needs --env sandbox or docker")  # fmt: skip
    return None


@dataclass
class PlanEnv:
    """V2 of the plan domain: validates each plan the model writes. ``rejected`` keeps
    every rejection of the run, ``accepted`` the plan it submitted (if any)."""

    launch: Launch
    tools: Toolbox | None = None
    rejected: list[Rejection] = field(default_factory=list)
    accepted: Plan | None = None
    attempts: int = 0
    validated: set[str] = field(default_factory=set)  # digests of the plans that passed

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        import json

        self.attempts += 1
        try:
            plan = plan_from_json(json.loads(action.command))
        except (ValueError, RecursionError) as exc:  # an action not made by plan_parse
            return Success(Observation(f"not a plan: {exc}", returncode=2))
        if self.tools is None:
            try:
                self.tools = toolbox(
                    self.launch.env, str(self.launch.workspace), image=self.launch.image
                )
            except ValueError as exc:
                return Failure(ExecutionError(str(exc)))
        try:
            found = validate(plan, self.launch, self.tools, self.attempts)
        except OSError as exc:  # the workspace cannot be copied, the disk is full...
            return Failure(ExecutionError(f"cannot validate the plan: {exc}"))
        if not found:
            self.accepted = plan
            self.validated.add(digest(action.command))
            return Failure(Submitted(action.command))
        self.rejected += found
        lines = "\n".join(f"- {r}" for r in found)
        return Success(Observation(
            f"The plan was not accepted ({len(found)} problems):\n{lines}\n"
            "Fix them and reply with the whole plan again, in one ```json block.",
            returncode=1,
        ))  # fmt: skip

    def close(self) -> None:
        if self.tools is not None:
            self.tools.close()


def digest(text: str) -> str:
    """The SHA-256 of a plan's text (what the check compares)."""
    return hashlib.sha256(text.encode()).hexdigest()


def plan_env(launch: Launch) -> PlanEnv:
    """V2 of the plan domain for ``launch`` (see ``PlanEnv``)."""
    return PlanEnv(launch)
