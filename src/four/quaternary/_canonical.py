"""The JSON form of receipt values and controller states, and the receipts' hash chain
over it (``four._chain``'s, the seal's; docs/seal.md): one encoding for the receipts
document and for the digests. The states are not hashed at every step: the audit replays
each transition, so the chain of inputs plus the genesis state commits to every state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, Final

from four._chain import canonical_text, link, start

from ._core import ComputeNeed, EvidenceNeed
from ._state import ControllerEvent, ControllerState, Lease, QICTConfig

FORMAT_VERSION: Final = 2
"""The receipts' chain (and document) version; 1 is ``_chain_v1``'s."""
_START: Final = start("four.quaternary/2")

SCALARS: Final = (
    "evidence_budget",
    "compute_budget",
    "dependency_budget",
    "status",
    "candidate_disposition",
    "evaluation_count",
    "clock",
    "pending_lease",
    "held_reason",
)
SETS: Final = ("exclusions", "used_evidence", "used_compute")
RECORD_SETS: Final = ("used", "unresolved", "relation")
STATE_FIELDS: Final = (*SETS, "dependencies", *SCALARS)
"""The fields of a receipt's full controller state (``before`` of the first receipt)."""


def json_value(value: object) -> Any:
    if value is None or isinstance(value, bool | str):
        return value.value if isinstance(value, Enum) else value
    if isinstance(value, int):
        return int(value)
    if type(value) is float:
        return {"float": repr(value)}
    if type(value) is tuple:
        return {"tuple": [json_value(v) for v in value]}
    if type(value) is frozenset or type(value) is set:
        return {"set": json_values(value)}
    if type(value) is EvidenceNeed:
        return {"evidence": json_value(value.evidence)}
    if type(value) is ComputeNeed:
        return {"compute": json_value(value.step)}
    raise TypeError(f"{type(value).__name__} values cannot be stored in a receipt document")


def json_values(items: Iterable[object]) -> list[Any]:
    return sorted((json_value(v) for v in items), key=canonical_text)


def json_scalar(name: str, value: object) -> Any:
    if name == "pending_lease" and value is not None:  # a Lease
        return {field: json_value(getattr(value, field)) for field in Lease.__slots__}
    return json_value(value)


def json_pairs(pairs: Iterable[tuple[Any, Any]]) -> list[Any]:
    return [[json_value(name), json_value(outcome)] for name, outcome in pairs]


def json_state(state: ControllerState) -> dict[str, Any]:
    deps = state.dependencies
    return {
        **{name: json_values(getattr(state, name)) for name in SETS},
        "dependencies": {name: json_values(getattr(deps, name)) for name in RECORD_SETS}
        | {"outcomes": json_pairs(deps.outcomes)},
        **{name: json_scalar(name, getattr(state, name)) for name in SCALARS},
    }


_STATES: dict[str, ControllerState] = {}
"""(Immutable) full states by canonical text, lately read or initial: a fleet's traces open
with their configs' initial states, each then read once and compared by identity."""


def one_state(text: str, make: Callable[[], ControllerState]) -> ControllerState:
    """The state whose ``json_state`` has the canonical ``text``: the one met before, or ``make()``."""
    if (state := _STATES.get(text)) is None:
        state = make()
        if len(_STATES) >= 64:
            _STATES.clear()
        _STATES[text] = state
    return state


CONFIG_SETS: Final = (
    "failure_alphabet",
    "evidence_alphabet",
    "compute_alphabet",
    "dependency_alphabet",
    "admissible_failures",
    "admissible_dependencies",
)
CONFIG_COUNTS: Final = ("evidence_budget", "compute_budget", "dependency_budget", "lease_ticks")


def config_json(config: QICTConfig) -> dict[str, Any]:
    """The config's ten resolved fields (sets sorted).

    >>> config_json(QICTConfig(failure_alphabet={"b", "a"}))["failure_alphabet"]
    ['a', 'b']
    """
    sets = {name: json_values(getattr(config, name) or ()) for name in CONFIG_SETS}
    return sets | {name: json_value(getattr(config, name)) for name in CONFIG_COUNTS}


def fingerprint(config: QICTConfig) -> bytes:
    """The chain's digest after the config (SHA-256, 32 bytes)."""
    return link(_START, "config", config_json(config))


def genesis_after(fingerprinted: bytes, state: ControllerState) -> bytes:
    """The digest a trace starting at ``state`` chains from, after its config's
    ``fingerprint``."""
    return link(fingerprinted, "state", json_state(state))


def evaluation_digest(
    prev: bytes, verdict: object, payload: object, arcs: object, action: object, index: object
) -> bytes:
    """The digest of an evaluation receipt after ``prev``; TypeError for a value with no
    JSON form."""
    transition = {
        "action": json_value(action),
        "arcs": json_values(arcs),  # type: ignore[arg-type]
        "index": json_value(index),
        "payload": json_value(payload),
        "verdict": json_value(verdict),
    }
    return link(prev, "evaluation", transition)


def event_digest(prev: bytes, event: ControllerEvent, action: object) -> bytes:
    """The digest of an event receipt after ``prev``."""
    return link(prev, "event", {"action": json_value(action), "event": json_event(event)})


EVENT_FIELDS: Final = ControllerEvent.__slots__


def json_event(event: ControllerEvent) -> dict[str, Any]:
    return {name: json_value(getattr(event, name)) for name in EVENT_FIELDS}
