"""Lossless JSON serialisation of receipt traces (schema "four.quaternary.receipts"): the
layout, each entry only what changed since the previous after-state, is in docs/seal.md."""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import Enum
from typing import Any, Final, TypeVar

from four._chain import canonical_text
from four._checked import checked

from ._canonical import (
    FORMAT_VERSION,
    RECORD_SETS,
    SCALARS,
    SETS,
    json_event,
    json_pairs,
    json_scalar,
    json_state,
    json_value,
    json_values,
    one_state,
)
from ._core import ComputeNeed, EvidenceNeed, Verdict
from ._state import (
    CandidateDisposition,
    ControllerAction,
    ControllerEvent,
    ControllerEventKind,
    ControllerState,
    ControllerStatus,
    DependencyRecord,
    EvaluationReceipt,
    EventReceipt,
    Lease,
    LeaseKind,
    ResolutionOutcome,
    TransitionReceipt,
    _Prefix,
    as_set,
    evolve,
    make_record,
    merge_outcomes,
    raw_state,
    raw_used,
    set_prefix,
)

__all__ = ["FORMAT", "dump_receipts", "load_receipts"]

FORMAT: Final = "four.quaternary.receipts"
_E = TypeVar("_E", bound=Enum)


# --------------------------------------------------------------------------- values


def _unvalue(data: Any) -> Any:
    if data is None or isinstance(data, bool | int | str | float):
        return data
    if isinstance(data, dict) and len(data) == 1:
        ((tag, inner),) = data.items()
        if tag == "float":
            return float(inner)
        if tag == "tuple":
            return tuple(_unvalue(v) for v in inner)
        if tag == "set":
            return _unset(inner)
        if tag == "evidence":
            return EvidenceNeed(_unvalue(inner))
        if tag == "compute":
            return ComputeNeed(_unvalue(inner))
    raise ValueError(f"not a receipt value: {data!r}")


def _unset(data: Any) -> frozenset[Any]:
    return frozenset(_unvalue(v) for v in data)


def _member(enum: type[_E], data: Any) -> _E | Any:
    value = _unvalue(data)
    try:
        return enum(value)
    except (ValueError, TypeError):
        return value


# --------------------------------------------------------------------------- states


def _unscalar(name: str, data: Any) -> Any:
    if name == "pending_lease" and data is not None:
        return Lease(
            _unvalue(data["lease_id"]),
            _member(LeaseKind, data["kind"]),
            _unvalue(data["obligation"]),
            _unvalue(data["deadline"]),
        )
    if name == "status":
        return _member(ControllerStatus, data)
    if name == "candidate_disposition":
        return None if data is None else _member(CandidateDisposition, data)
    return _unvalue(data)


def _unpairs(data: Any) -> tuple[tuple[Any, Any], ...]:
    return tuple((_unvalue(n), _member(ResolutionOutcome, o)) for n, o in data)


def _read_state(data: dict[str, Any]) -> ControllerState:
    deps = data["dependencies"]
    used, unresolved, relation = (_unset(deps[n]) for n in RECORD_SETS)
    record = DependencyRecord(used, unresolved, relation, _unpairs(deps["outcomes"]))
    excl, evid, comp = (_unset(data[n]) for n in SETS)
    return ControllerState(excl, evid, comp, record, **{n: _unscalar(n, data[n]) for n in SCALARS})


def _full_state(data: Any) -> ControllerState:
    """``_read_state``, once a text (``one_state``): keyed by the canonical text, which
    tells 0, false and 0.0 apart, so a tampered state is read (and refused) as before."""
    return one_state(canonical_text(data), lambda: _read_state(data))


def _set_delta(old: Any, new: Any) -> dict[str, Any] | None:
    if old is new:
        return None
    if type(old) is _Prefix and type(new) is _Prefix and old.log is new.log and old.n <= new.n:
        added = new.log.keys[old.n : new.n]
        return {"add": [json_value(v) for v in added]} if added else None
    before, after = as_set(old), as_set(new)
    if before == after:
        return None
    delta: dict[str, Any] = {"add": json_values(after - before)}
    if before - after:
        delta["remove"] = json_values(before - after)
    return delta


def _apply_set(raw: Any, delta: dict[str, Any] | None, *, logged: bool = True) -> Any:
    """A set field with ``delta`` applied: its log extended, or a frozenset for a removal
    or a field that keeps no log (not ``logged``)."""
    if delta is None:
        return raw
    added = [_unvalue(v) for v in delta.get("add", ())]
    if "remove" in delta or not logged:
        return (as_set(raw) - _unset(delta.get("remove", ()))) | frozenset(added)
    prefix = set_prefix(raw)
    for item in added:
        if prefix.contains(item):
            raise ValueError(f"receipt document adds a member twice: {item!r}")
        prefix = prefix.added(item)
    return prefix


def _outcome_delta(old: Any, new: Any) -> dict[str, Any] | None:
    if old is new or old == new:
        return None
    added = [pair for pair in new if pair not in old]
    if merge_outcomes((*old, *added)) == new:
        return {"add": json_pairs(added)}
    return {"replace": json_pairs(new)}


def _apply_outcomes(outcomes: Any, delta: dict[str, Any] | None) -> Any:
    if delta is None:
        return outcomes
    if "replace" in delta:
        return _unpairs(delta["replace"])
    pairs = list(outcomes)
    for name, outcome in _unpairs(delta["add"]):
        if any(recorded == name for recorded, _ in pairs):
            raise ValueError(f"receipt document records an outcome twice: {name!r}")
        pairs.append((name, outcome))
    return merge_outcomes(pairs)


def _delta(before: ControllerState, after: ControllerState) -> dict[str, Any]:
    changes = zip(SETS, raw_state(before), raw_state(after), strict=True)
    out: dict[str, Any] = {n: c for n, old, new in changes if (c := _set_delta(old, new))}
    old_deps, new_deps = before.dependencies, after.dependencies
    if old_deps is not new_deps:
        deps = {
            "used": _set_delta(raw_used(old_deps), raw_used(new_deps)),
            "unresolved": _set_delta(old_deps.unresolved, new_deps.unresolved),
            "relation": _set_delta(old_deps.relation, new_deps.relation),
            "outcomes": _outcome_delta(old_deps.outcomes, new_deps.outcomes),
        }
        if any(deps.values()):
            out["dependencies"] = {name: change for name, change in deps.items() if change}
    for name in SCALARS:
        old_value, new_value = getattr(before, name), getattr(after, name)
        if old_value is not new_value and (
            type(old_value) is not type(new_value) or old_value != new_value
        ):
            out[name] = json_scalar(name, new_value)
    return out


def _apply(before: ControllerState, delta: dict[str, Any]) -> ControllerState:
    """The after-state: `before` with `delta` applied, sharing its logs where it can.

    Scalar invariants are checked; the dependency record is not re-validated (a
    tampered document still loads, and its audit reports the inconsistency).
    """
    if not delta:
        return before
    record = before.dependencies
    deps = delta.get("dependencies")
    if deps:
        record = make_record(
            _apply_set(raw_used(record), deps.get("used")),
            _apply_set(record.unresolved, deps.get("unresolved"), logged=False),
            _apply_set(record.relation, deps.get("relation"), logged=False),
            _apply_outcomes(record.outcomes, deps.get("outcomes")),
        )
    sets = zip(SETS, raw_state(before), strict=True)
    state = evolve(
        before,
        **{name: _apply_set(raw, delta.get(name)) for name, raw in sets},
        dependencies=record,
        **{name: _unscalar(name, delta[name]) for name in SCALARS if name in delta},
    )
    state.__post_init__()
    return state


# --------------------------------------------------------------------------- documents


@checked
def dump_receipts(receipts: Iterable[TransitionReceipt]) -> str:
    """Serialise a trace to a versioned JSON document (docs/seal.md).

    >>> from four.quaternary import QICTConfig, QICTController, no
    >>> controller = QICTController(QICTConfig(failure_alphabet={"a"}))
    >>> _ = controller.process(no("a"))
    >>> load_receipts(dump_receipts(controller.receipts)) == controller.receipts
    True
    """
    entries: list[dict[str, Any]] = []
    previous: ControllerState | None = None
    for receipt in receipts:
        if isinstance(receipt, EvaluationReceipt):
            entry: dict[str, Any] = {
                "type": "evaluation",
                "verdict": json_value(receipt.verdict),
                "payload": json_value(receipt.payload),
                "arcs": json_values(receipt.dependency_arcs),
                "action": json_value(receipt.action),
                "index": json_value(receipt.evaluation_index),
            }
        elif isinstance(receipt, EventReceipt):
            event = receipt.event
            entry = {
                "type": "event",
                "event": json_event(event),
                "action": json_value(receipt.action),
            }
        else:
            raise TypeError(f"not a transition receipt: {type(receipt).__name__}")
        before = receipt.before
        if previous is None or (before is not previous and before != previous):
            entry["before"] = json_state(before)
        entry["after"] = _delta(before, receipt.after)
        entry["digest"] = receipt.digest.hex()
        entries.append(entry)
        previous = receipt.after
    return json.dumps(
        {"format": FORMAT, "version": FORMAT_VERSION, "receipts": entries},
        ensure_ascii=True,
        separators=(",", ":"),
    )


@checked
def load_receipts(text: str) -> list[TransitionReceipt]:
    """Read a document written by `dump_receipts` back into receipts (equal to the originals).

    Raises `ValueError` for another format or version, or a malformed document (naming
    the first receipt that is).
    """
    return receipts_from_json(json.loads(text))


def receipts_from_json(document: object) -> list[TransitionReceipt]:
    """`load_receipts` of a document already parsed (a trajectory holds it as a value)."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a four.quaternary receipts document")
    if document.get("version") not in (1, FORMAT_VERSION):  # 1: chained by _chain_v1
        raise ValueError(f"unsupported receipts document version: {document.get('version')!r}")
    entries = document.get("receipts")
    if not isinstance(entries, list):
        raise ValueError("malformed receipts document: its receipts are not a list")
    receipts: list[TransitionReceipt] = []
    previous: ControllerState | None = None
    try:
        for entry in entries:
            if "before" in entry:
                before = _full_state(entry["before"])
            elif previous is None:
                raise ValueError("the first receipt has no before-state")
            else:
                before = previous
            after = _apply(before, entry["after"])
            action = _member(ControllerAction, entry["action"])
            digest = bytes.fromhex(entry["digest"])
            if entry["type"] == "evaluation":
                receipts.append(
                    EvaluationReceipt(
                        before,
                        _member(Verdict, entry["verdict"]),
                        _unvalue(entry["payload"]),
                        _unset(entry["arcs"]),
                        action,
                        after,
                        _unvalue(entry["index"]),
                        digest,
                    )
                )
            elif entry["type"] == "event":
                data = entry["event"]
                event = ControllerEvent(
                    _member(ControllerEventKind, data["kind"]),
                    _unvalue(data["lease_id"]),
                    _member(ResolutionOutcome, data["outcome"]),
                    _unvalue(data["dependency"]),
                    _unvalue(data["clock"]),
                )
                receipts.append(EventReceipt(before, event, action, after, digest))
            else:
                raise ValueError(f"unknown receipt type: {entry['type']!r}")
            previous = after
    except ValueError as exc:
        raise ValueError(f"receipt {len(receipts)}: {exc}") from exc  # the first not read
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"receipt {len(receipts)}: malformed receipts document: {exc!r}") from exc
    return receipts
