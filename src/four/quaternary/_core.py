"""Verdicts, typed needs and check results: the values a check function returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, TypeAlias

from four._checked import check_fields

__all__ = [
    "CheckResult",
    "ComputeNeed",
    "EvidenceNeed",
    "Needed",
    "Verdict",
    "iff",
    "maybe",
    "no",
    "yes",
]


class Verdict(IntEnum):
    """The four values a check can return; the numeric order carries no meaning."""

    NO = 0
    YES = 1
    MAYBE = 2
    IFF = 3


@dataclass(frozen=True, slots=True)
class EvidenceNeed:
    """A typed MAYBE payload naming evidence that must be gathered.

    >>> EvidenceNeed("schema").evidence
    'schema'
    """

    evidence: str

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        if not self.evidence:
            raise ValueError("EvidenceNeed requires a non-empty canonical identifier.")


@dataclass(frozen=True, slots=True)
class ComputeNeed:
    """A typed MAYBE payload naming one more computation step to admit.

    >>> ComputeNeed("next_1").step
    'next_1'
    """

    step: str

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        if not self.step:
            raise ValueError("ComputeNeed requires a non-empty canonical identifier.")


Needed: TypeAlias = EvidenceNeed | ComputeNeed


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What a check function returns: a verdict plus the field that verdict requires
    (validated when built, unlike verdict4: docs/seal.md).

    >>> CheckResult(0, reason="too slow").verdict
    <Verdict.NO: 0>
    """

    verdict: Verdict
    reason: str | None = None
    needed: str | Needed | None = None
    dependency: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        verdict: object = self.verdict
        if type(verdict) is not Verdict:
            if isinstance(verdict, bool) or not isinstance(verdict, int):
                raise TypeError(f"verdict must be a Verdict, not {type(verdict).__name__}")
            try:
                verdict = Verdict(verdict)
            except ValueError:
                raise ValueError(f"unknown verdict: {verdict!r}") from None
            object.__setattr__(self, "verdict", verdict)
        if verdict == Verdict.NO and self.reason is None:
            raise ValueError("NO verdict requires a reason. Failure must not be anonymous.")
        if verdict == Verdict.MAYBE and self.needed is None:
            raise ValueError("MAYBE verdict requires needed evidence.")
        if verdict == Verdict.IFF and self.dependency is None:
            raise ValueError("IFF verdict requires a named dependency.")


def no(reason: str, **meta: Any) -> CheckResult:
    """A NO verdict with its (mandatory) reason.

    >>> no("missing field", line=3).reason
    'missing field'
    """
    return CheckResult(Verdict.NO, reason=reason, meta=meta)


def yes(**meta: Any) -> CheckResult:
    """A YES verdict.

    >>> yes().verdict == Verdict.YES
    True
    """
    return CheckResult(Verdict.YES, meta=meta)


def maybe(needed: str | Needed, **meta: Any) -> CheckResult:
    """A MAYBE verdict naming what is needed (a string, or a typed need for the controller).

    >>> maybe(EvidenceNeed("schema")).needed
    EvidenceNeed(evidence='schema')
    """
    return CheckResult(Verdict.MAYBE, needed=needed, meta=meta)


def iff(dependency: str, **meta: Any) -> CheckResult:
    """An IFF verdict naming the dependency the output is conditional on.

    >>> iff("auth deployed").dependency
    'auth deployed'
    """
    return CheckResult(Verdict.IFF, dependency=dependency, meta=meta)
