"""One hash chain, for a run's seal and for its verdict receipts: SHA-256 over canonical
JSON, its links compiled too (docs/seal.md); SHA-256 rather than BLAKE2b, twice as fast for
a long link with SHA extensions (bench/README.md, "audit")."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring_ascii as _QUOTE
from typing import TYPE_CHECKING

from four._types import JSON

NO_EXTENSIONS: bool = bool(os.environ.get("FOUR_NO_EXTENSIONS")) or (
    sys.implementation.name != "cpython"
)

# One encoder, made once (json.dumps with these arguments would make one each call), and
# the C encoder under it, made once too when json has it (encode makes one a call)
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False)
_MAKE: Callable[..., Callable[[JSON, int], Iterable[str]]] | None = getattr(
    json.encoder, "c_make_encoder", None
)
try:  # its arguments are json.encoder's own (3.11 to 3.13); another json: encode
    _ITERENCODE = _MAKE and _MAKE(None, _ENCODER.default, _QUOTE, None, ":", ",", True, False, True)
except TypeError:  # pragma: no cover - depends on the interpreter
    _ITERENCODE = None


def canonical_text(value: JSON) -> str:
    """``canonical`` as text.

    >>> canonical_text({"b": [1, 2.5], "a": True})
    '{"a":true,"b":[1,2.5]}'
    """
    if _ITERENCODE is None:  # pragma: no cover - json without its C accelerator
        return _ENCODER.encode(value)
    return "".join(_ITERENCODE(value, 0))


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
    return link_text(digest, _QUOTE(label), canonical_text(value))


def chain(digest: bytes, links: Iterable[tuple[str, JSON]]) -> tuple[bytes, list[str]]:
    """The digests of ``links`` (label and value pairs) after ``digest``: the last, and
    each link's first 16 hex digits.

    >>> last, shorts = chain(start("t"), [("x", [1]), ("y", None)])
    >>> last == link(link(start("t"), "x", [1]), "y", None), len(shorts[0])
    (True, 16)
    """
    shorts = []
    for label, value in links:
        digest = link(digest, label, value)
        shorts.append(digest.hex()[:16])
    return digest, shorts


def unique(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
    """An object from its pairs, as JSON's decoder gives them; one that repeats a key is
    refused (which value counts would be a guess).

    >>> unique([("a", 1), ("a", 2)])
    Traceback (most recent call last):
    ...
    ValueError: a key repeated in one object
    """
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a key repeated in one object")
    return out


# the compiled ones' twins
pure_link_text, pure_link, pure_chain, pure_unique = link_text, link, chain, unique
COMPILED = False
if not TYPE_CHECKING and not NO_EXTENSIONS:
    try:
        from four._chain_c import chain, link, link_text, unique

        COMPILED = True
    except ImportError:  # pragma: no cover - depends on the build
        pass

_DECODER = json.JSONDecoder(object_pairs_hook=unique)  # (json.loads builds one a call)


def decode(text: str) -> JSON:
    """A JSON text's value, refusing an object that repeats a key (ValueError, as for
    text that is not JSON): what a record sealed by ``chain`` is read back with.

    >>> decode('{"b": [1, {"a": null}]}')
    {'b': [1, {'a': None}]}
    """
    return _DECODER.decode(text)  # type: ignore[no-any-return]
