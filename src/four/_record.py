"""``@record``: a frozen, slotted value class, made at a third of a dataclass's import cost.

``dataclass(frozen=True, slots=True)`` compiles six methods per class at import time
(about 1.2 ms each class here); ``import four`` defines some twenty value types and has a
60 ms budget. A record compiles only its ``__init__``, and ``dataclasses`` itself (which
loads ``inspect``) is imported only when its helpers are used. Type checkers see a frozen
dataclass (PEP 681). Fields are the class's annotations, in order; ``ClassVar`` ones are
class constants. Defaults must be immutable. ``dataclasses.fields``, ``replace`` and
``asdict`` work on records.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast, dataclass_transform

if TYPE_CHECKING:
    import dataclasses

C = TypeVar("C", bound=type)


def _frozen(self: object, name: str, value: object = None) -> None:
    from dataclasses import FrozenInstanceError  # here, not at import: see _Fields

    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _values(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """All fields of an instance as a tuple, fetched in C."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        one = operator.attrgetter(names[0])
        return lambda self: (one(self),)
    return lambda self: ()


def _methods(
    qualname: str, names: tuple[str, ...], values: Callable[[object], tuple[object, ...]]
) -> dict[str, Callable[..., object]]:
    def __repr__(self: object) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(names, values(self), strict=True))
        return f"{qualname}({shown})"

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(values(self))

    def __getstate__(self: object) -> tuple[object, ...]:
        return values(self)

    methods: dict[str, Callable[..., object]] = {
        "__repr__": __repr__,
        "__eq__": __eq__,
        "__hash__": __hash__,
        "__getstate__": __getstate__,
    }
    for name, method in methods.items():
        method.__qualname__ = f"{qualname}.{name}"
    return methods


def _setstate(self: object, state: tuple[object, ...]) -> None:
    for name, value in zip(self.__slots__, state, strict=True):  # type: ignore[attr-defined]
        object.__setattr__(self, name, value)


class _Fields:
    """A record's ``__dataclass_fields__``, made on first use: ``dataclasses`` loads
    ``inspect``, about a fifth of ``import four``, and only its own helpers read this."""

    def __init__(
        self, names: tuple[str, ...], kinds: Mapping[str, object], defaults: dict[str, object]
    ):
        self._names, self._kinds, self._defaults = names, kinds, defaults

    def __get__(
        self, instance: object, owner: type | None = None
    ) -> dict[str, dataclasses.Field[object]]:
        import dataclasses

        fields = {}
        for name in self._names:
            default = self._defaults.get(name, dataclasses.MISSING)
            made = cast("dataclasses.Field[object]", dataclasses.field(default=default))
            made.name, made.type = name, cast(type, self._kinds[name])
            made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
            fields[name] = made
        if owner is not None:
            owner.__dataclass_fields__ = fields  # type: ignore[attr-defined]  # once a class
        return fields


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
    values = _values(names)
    namespace.update(_methods(cls.__qualname__, names, values))
    namespace.update(
        __dataclass_fields__=_Fields(names, annotations, defaults),
        __slots__=names,
        __match_args__=names,
        __setattr__=_frozen,
        __delattr__=_frozen,
        __setstate__=_setstate,
    )
    namespace.pop("__weakref__", None)
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__init__ = _init(made, names, defaults, "__post_init__" in namespace)  # type: ignore[misc]
    return made


def _init(
    cls: type, names: tuple[str, ...], defaults: Mapping[str, object], post: bool
) -> Callable[..., None]:
    """Compile the record's ``__init__``, the one method on every hot path (the others
    share one C-level getter of all fields, so a class costs one small compile). Each
    field is stored through its slot's own descriptor: half the cost of
    ``object.__setattr__``, which looks the name up on the class first."""
    params = ", ".join(f"{n}=_d_{n}" if n in defaults else n for n in names)
    sets = "".join(f"\n  _s_{n}(self, {n})" for n in names) or "\n  pass"
    scope: dict[str, Any] = {f"_d_{n}": v for n, v in defaults.items()}
    scope.update({f"_s_{n}": cls.__dict__[n].__set__ for n in names})
    after = "\n  self.__post_init__()" if post else ""
    exec(f"def __init__(self, {params}):{sets}{after}\n", scope)
    init: Callable[..., None] = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init
