"""Names a package exports but loads on first use (PEP 562), so importing it stays cheap."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path


def lazy(
    package: str, init: str
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for ``package``, whose public names are
    those its ``__init__.py`` (``init``) imports under ``if TYPE_CHECKING:``: each written
    once, where a type checker reads it, and loaded from its module on first use.

    >>> import four
    >>> getattr_, dir_, names = lazy("four", four.__file__)
    >>> getattr_("run").__name__, "Reply" in names
    ('run', True)
    """
    where: dict[str, str] = {}
    for node in ast.parse(Path(init).read_bytes()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    where.update((a.asname or a.name, statement.module) for a in statement.names)
    names = sorted(where)

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        importlib.import_module(package).__dict__[name] = value  # later lookups are direct
        return value

    def __dir__() -> list[str]:
        return names

    return __getattr__, __dir__, names
