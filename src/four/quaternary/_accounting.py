"""Selects the accounting core: the compiled `_accounting_c` unless it is missing or
`FOUR_NO_EXTENSIONS` is set (to any non-empty value), or the interpreter is not
CPython. Type checkers always read the typed pure module. (The standard library's
accelerated modules are chosen the same way: `heapq`'s `from _heapq import *`.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from four._chain import NO_EXTENSIONS

from . import _accounting_py

if TYPE_CHECKING or NO_EXTENSIONS:
    from ._accounting_py import *  # noqa: F403
else:
    try:
        from ._accounting_c import *  # noqa: F403
    except ImportError:  # pragma: no cover - depends on the build
        from ._accounting_py import *  # noqa: F403

USE_EXTENSIONS: bool = rank.__module__.endswith("_accounting_c")  # noqa: F405

__all__ = ["NO_EXTENSIONS", "USE_EXTENSIONS", *_accounting_py.__all__]
