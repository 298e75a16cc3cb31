"""A component's settings as JSON, for the trajectory's record of how a run was made."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from typing import cast

from four._secrets import is_secret
from four._types import JSON


def describe(component: object) -> JSON:
    """Name a component and, for a dataclass, its JSON-able settings (secrets masked).

    >>> describe(len)
    'builtins.len'
    """
    if isinstance(component, functools.partial):
        return {"type": _name(component.func), "args": _json(component.args)}
    kind: type = type(component)
    dataclass = _dataclass(kind)  # None for a class itself too (its type is no dataclass)
    if dataclass is None:
        return _name(component)
    name, fields = dataclass
    settings: dict[str, JSON] = {"type": name}
    for field, hidden in fields:
        value = getattr(component, field)
        if hidden and value:
            value = "***"
        elif value.__class__ not in _PLAIN:  # most settings are plain: no _json call
            value = _json(value)
        settings[field] = value
    return settings


@functools.lru_cache(maxsize=512)  # every run describes its four components
def _dataclass(kind: type) -> tuple[str, tuple[tuple[str, bool], ...]] | None:
    """A dataclass's name and shown fields, each with whether its value is a secret to
    mask; None for any other class."""
    if not dataclasses.is_dataclass(kind):
        return None
    shown = tuple(
        (f.name, is_secret(f.name))  # api_key, not token_limit
        for f in dataclasses.fields(kind)
        if not f.name.startswith("_") and f.repr
    )
    return _name(kind), shown


def _name(obj: object) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{qualname}"


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _json(value: object) -> JSON:
    if value.__class__ in _PLAIN:  # most settings: a set lookup, not an isinstance of a union
        return value  # type: ignore[return-value]  # a JSON value (cast() would be a call)
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple | frozenset | set):  # before Mapping: an ABC check is slow
        values = cast(tuple[object, ...], tuple(value))
        if _PLAIN.issuperset(map(type, values)):  # names, patterns: no call per value
            return list(values)  # type: ignore[arg-type]  # of JSON values
        return [_json(v) for v in values]
    if isinstance(value, os.PathLike):  # a folder reads as its path, not as a repr
        return str(os.fspath(cast("os.PathLike[str]", value)))
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in cast(Mapping[object, object], value).items()}
    if callable(value) or dataclasses.is_dataclass(value):
        return describe(value)
    return repr(value)
