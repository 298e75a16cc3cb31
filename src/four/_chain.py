"""One hash chain, for a run's seal and for its verdict receipts: SHA-256 over canonical
JSON.

A chain starts from ``sha256(tag)``; each link is
``digest = sha256(digest + canonical([label, "value", value]))``, where ``canonical`` is
JSON with sorted keys, no spaces, ASCII only. SHA-256 rather than BLAKE2b: as fast for a
short link and about twice as fast for a long one on CPUs with SHA extensions
(bench/README.md, "audit").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from four._types import JSON

# One encoder for every value: json.dumps, and JSONEncoder.encode, build a new C encoder
# on each call. Values are JSON data (no cycles), so there is no circular-reference check.
_C_ENCODER: Callable[..., Callable[[object, int], list[str]]] | None = getattr(
    json.encoder, "c_make_encoder", None
)
_ESCAPE = json.encoder.encode_basestring_ascii
_ENCODE: Callable[[object], str]
if _C_ENCODER is None:  # pragma: no cover - an interpreter without json's C accelerator
    _ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
else:
    _ITERENCODE = _C_ENCODER(None, None, _ESCAPE, None, ":", ",", True, False, True)

    def _ENCODE(value: object) -> str:
        return "".join(_ITERENCODE(value, 0))


def canonical_text(value: JSON) -> str:
    """``canonical`` as text.

    >>> canonical_text({"b": [1, 2.5], "a": True})
    '{"a":true,"b":[1,2.5]}'
    """
    return _ENCODE(value)


def canonical(value: JSON) -> bytes:
    """The bytes a value is hashed as: equal JSON values give equal bytes.

    >>> canonical({"b": [1, "é"], "a": None})
    b'{"a":null,"b":[1,"\\\\u00e9"]}'
    """
    return canonical_text(value).encode()


def start(tag: str) -> bytes:
    """The digest a chain named ``tag`` starts from.

    >>> start("four.seal/1").hex()[:16]
    'cf79f9d57a0f5bfe'
    """
    return hashlib.sha256(tag.encode()).digest()


def link_text(digest: bytes, label: str, value: str) -> bytes:
    """``link`` of a label and a value already encoded (their ``canonical_text``)."""
    return hashlib.sha256(digest + f'[{label},"value",{value}]'.encode()).digest()


def link(digest: bytes, label: str, value: JSON) -> bytes:
    """The digest after ``digest`` of the link ``label`` holding ``value``.

    >>> link(start("t"), "x", [1]) == link_text(start("t"), '"x"', "[1]")
    True
    """
    return link_text(digest, _ESCAPE(label), canonical_text(value))
