"""``@record``: a frozen, slotted value class, made at a third of a dataclass's import cost.

``dataclass(frozen=True, slots=True)`` compiles six methods per class at import time
(about 1.2 ms each class here); ``import four`` defines some twenty value types and has a
60 ms budget. A record compiles one small block per class. Type checkers see a frozen
dataclass (PEP 681). Fields are the class's annotations, in order; ``ClassVar`` ones are
class constants. Defaults must be immutable. ``dataclasses.fields``, ``replace`` and
``asdict`` work on records.
"""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError
from typing import Any, TypeVar, cast, dataclass_transform

C = TypeVar("C", bound=type)


def _frozen(self: object, name: str, value: object = None) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _getstate(self: object) -> tuple[object, ...]:
    return tuple(getattr(self, name) for name in self.__slots__)  # type: ignore[attr-defined]


def _setstate(self: object, state: tuple[object, ...]) -> None:
    for name, value in zip(self.__slots__, state, strict=True):  # type: ignore[attr-defined]
        object.__setattr__(self, name, value)


def _field(name: str, kind: object, defaults: dict[str, object]) -> dataclasses.Field[object]:
    """A Field as a dataclass would record it, so the dataclasses helpers accept records."""
    default = defaults.get(name, dataclasses.MISSING)
    made = cast("dataclasses.Field[object]", dataclasses.field(default=default))
    made.name, made.type = name, cast(type, kind)
    made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
    return made


@dataclass_transform(frozen_default=True, eq_default=True)
def record(cls: C) -> C:
    """Make ``cls`` a frozen, slotted value class with __init__, __repr__, __eq__, __hash__.

    >>> @record
    ... class Point:
    ...     x: int
    ...     y: int = 0
    >>> Point(1) == Point(1, 0), Point(2)
    (True, Point(x=2, y=0))
    """
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (own class only)
    names = tuple(
        n for n, kind in annotations.items() if not str(kind).split("[")[0].endswith("ClassVar")
    )
    namespace = {k: v for k, v in cls.__dict__.items() if k not in names and k != "__dict__"}
    defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    params = ", ".join(f"{n}=_d_{n}" if n in defaults else n for n in names)
    sets = "".join(f"\n  _set(self, {n!r}, {n})" for n in names)
    post = "\n  self.__post_init__()" if "__post_init__" in namespace else ""
    values = "".join(f"self.{n}, " for n in names)
    other = "".join(f"o.{n}, " for n in names)
    shown = ", ".join(f"{n}={{self.{n}!r}}" for n in names)
    source = (
        f"def __init__(self, {params}):{sets or chr(10) + '  pass'}{post}\n"
        f"def __repr__(self):\n  return f'{cls.__qualname__}({shown})'\n"
        "def __eq__(self, o):\n  if o.__class__ is self.__class__:\n"
        f"    return ({values}) == ({other})\n  return NotImplemented\n"
        f"def __hash__(self):\n  return hash(({values}))\n"
    )
    scope: dict[str, Any] = {f"_d_{n}": v for n, v in defaults.items()}
    scope["_set"] = object.__setattr__
    exec(source, scope)
    for method in ("__init__", "__repr__", "__eq__", "__hash__"):
        scope[method].__qualname__ = f"{cls.__qualname__}.{method}"
        namespace[method] = scope[method]
    namespace.update(
        __dataclass_fields__={n: _field(n, annotations[n], defaults) for n in names},
        __slots__=names,
        __match_args__=names,
        __setattr__=_frozen,
        __delattr__=_frozen,
        __getstate__=_getstate,
        __setstate__=_setstate,
    )
    namespace.pop("__weakref__", None)
    return type(cls)(cls.__name__, cls.__bases__, namespace)
