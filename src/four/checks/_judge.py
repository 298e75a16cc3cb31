"""The verified loop's judge: checks decide when a run is done, the QICT controller
bounds how often they are asked (at most initial_rank + 1 evaluations per run); its
config as JSON, so a stored trace can be replayed under its own config."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from returns.result import Success

from four import _arguments as arguments
from four._checked import checked
from four._outcomes import (
    Accepted,
    Blocked,
    CostLimitReached,
    Finished,
    Held,
    ModelFailed,
    Outcome,
    RepeatedFormatError,
    StepsExhausted,
    Stopped,
)
from four._types import JSON, Action, Assistant, Checked, Execute, Feedback, Message
from four.checks._claim import Check, Claim, Gatherer, Resolver
from four.checks._feedback import (
    MORE_WORK,
    FeedbackLevel,
    feedback_level,
    level_of,
    shown,
    task_of,
    told,
)
from four.checks._named_files import FileState, files_now, read_files
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
from four.quaternary._canonical import CONFIG_COUNTS, CONFIG_SETS

LAST_JUDGED = (StepsExhausted, RepeatedFormatError, CostLimitReached, Stopped, ModelFailed)
"""The ends after which the final state is judged once: the budget ran out, the model
stopped acting or its call failed (a request timed out after the work was done), or it
was stopped going round in circles (a search's looping attempt), without a submission."""


@dataclass(frozen=True, slots=True)
class Verifier(Checked):
    """Judges every submission of a run with ``check``; see ``verify``."""

    check: Check
    failures: int | frozenset[str] = 3
    evidence: Mapping[str, Gatherer | str] = field(default_factory=dict)
    compute: int | frozenset[str] = 0
    compute_steps: int = 10
    dependencies: Mapping[str, Resolver] = field(default_factory=dict)
    feedback: FeedbackLevel | None = None
    retries_per_reason: int = 1
    last_judgement: bool = True

    def gatherers(self) -> dict[str, Gatherer | str]:
        declared: Mapping[str, Gatherer | str] = getattr(self.check, "evidence", {})
        return {**declared, **self.evidence}

    def config(self) -> QICTConfig:
        slots = _alphabet(self.failures, "no")  # and one more slot per retry of each
        retried = {f"{s}#{k}" for s in slots for k in range(2, self.retries_per_reason + 1)}
        return QICTConfig(
            failure_alphabet=slots | retried,
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
    feedback: FeedbackLevel | None = None,
    retries_per_reason: int = 1,
    last_judgement: bool = True,
) -> Verifier:
    """Make ``check`` the judge of a run, its verdicts accounted over finite alphabets:
    ``run(..., check=verify(my_check))`` (the settings: docs/verified.md).

    >>> from four.quaternary import yes
    >>> verify(lambda claim: yes(), failures=2).config().failure_alphabet == {"no:1", "no:2"}
    True
    >>> sorted(verify(lambda claim: yes(), failures=1, retries_per_reason=2).config().failure_alphabet)
    ['no:1', 'no:1#2']
    """
    arguments.component("verify", "check", check, "a check (a function: claim -> verdict)")
    for name, value in (("failures", failures), ("compute", compute)):
        if not isinstance(value, frozenset):
            arguments.count("verify", name, value)
    arguments.count("verify", "compute_steps", compute_steps, minimum=1)
    arguments.count("verify", "retries_per_reason", retries_per_reason, minimum=1)
    level = None if feedback is None else feedback_level(feedback)
    return Verifier(
        check,
        failures,
        dict(evidence or {}),
        compute,
        compute_steps,
        dict(dependencies or {}),
        level,
        retries_per_reason,
        bool(last_judgement),
    )


class Verifiable:
    """A mixin: the check is also a ``check=`` for ``run``, judged with ``verify``'s
    defaults (the ready checks and the domains' own)."""

    __slots__ = ()

    def open(self: Check, env: Execute, /) -> Judgement:
        return verify(self).open(env)


class Judgement:
    """One run's judge: its controller, receipts and verdict log."""

    @checked
    def __init__(self, verifier: Verifier, env: Execute) -> None:
        self._verifier = verifier
        self._env = env
        self._gatherers = verifier.gatherers()
        self.controller = QICTController(verifier.config())
        self._initial_rank = rank(self.controller.config, self.controller.state)
        self._numbers: dict[tuple[str, str], int] = {}  # (kind, text) -> 1, 2, ... as first seen
        self._slots: dict[str, str] = {}  # slot (no:1, no:1#2, compute:1) -> its free text
        self._told: dict[str, int] = {}  # NO reason -> times it was passed to the controller
        self._log: list[JSON] = []
        self._at_end: str | None = None
        self._before: dict[str, FileState] = {}
        # The judge runs its own shell command only where its check runs one (command_check,
        # file_check): another environment (the plan domain's) takes an action as its own.
        self._shell: bool = getattr(verifier.check, "runs_shell", False)

    def at_start(self, history: Sequence[Message], /) -> None:
        """Before the first step: the files the task names read, so a NO can say how they
        changed. Not in a resumed run (its history holds the model's turns): the files are
        then as the earlier steps left them, not as the task began."""
        if self._shell and not any(isinstance(m, Assistant) for m in history):
            self._before = read_files(self._env, task_of(history))

    def __call__(self, history: Sequence[Message], claim: Finished, /) -> Outcome | Feedback:
        """Judge a submission: the run's end, or feedback and more steps."""
        return self._judge(Claim(claim.output, tuple(history), self._env))

    def at_end(self, history: Sequence[Message], outcome: Outcome, /) -> Outcome:
        """The last judgement of a run that ended ``outcome`` without a submission
        (docs/verified.md): ``Accepted`` on YES, else ``outcome``."""
        if (
            not self._verifier.last_judgement
            or not isinstance(outcome, LAST_JUDGED)
            or self._at_end is not None  # once per run
        ):
            return outcome
        self._at_end = outcome.text
        ended = self._judge(Claim("", tuple(history), self._env))
        return ended if isinstance(ended, Accepted) else outcome

    def _judge(self, current: Claim) -> Outcome | Feedback:
        controller = self.controller
        while True:
            result = self._verifier.check(current)
            symbolic, number = self._symbolic(result)
            receipt = controller.process(symbolic)
            self._note(result, receipt.action.value, symbolic, number)
            lease = controller.state.pending_lease
            match receipt.action:
                case ControllerAction.EXIT_ACCEPT:
                    return Accepted(current.output)
                case ControllerAction.EXCLUDE_RETRY:
                    level = level_of(result, self._verifier.feedback)
                    # the run over, nothing to fix; files read only through a check's shell
                    files = ""
                    if self._shell and self._at_end is None:
                        files = files_now(self._env, task_of(current.messages), self._before)
                    return Feedback(told(result, level, number, current.messages, files))
                case ControllerAction.ADMIT_NEXT:
                    level = level_of(result, self._verifier.feedback)
                    step = f"step {number}" if level == "verdict" else _need_text(result.needed)
                    text = MORE_WORK.format(step=step)
                    return Feedback(text, self._verifier.compute_steps)
                case ControllerAction.GATHER if lease is not None:
                    need = lease.obligation
                    text = self._gather(need, current)
                    controller.evidence_returned(lease.lease_id)
                    current = replace(current, evidence={**current.evidence, need: text})
                case ControllerAction.BIND if lease is not None:
                    holds = self._verifier.dependencies[lease.obligation](current)
                    if holds is None:
                        controller.expire(lease.lease_id)
                        return Blocked(lease.obligation)
                    outcome = ResolutionOutcome.HOLDS if holds else ResolutionOutcome.FAILS
                    controller.resolve_dependency(lease.lease_id, outcome)
                    resolved = {**current.resolved, lease.obligation: holds}
                    current = replace(current, resolved=resolved)
                case _:
                    return Held(self._explain(result, controller.state.held_reason or "held"))

    def record(self) -> Mapping[str, JSON]:
        """For the trajectory (``four.audit`` replays it): config, receipts, their head, the
        verdict log (every reason in full), each slot's text and ``judged_at_end``."""
        controller = self.controller
        receipts: JSON = json.loads(dump_receipts(controller.receipts))
        record: dict[str, JSON] = {
            "config": config_to_json(controller.config),
            "initial_rank": self._initial_rank,
            "evaluations": controller.state.evaluation_count,
            "head": controller.head.hex(),
            "receipts": receipts,
            "log": list(self._log),
            "slots": dict(self._slots),
        }
        if self._at_end is not None:
            record["judged_at_end"] = self._at_end
        return record

    def _gather(self, need: str, claim: Claim) -> str:
        gatherer = self._gatherers[need]
        if callable(gatherer):
            return gatherer(claim)
        result = self._env(Action(gatherer))
        return result.unwrap().content if isinstance(result, Success) else str(result.failure())

    def _symbolic(self, result: CheckResult) -> tuple[CheckResult, int]:
        """Map free-text reasons and steps onto the finite alphabets' slots (no:1, ...,
        and no:1#2 ... for the retries of a reason), with the reason's number."""
        retries = self._verifier.retries_per_reason
        if result.verdict == Verdict.NO:
            reason = str(result.reason)
            number = self._number("no", reason)
            times = self._told[reason] = min(self._told.get(reason, 0) + 1, retries)
            # Past its retries a reason reuses its last slot: the controller holds it.
            symbol = f"no:{number}" if isinstance(self._verifier.failures, int) else reason
            return no(symbol if times == 1 else f"{symbol}#{times}"), number
        if isinstance(result.needed, ComputeNeed):
            number = self._number("compute", result.needed.step)
            if isinstance(self._verifier.compute, int):
                return maybe(ComputeNeed(f"compute:{number}")), number
            return result, number
        return result, 0

    def _number(self, kind: Literal["no", "compute"], text: str) -> int:
        known = sum(k == kind for k, _ in self._numbers)  # a new text is numbered next
        return self._numbers.setdefault((kind, text), known + 1)

    def _note(self, result: CheckResult, action: str, symbolic: CheckResult, number: int) -> None:
        entry: dict[str, JSON] = {"verdict": result.verdict.name, "action": action}
        # what its feedback level lets any reader see (the model, a trace): "shown"
        if text := shown(result, level_of(result, self._verifier.feedback), number):
            entry["shown"] = text
        if symbolic is not result:  # the free text went to a slot (no:1, compute:1, ...)
            slot = _need_text(symbolic.needed) if symbolic.needed else str(symbolic.reason)
            entry["slot"] = slot
            self._slots[slot] = _need_text(result.needed) if result.needed else str(result.reason)
        if result.reason is not None:
            entry["reason"] = result.reason
        if result.needed is not None:
            entry["needed"] = _need_text(result.needed)
        if result.dependency is not None:
            entry["dependency"] = result.dependency
        if self._at_end is not None:
            entry["judged_at_end"] = self._at_end
        self._log.append(entry)

    def _explain(self, result: CheckResult, held: str) -> str:
        """The controller's held reason, with slot names turned back into the check's
        words, and what allows more attempts."""
        if result.verdict != Verdict.NO:
            return held
        reason, retries = str(result.reason), self._verifier.retries_per_reason
        failures = self._verifier.failures
        if isinstance(failures, int) and self._numbers[("no", reason)] > failures:
            return (
                f"more than {failures} distinct failures: {reason} "
                f"(failures={failures + 1} allows one more)"
            )
        if isinstance(failures, int) or reason in failures:
            times = "once" if retries == 1 else f"{retries} times"
            return (
                f"repeated failure: {reason} (a reason is told to the agent {times}, "
                f"then ends the run; retries_per_reason={retries + 1} allows one more attempt)"
            )
        return held


def _alphabet(spec: int | frozenset[str], kind: str) -> frozenset[str]:
    if isinstance(spec, int):  # at least 0: verify checked it
        return frozenset(f"{kind}:{i}" for i in range(1, spec + 1))
    return frozenset(spec)


def _need_text(needed: str | EvidenceNeed | ComputeNeed | None) -> str:
    if isinstance(needed, EvidenceNeed):
        return needed.evidence
    if isinstance(needed, ComputeNeed):
        return needed.step
    return str(needed)


@checked
def config_to_json(config: QICTConfig) -> dict[str, JSON]:
    """A config as JSON (sets sorted, so equal configs give equal text)."""
    out: dict[str, JSON] = {name: sorted(getattr(config, name)) for name in CONFIG_SETS}
    return out | {name: getattr(config, name) for name in CONFIG_COUNTS}


@checked
def config_from_json(data: Mapping[str, JSON]) -> QICTConfig:
    """Read back what ``config_to_json`` wrote; raises ValueError on a malformed config
    (``QICTConfig`` checks the counts)."""
    try:
        for name in CONFIG_SETS:
            value = data[name]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TypeError(f"{name} must be a list of strings")
        sets = {name: frozenset(data[name]) for name in CONFIG_SETS}  # type: ignore[arg-type]
        return QICTConfig(**sets, **{name: data[name] for name in CONFIG_COUNTS})  # type: ignore[arg-type]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed QICT config: {exc}") from None
