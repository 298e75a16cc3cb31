"""OTLP/protobuf by hand, for the one shape four sends: a request of spans under one
resource and one instrumentation scope (``ExportTraceServiceRequest``).

The SDK's way (a ``ReadableSpan`` each, then ``encode_spans`` building the protobuf
objects one field at a time) costs ~300 us a span; these bytes cost a tenth of it (see
bench/README.md, "otel"). The bytes parse to the message the SDK's encoder makes of the
same spans (tests/otel/test_encode.py holds them equal), field for field: the span's
flags (``SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK``) and a status on every span included.

The wire format: each field is its tag (number << 3 | wire type) as a varint, then a
varint, 8 or 4 little-endian bytes, or a length and that many bytes (a string, bytes, or
an embedded message). See opentelemetry-proto's ``trace.proto`` and ``common.proto``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

from four.otel._spans import Span, SpanEvent

_SMALL = [bytes([n]) for n in range(128)]
_Q = struct.Struct("<Q").pack
_D = struct.Struct("<d").pack
_KINDS = {"internal": b"\x30\x01", "client": b"\x30\x03"}  # Span.kind (6): INTERNAL, CLIENT
_FLAGS = b"\x85\x01" + struct.pack("<I", 0x100)  # Span.flags (16, fixed32): HAS_IS_REMOTE
_UNSET = b"\x7a\x00"  # Span.status (15), code UNSET: the SDK sends it on every span
_OK = b"\x7a\x02\x18\x01"
_MASK = (1 << 64) - 1


def varint(n: int) -> bytes:
    """``n`` as a protobuf varint (a negative one as its 64-bit two's complement).

    >>> varint(1), varint(300), len(varint(-1))
    (b'\\x01', b'\\xac\\x02', 10)
    """
    if 0 <= n < 128:
        return _SMALL[n]
    n &= _MASK
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag, its length, its bytes."""
    n = len(payload)
    return tag + (_SMALL[n] if n < 128 else varint(n)) + payload


def _text(value: str) -> bytes:
    try:
        return value.encode()
    except UnicodeEncodeError:  # a lone surrogate: protobuf strings are UTF-8, U+FFFD then
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode()


_keys: dict[str, bytes] = {}


def _key(key: str) -> bytes:
    """``KeyValue.key`` (1), encoded once per name."""
    found = _keys.get(key)
    if found is None:
        found = _field(b"\x0a", _text(key))
        if len(_keys) < 4096:  # the conventions' few names, and the resource's
            _keys[key] = found
    return found


def any_value(value: object) -> bytes:
    """An ``AnyValue``: a string (1), bool (2), int (3), double (4), an array (5) of
    them; anything else as its ``str``.

    >>> any_value("hi"), any_value(True), any_value(3)
    (b'\\n\\x02hi', b'\\x10\\x01', b'\\x18\\x03')
    """
    if isinstance(value, str):
        return _field(b"\x0a", _text(value))
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + varint(value)
    if isinstance(value, float):
        return b"\x21" + _D(value)
    if isinstance(value, (tuple, list)):
        return _field(b"\x2a", b"".join(_field(b"\x0a", any_value(v)) for v in value))
    return _field(b"\x0a", _text(str(value)))


def attributes(tag: bytes, found: Mapping[str, object]) -> bytes:
    """Each attribute as a ``KeyValue`` field ``tag`` of its message."""
    parts = []
    for key, value in found.items():
        if type(value) is int:  # counts: each its own
            parts.append(_field(tag, _key(key) + _field(b"\x12", b"\x18" + varint(value))))
            continue
        # the same few values again and again (the operation, the model...): encoded once
        short = (
            (isinstance(value, str) and len(value) <= 64)
            or isinstance(value, bool)
            or (isinstance(value, tuple) and all(isinstance(v, str) for v in value))
        )
        kv = _pairs.get((tag, key, value)) if short else None
        if kv is None:
            kv = _field(tag, _key(key) + _field(b"\x12", any_value(value)))
            if short:
                if len(_pairs) >= 4096:  # a bound: commands and the like come once
                    _pairs.clear()
                _pairs[(tag, key, value)] = kv
        parts.append(kv)
    return b"".join(parts)


_pairs: dict[tuple[bytes, str, object], bytes] = {}


def _ns(seconds: float) -> bytes:
    return _Q(round(seconds * 1e9) & _MASK)


def _event(event: SpanEvent) -> bytes:
    body = b"\x09" + _ns(event.time) + _field(b"\x12", _text(event.name))
    return _field(b"\x5a", body + attributes(b"\x1a", event.attributes))  # Span.events (11)


def span(found: Span) -> bytes:
    """One ``Span`` message (its field in ``ScopeSpans``, 2)."""
    parts = [
        b"\x0a\x10", found.trace_id.to_bytes(16, "big"),  # trace_id (1)
        b"\x12\x08", found.span_id.to_bytes(8, "big"),  # span_id (2)
    ]  # fmt: skip
    if found.parent_id is not None:
        parts += (b"\x22\x08", found.parent_id.to_bytes(8, "big"))  # parent_span_id (4)
    parts += (
        _field(b"\x2a", _text(found.name)),  # name (5)
        _KINDS[found.kind],
        b"\x39", _ns(found.start), b"\x41", _ns(found.end),  # start, end (7, 8: fixed64)
        attributes(b"\x4a", found.attributes),  # attributes (9)
    )  # fmt: skip
    parts += (_event(e) for e in found.events)
    if found.error is not None:  # Status: message (2), code ERROR (3)
        parts.append(_field(b"\x7a", _field(b"\x12", _text(found.error)) + b"\x18\x02"))
    else:
        parts.append(_OK if found.ok else _UNSET)
    parts.append(_FLAGS)
    return _field(b"\x12", b"".join(parts))


def resource(found: Mapping[str, object]) -> bytes:
    """``ResourceSpans.resource`` (1): its attributes. Encoded once per sender."""
    return _field(b"\x0a", attributes(b"\x0a", found))


def scope(name: str, version: str) -> bytes:
    """``ScopeSpans.scope`` (1): the instrumentation's name and version."""
    return _field(b"\x0a", _field(b"\x0a", _text(name)) + _field(b"\x12", _text(version)))


def request(head: bytes, scoped: bytes, schema_url: str, spans: Iterable[bytes]) -> bytes:
    """An ``ExportTraceServiceRequest`` of ``spans`` (each from ``span``) under one
    resource (``head``, from ``resource``) and one scope (``scoped``, from ``scope``)
    whose schema is ``schema_url``."""
    scoped_spans = scoped + b"".join(spans) + _field(b"\x1a", _text(schema_url))
    return _field(b"\x0a", head + _field(b"\x12", scoped_spans))
