"""The verified loop's judge: checks decide when a run is done, the QICT controller
bounds how often they are asked (at most initial_rank + 1 evaluations per run)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from returns.result import Success

from four._outcomes import Accepted, Blocked, Finished, Held, Outcome
from four._types import JSON, Action, Execute, Feedback, Message
from four.checks._claim import Check, Claim, Gatherer, Resolver
from four.checks._config import config_to_json
from four.quaternary import (
    CheckResult,
    ComputeNeed,
    ControllerAction,
    EvidenceNeed,
    QICTConfig,
    QICTController,
    ResolutionOutcome,
    Verdict,
    dump_receipts,
    maybe,
    no,
    rank,
)

REJECTED = "Your submission was checked and not accepted: {reason}\nFix this, then submit again."
MORE_WORK = (
    "Your submission was checked: more work is needed ({step}). Continue, then submit again."
)


@dataclass(frozen=True, slots=True)
class Verifier:
    """Judges every submission of a run with ``check``; see ``verify``."""

    check: Check
    failures: int | frozenset[str] = 3
    evidence: Mapping[str, Gatherer | str] = field(default_factory=dict)
    compute: int | frozenset[str] = 0
    compute_steps: int = 10
    dependencies: Mapping[str, Resolver] = field(default_factory=dict)

    def gatherers(self) -> dict[str, Gatherer | str]:
        declared: Mapping[str, Gatherer | str] = getattr(self.check, "evidence", {})
        return {**declared, **self.evidence}

    def config(self) -> QICTConfig:
        return QICTConfig(
            failure_alphabet=_alphabet(self.failures, "no"),
            evidence_alphabet=frozenset(self.gatherers()),
            compute_alphabet=_alphabet(self.compute, "compute"),
            dependency_alphabet=frozenset(self.dependencies),
        )

    def open(self, env: Execute, /) -> Judgement:
        return Judgement(self, env)


def verify(
    check: Check,
    *,
    failures: int | frozenset[str] = 3,
    evidence: Mapping[str, Gatherer | str] | None = None,
    compute: int | frozenset[str] = 0,
    compute_steps: int = 10,
    dependencies: Mapping[str, Resolver] | None = None,
) -> Verifier:
    """Make ``check`` the judge of a run: ``run(..., check=verify(my_check))``.

    Each verdict is accounted by a QICT controller whose finite alphabets are:
    ``failures`` (distinct NO reasons the agent may be told, as a count, or the exact
    reasons), ``evidence`` (named gatherers for MAYBE(EvidenceNeed): a function of the
    claim, or a command run in the environment), ``compute`` (MAYBE(ComputeNeed)
    admissions, each worth ``compute_steps`` more model calls) and ``dependencies``
    (resolvers for IFF). A repeated reason, or one beyond the alphabet, ends the run
    held. So checks are evaluated at most ``initial_rank + 1`` times, whatever the
    model and the check do.

    >>> from four.quaternary import yes
    >>> verify(lambda claim: yes(), failures=2).config().failure_alphabet == {"no:1", "no:2"}
    True
    """
    return Verifier(
        check, failures, dict(evidence or {}), compute, compute_steps, dict(dependencies or {})
    )


class Judgement:
    """One run's judge: its controller, receipts and verdict log."""

    def __init__(self, verifier: Verifier, env: Execute) -> None:
        self._verifier = verifier
        self._env = env
        self._gatherers = verifier.gatherers()
        self.controller = QICTController(verifier.config())
        self._initial_rank = rank(self.controller.config, self.controller.state)
        self._symbols: dict[tuple[str, str], str] = {}
        self._log: list[JSON] = []

    def __call__(self, history: Sequence[Message], claim: Finished, /) -> Outcome | Feedback:
        current = Claim(claim.output, tuple(history), self._env)
        controller = self.controller
        while True:
            result = self._verifier.check(current)
            symbolic = self._symbolic(result)
            receipt = controller.process(symbolic)
            self._note(result, receipt.action.value, symbolic)
            lease = controller.state.pending_lease
            match receipt.action:
                case ControllerAction.EXIT_ACCEPT:
                    return Accepted(current.output)
                case ControllerAction.EXCLUDE_RETRY:
                    return Feedback(REJECTED.format(reason=result.reason))
                case ControllerAction.ADMIT_NEXT:
                    step = _need_text(result.needed)
                    return Feedback(MORE_WORK.format(step=step), self._verifier.compute_steps)
                case ControllerAction.GATHER if lease is not None:
                    need = lease.obligation
                    text = self._gather(need, current)
                    controller.evidence_returned(lease.lease_id)
                    current = current.with_evidence(need, text)
                case ControllerAction.BIND if lease is not None:
                    holds = self._verifier.dependencies[lease.obligation](current)
                    if holds is None:
                        controller.expire(lease.lease_id)
                        return Blocked(lease.obligation)
                    outcome = ResolutionOutcome.HOLDS if holds else ResolutionOutcome.FAILS
                    controller.resolve_dependency(lease.lease_id, outcome)
                    current = current.with_resolution(lease.obligation, holds)
                case _:
                    return Held(self._explain(result, controller.state.held_reason or "held"))

    def record(self) -> Mapping[str, JSON]:
        """Config, receipts and their head digest (for ``four.audit``), the verdict log,
        and the text of each slot (``no:1`` ...) that a free-text reason was mapped to."""
        controller = self.controller
        receipts: JSON = json.loads(dump_receipts(controller.receipts))
        return {
            "config": config_to_json(controller.config),
            "initial_rank": self._initial_rank,
            "evaluations": controller.state.evaluation_count,
            "head": controller.head.hex(),
            "receipts": receipts,
            "log": list(self._log),
            "slots": {symbol: text for (_, text), symbol in self._symbols.items()},
        }

    def _gather(self, need: str, claim: Claim) -> str:
        gatherer = self._gatherers[need]
        if callable(gatherer):
            return gatherer(claim)
        result = self._env(Action(gatherer))
        return result.unwrap().content if isinstance(result, Success) else str(result.failure())

    def _symbolic(self, result: CheckResult) -> CheckResult:
        """Map free-text reasons and steps onto the finite alphabets' slots (no:1, ...)."""
        if result.verdict == Verdict.NO and isinstance(self._verifier.failures, int):
            return no(self._symbol("no", str(result.reason)))
        if isinstance(result.needed, ComputeNeed) and isinstance(self._verifier.compute, int):
            return maybe(ComputeNeed(self._symbol("compute", result.needed.step)))
        return result

    def _symbol(self, kind: Literal["no", "compute"], text: str) -> str:
        key = (kind, text)
        if key not in self._symbols:
            self._symbols[key] = f"{kind}:{sum(k == kind for k, _ in self._symbols) + 1}"
        return self._symbols[key]

    def _note(self, result: CheckResult, action: str, symbolic: CheckResult) -> None:
        entry: dict[str, JSON] = {"verdict": result.verdict.name, "action": action}
        if symbolic is not result:  # the free text went to a slot (no:1, compute:1, ...)
            entry["slot"] = _need_text(symbolic.needed) if symbolic.needed else symbolic.reason
        if result.reason is not None:
            entry["reason"] = result.reason
        if result.needed is not None:
            entry["needed"] = _need_text(result.needed)
        if result.dependency is not None:
            entry["dependency"] = result.dependency
        self._log.append(entry)

    def _explain(self, result: CheckResult, held: str) -> str:
        """The controller's held reason, with slot names turned back into the check's words."""
        if result.verdict == Verdict.NO and isinstance(self._verifier.failures, int):
            symbol = self._symbols[("no", str(result.reason))]
            if symbol in self.controller.config.failure_alphabet:
                return f"repeated failure: {result.reason}"
            return f"more than {self._verifier.failures} distinct failures: {result.reason}"
        return held


def _alphabet(spec: int | frozenset[str], kind: str) -> frozenset[str]:
    if isinstance(spec, int):
        if spec < 0:
            raise ValueError(f"{kind} count must not be negative")
        return frozenset(f"{kind}:{i}" for i in range(1, spec + 1))
    return frozenset(spec)


def _need_text(needed: str | EvidenceNeed | ComputeNeed | None) -> str:
    if isinstance(needed, EvidenceNeed):
        return needed.evidence
    if isinstance(needed, ComputeNeed):
        return needed.step
    return str(needed)
