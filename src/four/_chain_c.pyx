# cython: language_level=3, embedsignature=True, embedsignature.format=python, autotestdict=False
"""The compiled twin of ``four._chain``'s ``link_text``, ``link`` and ``chain`` (the same bytes, checked
by tests/test_chain.py): JSON's own C encoder, made once, and ``hashlib``'s
SHA-256, without the Python frames between them. ``four audit`` spends about a third of
a run in the seal's links (bench/README.md, "audit")."""

from hashlib import sha256
from json import JSONEncoder
from json.encoder import c_make_encoder, encode_basestring_ascii

# JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False), as _chain's,
# but the C encoder made once (JSONEncoder.encode makes one a call, in two Python frames)
try:
    _ENCODER = c_make_encoder(None, JSONEncoder().default, encode_basestring_ascii, None,
                              ":", ",", True, False, True)
except TypeError as exc:  # another json: four._chain takes the pure twins
    raise ImportError(f"json's C encoder takes other arguments here: {exc}") from None


cdef inline str _text(value):
    if type(value) is str:
        return encode_basestring_ascii(value)
    return "".join(_ENCODER(value, 0))


def link_text(bytes digest not None, str label not None, str value not None):
    """``link`` of a label and a value already encoded (their canonical text)."""
    return sha256(digest + f'[{label},"value",{value}]'.encode()).digest()


def link(bytes digest not None, str label not None, value):
    """The digest after ``digest`` of the link ``label`` holding ``value``."""
    return link_text(digest, encode_basestring_ascii(label), _text(value))


def chain(bytes digest not None, links):
    """The digests of ``links`` (label and value pairs) after ``digest``: the last, and
    each link's first 16 hex digits."""
    cdef list shorts = []
    for label, value in links:
        digest = link(digest, label, value)
        shorts.append(digest.hex()[:16])
    return digest, shorts


def unique(list pairs not None):
    """An object from its pairs; ValueError when a key repeats."""
    cdef dict out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a key repeated in one object")
    return out
