"""The receipts' first chain (format 1), kept to audit documents written before the one
chain of ``_canonical``: BLAKE2b-256 over a type-tagged encoding.

* ``fingerprint(config) = BLAKE2b-256("C" || enc(config fields))``
* ``genesis = BLAKE2b-256("G" || "four.quaternary/1" || fingerprint(config) || enc(s0))``
* ``digest_k = BLAKE2b-256("R" || digest_{k-1} || enc(transition_k))``
"""

from __future__ import annotations

from enum import Enum
from hashlib import blake2b

from ._canonical import EVENT_FIELDS, STATE_FIELDS
from ._core import ComputeNeed, EvidenceNeed
from ._state import ControllerEvent, ControllerState, Lease, QICTConfig


def _enc(value: object, out: list[bytes]) -> None:
    """Append the canonical, type-tagged encoding of a receipt value to `out`.

    str (and str enums) -> ``s<len>:<utf-8>``, None -> ``N``, bools -> ``T``/``F``,
    ints (and int enums) -> ``i<decimal>;``, floats -> ``f<repr>;``, tuples ->
    ``(...)``, sets -> ``{<count>:<sorted encodings>}``, needs -> ``E``/``K`` + field.
    """
    if type(value) is str:
        data = value.encode("utf-8", "surrogatepass")
        out.append(b"s%d:%b" % (len(data), data))
    elif value is None:
        out.append(b"N")
    elif type(value) is int:
        out.append(b"i%d;" % value)
    elif type(value) is bool:
        out.append(b"T" if value else b"F")
    elif isinstance(value, Enum):
        _enc(value.value, out)
    elif type(value) is tuple:
        out.append(b"(")
        for item in value:
            _enc(item, out)
        out.append(b")")
    elif type(value) is frozenset or type(value) is set:
        encoded = sorted(_encoded(item) for item in value)
        out.append(b"{%d:%b}" % (len(encoded), b"".join(encoded)))
    elif type(value) is EvidenceNeed:
        out.append(b"E")
        _enc(value.evidence, out)
    elif type(value) is ComputeNeed:
        out.append(b"K")
        _enc(value.step, out)
    elif type(value) is float:
        out.append(b"f%b;" % repr(value).encode())
    elif isinstance(value, str):
        _enc(str.__str__(value), out)
    elif isinstance(value, int):
        _enc(int.__int__(value), out)
    else:
        raise TypeError(f"{type(value).__name__} values cannot be encoded in a receipt")


def _encoded(*values: object) -> bytes:
    out: list[bytes] = []
    for value in values:
        _enc(value, out)
    return b"".join(out)


def _hash(head: bytes, *values: object) -> bytes:
    return blake2b(head + _encoded(*values), digest_size=32).digest()


def fingerprint(config: QICTConfig) -> bytes:
    return _hash(
        b"C",
        (
            frozenset(config.failure_alphabet),
            frozenset(config.evidence_alphabet),
            frozenset(config.compute_alphabet),
            frozenset(config.dependency_alphabet),
            config.evidence_budget,
            config.compute_budget,
            config.dependency_budget,
            frozenset(config.admissible_failures or ()),
            frozenset(config.admissible_dependencies or ()),
            config.lease_ticks,
        ),
    )


def genesis_after(fingerprinted: bytes, state: ControllerState) -> bytes:
    """The digest a trace starting at ``state`` chains from, after its config's
    ``fingerprint``: the state's fields in order, its record and lease as tuples."""
    fields = [getattr(state, name) for name in STATE_FIELDS]
    deps, lease = state.dependencies, state.pending_lease
    fields[3] = (deps.used, deps.unresolved, deps.relation, deps.outcomes)
    fields[-2] = None if lease is None else tuple(getattr(lease, f) for f in Lease.__slots__)
    return _hash(b"Gfour.quaternary/1" + fingerprinted, tuple(fields))


def evaluation_digest(
    prev: bytes, verdict: object, payload: object, arcs: object, action: object, index: object
) -> bytes:
    return _hash(b"R" + prev + b"V", verdict, payload, arcs, action, index)


def event_digest(prev: bytes, event: ControllerEvent, action: object) -> bytes:
    return _hash(b"R" + prev + b"W", *(getattr(event, n) for n in EVENT_FIELDS), action)
