"""The verified loop's check for a command-line tool: built clean, documented, working."""

from __future__ import annotations

from dataclasses import dataclass, field

from returns.result import Failure

from four.checks import Claim
from four.checks._judge import Verifiable
from four.domains.cli._env import ToolEnv
from four.quaternary import CheckResult, EvidenceNeed, maybe, no, yes


@dataclass(frozen=True, slots=True)
class ToolCheck(Verifiable):
    """YES when the tool builds without a warning, ``--help`` and ``--version`` exit 0
    on stdout, its man page lints clean, and the acceptance command passes; see
    ``tool_check``."""

    acceptance: str | None = None
    env: ToolEnv | None = field(default=None, repr=False, compare=False)

    def __call__(self, claim: Claim, /) -> CheckResult:
        tool = self.env if self.env is not None else claim.env
        if not isinstance(tool, ToolEnv):
            return maybe(EvidenceNeed("tool_check needs the run's build_env: pass env="))
        problem = tool.check().problem  # built again: the sources may have changed since
        if problem is not None:
            return no(problem)
        if self.acceptance is None:
            return yes()
        done = tool.sandboxed(self.acceptance)
        if isinstance(done, Failure):
            return no(f"`{self.acceptance}` could not run: {done.failure()}")
        seen = done.unwrap()
        if seen.returncode != 0:
            return no(f"`{self.acceptance}` failed (exit {seen.returncode})")
        return yes()


def tool_check(acceptance: str | None = None, *, env: ToolEnv | None = None) -> ToolCheck:
    """Judge a submitted command-line tool: YES only when the sources build with no
    warning (``-Werror``), ``./NAME --help`` and ``--version`` print to stdout and exit
    0, the man page made from them lints clean, and ``acceptance`` (a shell command run
    in the tool's sandbox, e.g. ``./sum 2 3 | grep -qx 5``) exits 0. NO names the first
    thing that failed. ``env`` is the run's ``build_env`` (by default the environment
    the check is opened over).

    >>> tool_check("./sum 2 3 | grep -qx 5").acceptance
    './sum 2 3 | grep -qx 5'
    """
    if acceptance is not None and not acceptance.strip():
        raise ValueError("tool_check: acceptance must be a command, or None for none")
    return ToolCheck(acceptance, env)
