"""Selects the accounting core: the compiled `_accounting_c` unless it is missing or
`FOUR_NO_EXTENSIONS` is set (to any non-empty value), or the interpreter is not
CPython. Type checkers always read the typed pure module."""

from __future__ import annotations

from typing import TYPE_CHECKING

from four._chain import NO_EXTENSIONS

if TYPE_CHECKING or NO_EXTENSIONS:
    from . import _accounting_py as _impl
else:
    try:
        from . import _accounting_c as _impl
    except ImportError:  # pragma: no cover - depends on the build
        from . import _accounting_py as _impl

USE_EXTENSIONS: bool = _impl.__name__.endswith("_accounting_c")

FORMAT_VERSION = _impl.FORMAT_VERSION
admissible_rank = _impl.admissible_rank
audit_feed = _impl.audit_feed
audit_result = _impl.audit_result
evaluate = _impl.evaluate
fingerprint = _impl.fingerprint
genesis = _impl.genesis
handle = _impl.handle
rank = _impl.rank
receipt_digest = _impl.receipt_digest

__all__ = [
    "FORMAT_VERSION",
    "NO_EXTENSIONS",
    "USE_EXTENSIONS",
    "admissible_rank",
    "audit_feed",
    "audit_result",
    "evaluate",
    "fingerprint",
    "genesis",
    "handle",
    "rank",
    "receipt_digest",
]
