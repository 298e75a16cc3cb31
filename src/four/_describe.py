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
    kind: type = type(component)
    settings: dict[str, JSON] = {"type": _name(kind)}
    for name, secret in _shown(kind):
        value = getattr(component, name)
        settings[name] = "***" if value and secret else _json(value)
    return settings


@functools.cache  # a class's fields, once: 3% of a short run's instructions (bench_core)
def _shown(kind: type) -> tuple[tuple[str, bool], ...]:
    """A dataclass's shown fields, each with whether its value is a secret to mask."""
    return tuple(
        (f.name, is_secret(f.name))  # api_key, not token_limit
        for f in dataclasses.fields(kind)
        if f.repr and not f.name.startswith("_")
    )


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
