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
    if isinstance(component, type) or not dataclasses.is_dataclass(component):
        return _name(component)
    settings: dict[str, JSON] = {"type": _name(type(component))}
    for field in dataclasses.fields(component):
        if field.repr and not field.name.startswith("_"):
            value = getattr(component, field.name)
            settings[field.name] = "***" if value and is_secret(field.name) else _json(value)
    return settings


def _name(obj: object) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{qualname}"


def _json(value: object) -> JSON:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple | frozenset | set):
        return [_json(v) for v in cast(tuple[object, ...], tuple(value))]
    if isinstance(value, os.PathLike):  # a folder reads as its path, not as a repr
        return str(os.fspath(cast("os.PathLike[str]", value)))
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in cast(Mapping[object, object], value).items()}
    if callable(value) or dataclasses.is_dataclass(value):
        return describe(value)
    return repr(value)
