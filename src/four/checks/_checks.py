"""Ready checks: a command's exit status, a file's content, and all of several."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from returns.result import Success

from four._types import Action, Execute
from four.checks._claim import Check, Claim, Gatherer
from four.checks._judge import Judgement, verify
from four.quaternary import CheckResult, EvidenceNeed, Verdict, maybe, no, yes

_TIMED_OUT = (124, 137)  # coreutils `timeout`: TERM sent, or KILL after the grace period
_OUTPUT = re.compile(r"<output>\n?(.*?)\n?</output>", re.S)
_NOISE = re.compile(r"\b\d+(\.\d+)?(s|ms|sec|seconds)\b|\(\d+(\.\d+)?s\)|\bin \d+(\.\d+)?s\b")
_SUMMARY = re.compile(r"^(FAILED|ERROR|E   |error|Error|FAIL)\b.*$", re.M)


class _Judged:
    """A ready check is also a ``check=`` for ``run``, judged with ``verify``'s defaults."""

    __slots__ = ()

    def open(self, env: Execute, /) -> Judgement:
        return verify(self).open(env)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class _Ran:
    returncode: int | None
    timed_out: bool
    output: str


def _run(env: Execute, command: str, timeout: float) -> _Ran:
    # `timeout` bounds the check's own command whatever the environment's limit is.
    wrapped = f"timeout -k 5 {timeout:g} bash -c {shlex.quote(command)}"
    result = env(Action(wrapped))
    if not isinstance(result, Success):
        return _Ran(None, False, f"environment error: {result.failure()}")
    observation = result.unwrap()
    match = _OUTPUT.search(observation.content)
    output = match.group(1) if match else observation.content
    timed_out = observation.timed_out or observation.returncode in _TIMED_OUT
    return _Ran(observation.returncode, timed_out, output)


def _summary(output: str) -> str:
    """A short reason that stays the same when the same failure happens again."""
    picked = [m.group(0) for m in _SUMMARY.finditer(output)][:3]
    if not picked:
        tail = [line.strip() for line in output.splitlines() if line.strip()]
        picked = tail[-1:]
    text = "; ".join(_NOISE.sub("", line).strip() for line in picked)
    return text[:300] or "no output"


@dataclass(frozen=True, slots=True)
class CommandCheck(_Judged):
    """YES when ``command`` exits 0 in the run's environment; see ``command_check``."""

    command: str
    timeout: float = 600.0

    @property
    def need(self) -> str:
        return f"rerun with more time: {self.command}"

    @property
    def evidence(self) -> Mapping[str, Gatherer]:
        return {self.need: self._rerun}

    def _rerun(self, claim: Claim) -> str:
        ran = _run(claim.env, self.command, self.timeout * 4)
        return json.dumps([ran.returncode, ran.timed_out, ran.output])

    def __call__(self, claim: Claim, /) -> CheckResult:
        gathered = claim.evidence.get(self.need)
        if gathered is None:
            ran = _run(claim.env, self.command, self.timeout)
            if ran.timed_out:
                return maybe(EvidenceNeed(self.need))
        else:
            returncode, timed_out, output = json.loads(gathered)
            ran = _Ran(returncode, timed_out, output)
            if ran.timed_out:
                return no(f"`{self.command}` did not finish within {self.timeout * 4:g}s")
        if ran.returncode == 0:
            return yes()
        if ran.returncode is None:
            return maybe(EvidenceNeed(ran.output))  # outside the alphabet: the run is held
        return no(f"`{self.command}` failed (exit {ran.returncode}): {_summary(ran.output)}")


def command_check(command: str, *, timeout: float = 600.0) -> CommandCheck:
    """Judge a submission by running ``command`` (e.g. the tests) in the run's environment.

    Exit 0 is YES. Another exit is NO, with a short reason taken from the failure
    (pytest's FAILED/ERROR lines, else the last line; durations removed so the same
    failure gives the same reason). A timeout is MAYBE: the command is run again with
    four times the time, and a second timeout is NO.

    >>> command_check("pytest -q").command
    'pytest -q'
    >>> command_check("")
    Traceback (most recent call last):
    ...
    ValueError: command_check: command must be a non-empty shell command (an empty one accepts every submission)
    """
    if not isinstance(command, str):
        raise TypeError(f"command_check: command must be a shell command (a str), not {command!r}")
    if not command.strip():
        raise ValueError(
            "command_check: command must be a non-empty shell command "
            "(an empty one accepts every submission)"
        )
    if not timeout > 0:
        raise ValueError(f"command_check: timeout must be positive seconds, not {timeout!r}")
    return CommandCheck(command, timeout)


@dataclass(frozen=True, slots=True)
class FileCheck(_Judged):
    """YES when ``path`` exists (and holds ``contains`` / matches ``pattern``)."""

    path: str
    contains: str | None = None
    pattern: str | None = None

    def __call__(self, claim: Claim, /) -> CheckResult:
        path = shlex.quote(self.path)
        test = f"test -f {path} || exit 3"
        if self.contains is not None:
            test += f"; grep -q -F -e {shlex.quote(self.contains)} -- {path}"
        if self.pattern is not None:
            test += f"; grep -q -E -e {shlex.quote(self.pattern)} -- {path}"
        ran = _run(claim.env, test, 60)
        if ran.returncode == 0:
            return yes()
        if ran.returncode == 3:
            return no(f"{self.path} does not exist")
        if ran.returncode == 1:
            wanted = self.contains if self.contains is not None else f"/{self.pattern}/"
            return no(f"{self.path} does not contain {wanted!r}")
        return maybe(EvidenceNeed(f"cannot read {self.path}: {_summary(ran.output)}"))


def file_check(path: str, *, contains: str | None = None, pattern: str | None = None) -> FileCheck:
    """Judge a submission by a file in the run's environment.

    >>> file_check("out.txt", contains="42").contains
    '42'
    """
    return FileCheck(path, contains, pattern)


@dataclass(frozen=True, slots=True)
class AllOf(_Judged):
    """YES when every check says YES; otherwise the first other verdict, in order."""

    checks: tuple[Check, ...]

    @property
    def evidence(self) -> Mapping[str, Gatherer | str]:
        merged: dict[str, Gatherer | str] = {}
        for check in self.checks:
            merged.update(getattr(check, "evidence", {}))
        return merged

    def __call__(self, claim: Claim, /) -> CheckResult:
        for check in self.checks:
            result = check(claim)
            if result.verdict != Verdict.YES:
                return result
        return yes()


def all_of(*checks: Check) -> AllOf:
    """Combine checks: the first that is not YES decides.

    >>> all_of(file_check("a"), command_check("true")).checks[1].command
    'true'
    """
    return AllOf(checks)
