"""Copy-with-changes for our value classes, dataclasses and ``@record`` classes alike."""

from __future__ import annotations

from typing import TypeVar

from four._types import NO_USAGE, Assistant, ModelError, Usage

T = TypeVar("T")


def evolve(value: T, **changes: object) -> T:
    """A copy of ``value`` with ``changes``; fields are read from ``__match_args__``.

    >>> from four import User
    >>> evolve(User("a"), content="b")
    User(content='b')
    """
    names: tuple[str, ...] = getattr(type(value), "__match_args__", ())
    unknown = set(changes) - set(names)
    if unknown:
        raise TypeError(f"{type(value).__name__} has no fields {sorted(unknown)}")
    fields = {name: getattr(value, name) for name in names}
    return type(value)(**{**fields, **changes})


def add_usage(reply: Assistant, usage: Usage) -> Assistant:
    """``reply`` with ``usage`` added to its own (billed calls that led to it)."""
    return evolve(reply, usage=(reply.usage or NO_USAGE) + usage)


def add_error_usage(error: ModelError, usage: Usage) -> ModelError:
    """``error`` with ``usage`` added to its own."""
    return evolve(error, usage=(error.usage or NO_USAGE) + usage)
