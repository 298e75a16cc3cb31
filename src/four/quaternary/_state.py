"""Controller data types (verdict4 0.2.0 compatible) and the shared logs behind their sets.

Receipts keep every before- and after-state, as in verdict4, but a state does not own
copies of its growing sets. A set field that the controller grows holds a `_Prefix`:
a shared append-only `_Log` plus a length. Reading the field materialises a
`frozenset` once and caches it; membership, extension, rank counting and equality of
two prefixes of the same log are O(1). States built by hand hold plain frozensets and
behave exactly like verdict4's.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from enum import Enum
from graphlib import CycleError, TopologicalSorter
from operator import attrgetter, itemgetter
from typing import Any, Final, TypeAlias

from four._checked import check_fields
from four._types import Checked

from ._core import Needed, Verdict

__all__ = [
    "AuditResult",
    "CandidateDisposition",
    "ControllerAction",
    "ControllerEvent",
    "ControllerEventKind",
    "ControllerState",
    "ControllerStatus",
    "DependencyRecord",
    "EvaluationReceipt",
    "EventReceipt",
    "Lease",
    "LeaseKind",
    "Payload",
    "QICTConfig",
    "ResolutionOutcome",
    "TransitionReceipt",
]


class ControllerStatus(str, Enum):  # noqa: UP042 - str() and format() as in verdict4
    RUNNING = "running"
    ACCEPTED = "accepted"
    HELD = "held"


class CandidateDisposition(str, Enum):  # noqa: UP042 - str() and format() as in verdict4
    SOURCE_ADMISSIBLE = "source_admissible"
    TERMINALLY_ACCEPTED = "terminally_accepted"


class ControllerAction(str, Enum):  # noqa: UP042 - str() and format() as in verdict4
    EXIT_ACCEPT = "exit_accept"
    EXCLUDE_RETRY = "exclude_retry"
    ADMIT_NEXT = "admit_next"
    GATHER = "gather"
    BIND = "bind"
    REEVALUATE = "reevaluate"
    WAIT = "wait"
    EXPIRE = "expire"
    HOLD = "hold"


class LeaseKind(str, Enum):  # noqa: UP042 - str() and format() as in verdict4
    EVIDENCE = "evidence"
    DEPENDENCY = "dependency"


class ResolutionOutcome(str, Enum):  # noqa: UP042 - str() and format() as in verdict4
    HOLDS = "holds"
    FAILS = "fails"


class ControllerEventKind(str, Enum):  # noqa: UP042 - str() and format() as in verdict4
    EVIDENCE_RETURNED = "evidence_returned"
    DEPENDENCY_RESOLVED = "dependency_resolved"
    ADVANCE_CLOCK = "advance_clock"
    EXPIRE = "expire"
    INVALIDATE_DEPENDENCY = "invalidate_dependency"


# --------------------------------------------------------------------------- logs


class _Log:
    """An append-only history of distinct keys, shared by every state derived from one
    starting set: `keys[i]` is the i-th key (the starting set's first) and `index` maps
    each key to its position, so a prefix of length n has n members."""

    __slots__ = ("counts", "index", "keys")

    def __init__(self, keys: list[Any]) -> None:
        self.keys = keys
        self.index = {key: i for i, key in enumerate(keys)}
        self.counts: dict[AbstractSet[Any], array[int]] = {}

    def count_in(self, alphabet: AbstractSet[Any], n: int) -> int:
        """How many members of the prefix of length n belong to `alphabet` (amortised O(1):
        the counts of each longer prefix, kept per alphabet, are extended as needed)."""
        counts = self.counts.setdefault(alphabet, array("q", (0,)))
        for key in self.keys[len(counts) - 1 : n]:
            counts.append(counts[-1] + (key in alphabet))
        return counts[n]


class _Prefix:
    """The first `n` keys of a `_Log`; immutable once built."""

    __slots__ = ("frozen", "log", "n")

    def __init__(self, log: _Log, n: int, frozen: frozenset[Any] | None = None) -> None:
        self.log = log
        self.n = n
        self.frozen = frozen

    def contains(self, key: object) -> bool:
        pos = self.log.index.get(key)
        return pos is not None and pos < self.n

    def added(self, key: Hashable) -> _Prefix:
        """This prefix plus one new key (which must not be a member); O(1) unless forked."""
        log, n = self.log, self.n
        keys = log.keys
        if n == len(keys):
            keys.append(key)
            log.index[key] = n
        elif keys[n] != key:  # (equal: replaying a step already recorded in this log)
            return _Prefix(_Log(keys[:n]), n).added(key)
        return _Prefix(log, n + 1)

    def as_set(self) -> frozenset[Any]:
        if self.frozen is None:
            self.frozen = frozenset(self.log.keys[: self.n])
        return self.frozen


def set_prefix(value: frozenset[Any] | _Prefix) -> _Prefix:
    """A prefix view of a set field: itself, or a fresh log of the frozenset's members."""
    if type(value) is _Prefix:
        return value
    assert isinstance(value, frozenset)
    return _Prefix(_Log(list(value)), len(value), value)


def _same(a: object, b: object) -> bool:
    if a is b:
        return True
    if type(a) is _Prefix and type(b) is _Prefix and a.log is b.log:
        return a.n == b.n
    return bool(as_set(a) == as_set(b))


def as_set(raw: Any) -> Any:
    """A set field's value from its raw slot: a prefix materialised (once), a frozenset."""
    return raw.as_set() if type(raw) is _Prefix else raw


class _LazySet:
    """Descriptor over a slot that may hold a `_Prefix`: reads materialise a frozenset."""

    __slots__ = ("slot",)

    def __init__(self, slot: Any) -> None:
        self.slot = slot

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else as_set(self.slot.__get__(obj, owner))

    def __set__(self, obj: object, value: object) -> None:
        self.slot.__set__(obj, value)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class DependencyRecord:
    """D = (U^I, V, R, Omega): used and unresolved dependencies, arcs, and outcomes."""

    used: frozenset[str] = field(default_factory=frozenset)
    unresolved: frozenset[str] = field(default_factory=frozenset)
    relation: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    outcomes: tuple[tuple[str, ResolutionOutcome], ...] = ()

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        check_record(self.used, self.unresolved, self.relation, self.outcomes)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, DependencyRecord)
        return self is other or (
            _RECORD_REST(self) == _RECORD_REST(other) and _same(raw_used(self), raw_used(other))
        )

    def outcome_for(self, dependency: str) -> ResolutionOutcome | None:
        """The recorded outcome of `dependency`, or None.

        >>> DependencyRecord(used=frozenset({"d"}), outcomes=(("d", ResolutionOutcome.HOLDS),)).outcome_for("d")
        <ResolutionOutcome.HOLDS: 'holds'>
        """
        for name, outcome in self.outcomes:
            if name == dependency:
                return outcome
        return None


def check_record(
    used: AbstractSet[Any],
    unresolved: AbstractSet[Any],
    relation: Iterable[Any],
    outcomes: Iterable[tuple[Any, Any]],
) -> None:
    """The DependencyRecord invariants, in verdict4's order, with its messages."""
    if not unresolved <= used:
        raise ValueError("Unresolved dependencies must have been bound.")
    arcs = TopologicalSorter[Any]()
    for a, b in relation:
        if a not in unresolved or b not in unresolved:
            raise ValueError("Dependency arcs must join unresolved vertices.")
        arcs.add(b, a)
    names = [name for name, _ in outcomes]
    if len(set(names)) != len(names):
        raise ValueError("A dependency may have only one recorded outcome.")
    if any(name not in used or name in unresolved for name in names):
        raise ValueError("Outcomes belong only to resolved dependencies.")
    try:
        arcs.prepare()  # finds any cycle, self-loops included
    except CycleError:
        raise ValueError("The unresolved dependency relation must be acyclic.") from None


def merge_outcomes(pairs: Iterable[tuple[Any, Any]]) -> tuple[tuple[Any, Any], ...]:
    """Outcome pairs in a record's order: by name (a stable sort)."""
    return tuple(sorted(pairs, key=itemgetter(0)))


@dataclass(frozen=True, slots=True)
class Lease(Checked):
    """A pending obligation with a logical deadline; ids are "<kind>:<obligation>:<i>"."""

    lease_id: str
    kind: LeaseKind
    obligation: str
    deadline: int


@dataclass(frozen=True, slots=True)
class ControllerState:
    """The controller's accounting state (no candidate data, by type)."""

    exclusions: frozenset[str] = field(default_factory=frozenset)
    used_evidence: frozenset[str] = field(default_factory=frozenset)
    used_compute: frozenset[str] = field(default_factory=frozenset)
    dependencies: DependencyRecord = field(default_factory=DependencyRecord)
    evidence_budget: int = 0
    compute_budget: int = 0
    dependency_budget: int = 0
    status: ControllerStatus = ControllerStatus.RUNNING
    candidate_disposition: CandidateDisposition | None = None
    evaluation_count: int = 0
    clock: int = 0
    pending_lease: Lease | None = None
    held_reason: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        if min(self.evidence_budget, self.compute_budget, self.dependency_budget) < 0:
            raise ValueError("Controller budgets cannot be negative.")
        if self.evaluation_count < 0 or self.clock < 0:
            raise ValueError("Controller indices cannot be negative.")
        if self.status != ControllerStatus.RUNNING and self.pending_lease is not None:
            raise ValueError("A terminal controller cannot retain a pending lease.")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ControllerState)
        return self is other or (  # the scalars and the record first: cheap to compare
            _STATE_REST(self) == _STATE_REST(other)
            and _same(_RAW_EXCLUSIONS(self), _RAW_EXCLUSIONS(other))
            and _same(_RAW_EVIDENCE(self), _RAW_EVIDENCE(other))
            and _same(_RAW_COMPUTE(self), _RAW_COMPUTE(other))
        )


def _raw_slots(cls: type[ControllerState | DependencyRecord], lazy: tuple[str, ...]) -> Any:
    """Each field's name and raw slot, in order, once the ``lazy`` set fields read through
    a ``_LazySet``."""
    for name in lazy:
        setattr(cls, name, _LazySet(cls.__dict__[name]))
    return tuple(
        (name, getattr(cls.__dict__[name], "slot", cls.__dict__[name])) for name in cls.__slots__
    )


_STATE_SLOTS: Final = _raw_slots(ControllerState, ("exclusions", "used_evidence", "used_compute"))
_RECORD_SLOTS: Final = _raw_slots(DependencyRecord, ("used",))
_RAW_EXCLUSIONS, _RAW_EVIDENCE, _RAW_COMPUTE = (slot.__get__ for _, slot in _STATE_SLOTS[:3])
raw_used: Final = _RECORD_SLOTS[0][1].__get__
"""The raw (possibly lazy) used dependencies of a record."""
_STATE_REST: Final = attrgetter(*(name for name, _ in _STATE_SLOTS[4:]), "dependencies")
_RECORD_REST: Final = attrgetter("unresolved", "relation", "outcomes")


def raw_state(state: ControllerState) -> tuple[Any, Any, Any]:
    """The raw (possibly lazy) exclusions, used_evidence and used_compute of a state."""
    return _RAW_EXCLUSIONS(state), _RAW_EVIDENCE(state), _RAW_COMPUTE(state)


def evolve(state: ControllerState, **changes: Any) -> ControllerState:
    """``state`` with ``changes`` (set fields raw, so their logs are shared), built without
    re-running validation: the transitions keep the invariants."""
    new: ControllerState = object.__new__(ControllerState)
    for name, slot in _STATE_SLOTS:
        slot.__set__(new, changes[name] if name in changes else slot.__get__(state))
    return new


def make_record(used: Any, unresolved: Any, relation: Any, outcomes: Any) -> DependencyRecord:
    """Build a DependencyRecord without re-running validation."""
    record: DependencyRecord = object.__new__(DependencyRecord)
    for (_, slot), value in zip(_RECORD_SLOTS, (used, unresolved, relation, outcomes), strict=True):
        slot.__set__(record, value)
    return record


# --------------------------------------------------------------------------- config


def _frozen_alphabet(name: str, value: object) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError(f"{name} must be a collection of strings, not a single str")
    if not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a collection of strings")
    return value if type(value) is frozenset else frozenset(value)


def check_count(name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class QICTConfig:
    """Finite alphabets, budgets and lease duration of a controller (stricter than
    verdict4 0.2.0's: docs/seal.md).

    >>> QICTConfig(compute_alphabet={"a", "b"}).initial_state().compute_budget
    2
    """

    failure_alphabet: AbstractSet[str] = field(default_factory=frozenset)
    evidence_alphabet: AbstractSet[str] = field(default_factory=frozenset)
    compute_alphabet: AbstractSet[str] = field(default_factory=frozenset)
    dependency_alphabet: AbstractSet[str] = field(default_factory=frozenset)
    evidence_budget: int | None = None
    compute_budget: int | None = None
    dependency_budget: int | None = None
    admissible_failures: AbstractSet[str] | None = None
    admissible_dependencies: AbstractSet[str] | None = None
    lease_ticks: int = 1

    def __post_init__(self) -> None:
        put = object.__setattr__
        for name in (
            "failure_alphabet",
            "evidence_alphabet",
            "compute_alphabet",
            "dependency_alphabet",
        ):
            put(self, name, _frozen_alphabet(name, getattr(self, name)))
        for name, alphabet in (
            ("admissible_failures", self.failure_alphabet),
            ("admissible_dependencies", self.dependency_alphabet),
        ):
            value = getattr(self, name)
            put(self, name, alphabet if value is None else _frozen_alphabet(name, value))
        assert self.admissible_failures is not None
        assert self.admissible_dependencies is not None
        if not self.admissible_failures <= self.failure_alphabet:
            raise ValueError("Admissible failures must belong to the failure alphabet.")
        if not self.admissible_dependencies <= self.dependency_alphabet:
            raise ValueError("Admissible dependencies must belong to the dependency alphabet.")
        for name, budget, alphabet in (
            ("evidence", self.evidence_budget, self.evidence_alphabet),
            ("compute", self.compute_budget, self.compute_alphabet),
            ("dependency", self.dependency_budget, self.dependency_alphabet),
        ):
            check_count(f"{name} budget", budget, optional=True)
            if budget is not None and not 0 <= budget <= len(alphabet):
                raise ValueError(f"{name} budget must be between zero and its alphabet size.")
        check_count("lease_ticks", self.lease_ticks, optional=False)
        if self.lease_ticks <= 0:
            raise ValueError("A lease must have a positive finite duration.")

    def initial_state(self) -> ControllerState:
        """The starting state: empty sets and full budgets.

        >>> QICTConfig(failure_alphabet={"x"}).initial_state().exclusions
        frozenset()
        """
        return ControllerState(
            evidence_budget=_budget(self.evidence_budget, self.evidence_alphabet),
            compute_budget=_budget(self.compute_budget, self.compute_alphabet),
            dependency_budget=_budget(self.dependency_budget, self.dependency_alphabet),
        )


def _budget(value: int | None, alphabet: AbstractSet[str]) -> int:
    return len(alphabet) if value is None else value


# --------------------------------------------------------------------------- receipts


@dataclass(frozen=True, slots=True)
class ControllerEvent:
    """A logical event delivered to a running controller."""

    kind: ControllerEventKind
    lease_id: str | None = None
    outcome: ResolutionOutcome | None = None
    dependency: str | None = None
    clock: int | None = None

    def __post_init__(self) -> None:
        # The clock is the controller's to refuse, in verdict4's words, receipt-less.
        check_fields(self, ("clock",))


Payload: TypeAlias = str | Needed | None


@dataclass(frozen=True, slots=True)
class EvaluationReceipt:
    """One evaluation step. `digest` chains it to the previous receipt and the config."""

    before: ControllerState
    verdict: Verdict
    payload: Payload
    dependency_arcs: frozenset[tuple[str, str]]
    action: ControllerAction
    after: ControllerState
    evaluation_index: int
    digest: bytes = b""

    def __post_init__(self) -> None:
        # The payload is kept as it was judged: an untyped MAYBE's holds (as in verdict4).
        check_fields(self, ("payload",))


@dataclass(frozen=True, slots=True)
class EventReceipt(Checked):
    """One event step. `digest` chains it to the previous receipt and the config."""

    before: ControllerState
    event: ControllerEvent
    action: ControllerAction
    after: ControllerState
    digest: bytes = b""


TransitionReceipt: TypeAlias = EvaluationReceipt | EventReceipt


@dataclass(frozen=True, slots=True)
class AuditResult(Checked):
    """The verdict of an audit. `head` is the digest the audited trace ends at."""

    valid: bool
    errors: tuple[str, ...]
    evaluations: int
    initial_rank: int
    final_rank: int
    head: bytes = b""


@dataclass(slots=True, eq=False)
class AuditCursor:
    """The running position of an (incremental) audit over one trace, whose digests
    follow the receipts' chain ``version`` (2; 1 for documents written before it)."""

    initial_state: ControllerState
    initial_rank: int
    version: int = 2
    state: object = None  # the last after-state (the initial state until one is fed)
    prev: bytes | None = None
    errors: list[str] = field(default_factory=list)
    evaluations: int = 0
    position: int = 0

    def __post_init__(self) -> None:
        self.state = self.initial_state
