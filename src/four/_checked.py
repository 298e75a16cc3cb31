"""Wrong arguments named in one line, by checks derived from the annotations (read once):
``checked`` for a function's (or a component's ``__call__``), ``check_fields`` for a
record's fields. What an annotation cannot say at run time (a Protocol that is not
``runtime_checkable``, a type variable, ``Any``) is not checked.

>>> @checked
... def greet(name: str, times: int = 1) -> str:
...     return name * times
>>> greet(None)
Traceback (most recent call last):
...
TypeError: greet: name=None: give a str (not a NoneType)
"""

from __future__ import annotations

import abc
import collections.abc
import dataclasses
import functools
import inspect
import os
import pathlib
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, cast, get_args, get_origin

from four._arguments import shown

F = TypeVar("F", bound=Callable[..., Any])

_Check = tuple[str, tuple[type, ...], str]
"""A parameter: its name, the types its values may have, and those types in words."""


def checked(fn: F) -> F:
    """``fn``, checking each argument given against its parameter's annotation first."""
    where = _where(fn)

    @functools.wraps(fn)
    def call(*args: object, **kwargs: object) -> object:
        positional, named = _spec(fn)  # read at the first call
        for value, check in zip(args, positional, strict=False):
            if check is not None and not isinstance(value, check[1]):
                raise TypeError(_said(where, check, value))
        for name, value in kwargs.items():
            found = named.get(name)
            if found is not None and not isinstance(value, found[1]):
                raise TypeError(_said(where, found, value))
        return fn(*args, **kwargs)

    return cast(F, call)


_FIELDS: dict[type, Callable[[object], None]] = {}


class Checked:
    """A record's fields checked when it is made (``check_fields``): a wrong value named
    there, not deep inside a run."""

    __slots__ = ()

    def __post_init__(self) -> None:
        check_fields(self)


def check_fields(record: object, skip: tuple[str, ...] = ()) -> None:
    """Each field of the dataclass (or msgspec Struct) ``record`` against its annotation
    (but those named in ``skip``, the same for every record of its class): the first that
    does not match raises.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Point:
    ...     x: int
    ...     def __post_init__(self) -> None:
    ...         check_fields(self)
    >>> Point("3")
    Traceback (most recent call last):
    ...
    TypeError: Point: x='3': give an int (not a str)
    """
    kind = type(record)
    check = _FIELDS.get(kind)
    if check is None:
        check = _FIELDS[kind] = _fields_check(kind, skip)
    check(record)


def _fields_check(kind: type, skip: tuple[str, ...]) -> Callable[[object], None]:
    """One function checking the fields of a ``kind``, written for it once: a line of
    ``isinstance`` a field, with no loop or lookup of its own (the records of the
    loop's step are checked on each step)."""
    hints = _hints(kind)
    if dataclasses.is_dataclass(kind):  # the fields given (not those made after)
        names = [f.name for f in dataclasses.fields(kind) if f.init]
    else:
        names = list(getattr(kind, "__struct_fields__", ()))
    found = (_check(n, hints[n]) for n in names if n in hints and n not in skip)
    checks = [check for check in found if check is not None]
    space: dict[str, object] = {"_said": _said, "_where": kind.__name__}
    lines = ["def check(record):"]
    for i, (name, accepts, _) in enumerate(checks):  # a name is an identifier: a field's
        space[f"_t{i}"] = accepts[0] if len(accepts) == 1 else accepts
        space[f"_c{i}"] = checks[i]
        exact = frozenset(t for t in accepts if not isinstance(t, abc.ABCMeta | _Test))
        if len(exact) < len(accepts):  # an ABC's isinstance is slow: its classes first
            space[f"_e{i}"] = exact  # (None, a dict: what the record holds, nearly always)
            lines.append(f"    if type(record.{name}) not in _e{i} and not isinstance(")
            lines.append(f"        record.{name}, _t{i}")
            lines.append("    ):")
        else:
            lines.append(f"    if not isinstance(record.{name}, _t{i}):")
        lines.append(f"        raise TypeError(_said(_where, _c{i}, record.{name}))")
    lines.append("    return None")
    code = compile("\n".join(lines), f"<the fields of {kind.__qualname__}>", "exec")
    exec(code, space)  # from the fields' names only, as dataclasses writes __init__
    return cast(Callable[[object], None], space["check"])


def _hints(owner: object) -> dict[str, object]:
    """The annotations of a function or class, resolved; one that names what exists only
    for a type checker (an import under ``TYPE_CHECKING``) is left out, not checked."""
    try:
        return typing.get_type_hints(owner)
    except (NameError, TypeError, AttributeError):  # a name only a type checker sees
        pass
    found: dict[str, object] = {}
    sources = owner.__mro__[::-1] if isinstance(owner, type) else (owner,)
    for source in sources:
        module = sys.modules.get(getattr(source, "__module__", ""), None)
        space = dict(vars(module)) if module is not None else {}
        space.update(getattr(source, "__globals__", {}))
        for name, hint in getattr(source, "__annotations__", {}).items():
            try:
                found[name] = eval(hint, space) if isinstance(hint, str) else hint
            except Exception:  # unresolvable here: not checked
                found.pop(name, None)
    return found


@functools.cache
def _spec(fn: Callable[..., Any]) -> tuple[tuple[_Check | None, ...], dict[str, _Check]]:
    hints = _hints(fn)
    positional: list[_Check | None] = []
    named: dict[str, _Check] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            break
        known = p.name in hints and p.name not in ("self", "cls")  # else: not checked
        check = _check(p.name, hints[p.name]) if known else None
        if p.kind != p.KEYWORD_ONLY:
            positional.append(check)
        if check is not None and p.kind != p.POSITIONAL_ONLY:
            named[p.name] = check
    return tuple(positional), named


def _check(name: str, hint: object) -> _Check | None:
    """``name``'s check: the classes a value of ``hint`` is an instance of, and ``hint`` as
    a person would say it (``a str``, ``a Sequence or None``); None when that cannot be said."""
    if hint is None or hint is type(None):
        return name, (type(None),), "None"
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        parts = [_check(name, a) for a in get_args(hint)]
        if any(p is None for p in parts):
            return None
        known = cast(list[_Check], parts)
        return name, sum((p[1] for p in known), ()), " or ".join(p[2] for p in known)
    if origin is Literal:
        return name, (_one_of(get_args(hint)),), " or ".join(repr(v) for v in get_args(hint))
    target = origin if origin is not None else hint
    words = _a(getattr(target, "__name__", str(target)))
    if origin is collections.abc.Callable:
        return name, (cast(type, collections.abc.Callable),), words
    if not isinstance(target, type) or target is object or target is Any:
        return None  # Any (a class since Python 3.11), a type variable, a NewType...
    loose = _LOOSE.get(target)
    if loose is not None:  # a list where a tuple is asked for works as well
        return name, loose, words
    if getattr(target, "_is_protocol", False) and not getattr(
        target, "_is_runtime_protocol", False
    ):
        return name, (_shaped(target),), words  # isinstance cannot: its members are looked for
    return name, ((int, float) if target is float else (target,)), words


_LOOSE: dict[type, tuple[type, ...]] = {
    tuple: (tuple, collections.abc.Sequence, collections.abc.Set),
    list: (list, collections.abc.Sequence),
    frozenset: (frozenset, collections.abc.Set),
    set: (set, collections.abc.Set),
    dict: (dict, collections.abc.Mapping),
    pathlib.Path: (pathlib.Path, str, os.PathLike),
}
"""What a value of a concrete collection's (or a path's) annotation may be: what works
in its place as well, since callers pass lists for tuples and strs for paths. The
mistakes named are the others (``None``, a number, an object of another kind). The
annotated class comes first: ``isinstance`` stops at it, the ABCs cost only the others."""


class _Test(type):
    """The class of the stand-ins below: an instance is a value that passes ``test``."""

    test: Callable[[object], bool]
    kinds: tuple[type, ...] = ()  # a Literal's: the types of its values

    def __instancecheck__(cls, value: object) -> bool:
        return cls.test(value)


@functools.cache
def _shaped(protocol: type) -> type:
    """A stand-in for a Protocol in ``isinstance``: a value with each of its members (a
    function for ``Invoke``, whose one member is ``__call__``), as ``runtime_checkable``
    would check, without making the Protocol itself runtime-checkable."""
    names: set[str] = set()
    for base in protocol.__mro__:
        if base is object or getattr(base, "_is_protocol", False) is False:
            continue
        names |= {n for n in vars(base) if n == "__call__" or not n.startswith("_")}
        names |= set(getattr(base, "__annotations__", {}))
    members = ("__call__",) if "__call__" in names else tuple(sorted(names))  # a function's

    def test(value: object) -> bool:
        return all(hasattr(value, m) for m in members)

    return _Test(protocol.__name__, (), {"test": staticmethod(test)})


@functools.cache
def _one_of(values: tuple[object, ...]) -> type:
    """A stand-in for ``Literal[values]`` in ``isinstance``: a value of one of their
    types that equals one of them (a str of the right type but no allowed value is
    refused, as a type checker would)."""
    kinds = tuple({type(v): None for v in values})

    def test(value: object) -> bool:
        return isinstance(value, kinds) and value in values

    return _Test("Literal", (), {"test": staticmethod(test), "kinds": kinds})


def _said(where: str, check: _Check, value: object) -> str:
    kind = _a(type(value).__name__)
    if any(isinstance(t, _Test) and isinstance(value, t.kinds) for t in check[1]):
        kind = f"another {type(value).__name__}"  # of the right type: the value is wrong
    return f"{where}: {check[0]}={shown(value)}: give {check[2]} (not {kind})"


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _where(fn: Callable[..., Any]) -> str:
    """``audit``; ``RegexParse`` for ``RegexParse.__call__`` and ``RegexParse.__init__``."""
    owner, _, name = fn.__qualname__.rpartition(".")
    return owner if name in ("__call__", "__init__") and owner else fn.__qualname__
