"""The verified loop's check for Python code: typed, linted, and the tests pass."""

from __future__ import annotations

from dataclasses import dataclass, field

from returns.result import Failure

from four.checks import Claim, command_check
from four.checks._judge import Verifiable
from four.domains.python._env import PythonEnv
from four.quaternary import CheckResult, EvidenceNeed, maybe, no, yes


@dataclass(frozen=True, slots=True)
class TypedCheck(Verifiable):
    """YES when ruff and mypy are clean on the changed files and the tests pass; see
    ``typed_check``."""

    tests: str | None = None
    timeout: float = 600.0
    env: PythonEnv | None = field(default=None, repr=False, compare=False)

    def __call__(self, claim: Claim, /) -> CheckResult:
        python = self.env if self.env is not None else claim.env
        if not isinstance(python, PythonEnv):
            return maybe(EvidenceNeed("typed_check needs the run's python_env: pass env="))
        changed = python.changed_files()
        found = python.diagnostics(changed)
        if isinstance(found, Failure):
            return maybe(EvidenceNeed(f"the checks could not run: {found.failure()}"))
        problems = found.unwrap()
        if problems:  # a checker's diagnostic is no answer key: the model sees it whole
            return no(str(problems[0]), feedback="full")
        if self.tests is None:
            return yes()
        # the project's own tests: their failures are what the model must fix
        return command_check(self.tests, timeout=self.timeout, feedback="output")(claim)


def typed_check(
    tests: str | None = None, *, env: PythonEnv | None = None, timeout: float = 600.0
) -> TypedCheck:
    """Judge a submission of Python code: YES only when ruff and mypy (with the
    environment's flags: ``--strict`` by default) report nothing on the ``.py`` files
    changed since the start, and ``tests`` (a command, e.g. ``python -m pytest -q``)
    exits 0 in the run's environment. NO names the first diagnostic (file, line,
    message) or the failing test. ``env`` is the run's ``python_env`` (by default the
    environment the check is opened over).

    >>> typed_check("python -m pytest -q").tests
    'python -m pytest -q'
    """
    return TypedCheck(tests, timeout, env)
