"""Stub for the compiled twin of ``four._chain``'s ``link_text``, ``link`` and ``chain``.

Checked against the built extension by `python -m mypy.stubtest four._chain_c`.
"""

from collections.abc import Iterable

from four._types import JSON

def link_text(digest: bytes, label: str, value: str) -> bytes: ...
def link(digest: bytes, label: str, value: JSON) -> bytes: ...
def chain(digest: bytes, links: Iterable[tuple[str, JSON]]) -> tuple[bytes, list[str]]: ...
