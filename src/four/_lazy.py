"""Names a package exports but loads on first use (PEP 562), so importing it stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence


def lazy(
    package: str, where: Mapping[str, str], names: Sequence[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``where`` maps a name to its module.

    >>> getattr_, dir_ = lazy("p", {"dumps": "json"}, ["dumps"])
    >>> getattr_("dumps").__name__, dir_()
    ('dumps', ['dumps'])
    """

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        importlib.import_module(package).__dict__[name] = value  # later lookups are direct
        return value

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__
