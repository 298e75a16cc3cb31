"""Ready checks: a command's exit status, a file's content, and all of several."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import ClassVar

from returns.result import Success

from four import _arguments as arguments
from four._checked import checked
from four._types import Checked, Observation
from four.checks._claim import Check, Claim, Gatherer, run_command
from four.checks._feedback import (
    DEFAULT_FEEDBACK,
    FeedbackLevel,
    feedback_level,
    rejection,
)
from four.checks._held_out import HeldOutFiles, Source, held_out_files, isolated
from four.checks._judge import Verifiable
from four.quaternary import CheckResult, EvidenceNeed, Verdict, maybe, yes

_NOISE = re.compile(r"\b\d+(\.\d+)?(s|ms|sec|seconds)\b|\(\d+(\.\d+)?s\)|\bin \d+(\.\d+)?s\b")
_SILENT = "no output"
_SUMMARY = re.compile(r"^(FAILED|ERROR|E   |error|Error|FAIL)\b.*$", re.M)


def _summary(output: str) -> str:
    """A short reason that stays the same when the same failure happens again."""
    picked = [m.group(0) for m in _SUMMARY.finditer(output)][:3]
    if not picked:
        tail = [line.strip() for line in output.splitlines() if line.strip()]
        picked = tail[-1:]
    text = "; ".join(_NOISE.sub("", line).strip() for line in picked)
    return text[:300] or _SILENT


@dataclass(frozen=True, slots=True)
class CommandCheck(Verifiable, Checked):
    """YES when ``command`` exits 0 in the run's environment; see ``command_check``."""

    command: str
    timeout: float = 600.0
    feedback: FeedbackLevel = DEFAULT_FEEDBACK
    files: HeldOutFiles | None = field(default=None, repr=False)
    runs_shell: ClassVar[bool] = True  # so the judge may read the run's files too

    @property
    def need(self) -> str:
        return f"rerun with more time: {self.command}"

    @property
    def evidence(self) -> Mapping[str, Gatherer]:
        return {self.need: self._rerun}

    def _ran(self, claim: Claim, timeout: float) -> Observation:
        """``command`` run in the claim's environment, or, with held-out ``files``, in a
        copy of it that holds them and is gone when this returns."""
        if self.files is None:
            return run_command(claim.env, self.command, timeout)
        with isolated(claim.env, self.files, timeout + 30) as made:
            if not isinstance(made, Success):
                return Observation(made.failure())
            return run_command(made.unwrap(), self.command, timeout)

    def _rerun(self, claim: Claim) -> str:
        ran = self._ran(claim, self.timeout * 4)
        return json.dumps([ran.content, ran.returncode, ran.timed_out])

    @checked
    def __call__(self, claim: Claim, /) -> CheckResult:
        gathered = claim.evidence.get(self.need)
        if gathered is None:
            ran = self._ran(claim, self.timeout)
            if ran.timed_out:
                return maybe(EvidenceNeed(self.need))
        else:
            ran = Observation(*json.loads(gathered))  # as _rerun wrote it
            if ran.timed_out:
                late = f"did not finish within {self.timeout * 4:g}s"
                return rejection(f"`{self.command}` {late}", f"the check {late}", self.feedback)
        if ran.returncode == 0:
            return yes()
        if ran.returncode is None:
            return maybe(EvidenceNeed(ran.content))  # outside the alphabet: the run is held
        summary = _summary(ran.content)
        failed = f"(exit {ran.returncode}): {summary}"
        # "no output" alone was read by a small model as its own command's output.
        said = failed if summary != _SILENT else f"(exit {ran.returncode}) and printed nothing"
        return rejection(
            f"`{self.command}` failed {failed}", f"the check failed {said}", self.feedback
        )


def command_check(
    command: str,
    *,
    timeout: float = 600.0,
    feedback: FeedbackLevel = DEFAULT_FEEDBACK,
    files: Mapping[str, Source] | None = None,
) -> CommandCheck:
    """Judge a submission by running ``command`` (e.g. the tests) in the run's environment
    (exit codes to verdicts, ``feedback`` and held-out ``files``: docs/verified.md).

    >>> command_check("pytest -q").feedback
    'verdict'
    >>> command_check("")
    Traceback (most recent call last):
    ...
    ValueError: command_check: command must be a non-empty shell command (an empty one accepts every submission)
    >>> command_check("pytest -q tests_hidden", files={"tests_hidden/t.py": b"..."}).files.places
    ('tests_hidden/t.py',)
    """
    if not isinstance(command, str):
        raise TypeError(f"command_check: command must be a shell command (a str), not {command!r}")
    if not command.strip():
        raise ValueError(
            "command_check: command must be a non-empty shell command "
            "(an empty one accepts every submission)"
        )
    arguments.seconds("command_check", "timeout", timeout)
    held = held_out_files(files) if files else None
    return CommandCheck(command, float(timeout), feedback_level(feedback), held)


@dataclass(frozen=True, slots=True)
class FileCheck(Verifiable, Checked):
    """YES when ``path`` exists (and holds ``contains`` / matches ``pattern``)."""

    path: str
    contains: str | None = None
    pattern: str | None = None
    feedback: FeedbackLevel = DEFAULT_FEEDBACK
    runs_shell: ClassVar[bool] = True

    @checked
    def __call__(self, claim: Claim, /) -> CheckResult:
        path = shlex.quote(self.path)
        test = f"test -f {path} || exit 3"
        if self.contains is not None:
            test += f" && grep -q -F -e {shlex.quote(self.contains)} -- {path}"
        if self.pattern is not None:  # && : every test must pass, not just the last
            test += f" && grep -q -E -e {shlex.quote(self.pattern)} -- {path}"
        ran = run_command(claim.env, test, 60)
        if ran.returncode == 0:
            return yes()
        if ran.returncode == 3:
            missing = f"{self.path} does not exist"
            return rejection(missing, missing, self.feedback)
        if ran.returncode == 1:
            wanted = self.contains if self.contains is not None else f"/{self.pattern}/"
            full = f"{self.path} does not contain {wanted!r}"
            return rejection(full, f"{self.path} does not hold the expected text", self.feedback)
        return maybe(EvidenceNeed(f"cannot read {self.path}: {_summary(ran.content)}"))


def file_check(
    path: str,
    *,
    contains: str | None = None,
    pattern: str | None = None,
    feedback: FeedbackLevel = DEFAULT_FEEDBACK,
) -> FileCheck:
    """Judge a submission by a file in the run's environment (``feedback`` as for
    ``command_check``; at ``"full"`` the model is told the text it missed).

    >>> file_check("out.txt", contains="42").contains
    '42'
    """
    arguments.text("file_check", "path", path)
    arguments.text("file_check", "contains", contains, empty=True, optional=True)
    arguments.text("file_check", "pattern", pattern, optional=True)
    return FileCheck(path, contains, pattern, feedback_level(feedback))


@dataclass(frozen=True, slots=True)
class AllOf(Verifiable, Checked):
    """YES when every check says YES; otherwise the first other verdict, in order."""

    checks: tuple[Check, ...]
    feedback: FeedbackLevel | None = None

    @property
    def runs_shell(self) -> bool:
        return any(getattr(check, "runs_shell", False) for check in self.checks)

    @property
    def evidence(self) -> Mapping[str, Gatherer | str]:
        merged: dict[str, Gatherer | str] = {}
        for check in self.checks:
            merged.update(getattr(check, "evidence", {}))
        return merged

    @checked
    def __call__(self, claim: Claim, /) -> CheckResult:
        for check in self.checks:
            result = check(claim)
            if result.verdict != Verdict.YES:
                if self.feedback is None:
                    return result
                return replace(result, meta={**result.meta, "feedback": self.feedback})
        return yes()


def all_of(*checks: Check, feedback: FeedbackLevel | None = None) -> AllOf:
    """Combine checks: the first that is not YES decides (``feedback``, when given, is
    the level of every NO of the combination).

    >>> all_of(file_check("a"), command_check("true")).checks[1].command
    'true'
    """
    if not checks:
        raise ValueError("all_of: give at least one check, e.g. all_of(command_check('pytest'))")
    for i, each in enumerate(checks):
        arguments.component(
            "all_of", f"check {i + 1}", each, "a check (a function: claim -> verdict)"
        )
    return AllOf(checks, None if feedback is None else feedback_level(feedback))
