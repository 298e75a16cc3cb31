"""Checks of the arguments of the public constructors, made once, when they are called:
a wrong argument raises there, not deep inside a run (docs/loop.md), a ``TypeError`` for
the wrong kind, a ``ValueError`` out of range.

>>> seconds("local_env", "timeout", -1)
Traceback (most recent call last):
...
ValueError: local_env: timeout=-1: give a number of seconds above 0 (and finite)
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import TypeGuard


def shown(value: object, width: int = 60) -> str:
    """``repr(value)``, cut to ``width`` characters: a wrong value as errors name it."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def seconds(where: str, name: str, value: object, *, optional: bool = False) -> None:
    """A duration: a finite number above 0 (or None, when ``optional``: no limit)."""
    if value is None and optional:
        return
    if not _is_number(value):
        none = ", or None for no limit" if optional else ""
        raise TypeError(
            f"{where}: {name}={shown(value)}: give a number of seconds{none} "
            f"(not a {type(value).__name__})"
        )
    if not 0 < value < math.inf:
        none = "; None means no limit" if optional else ""
        raise ValueError(
            f"{where}: {name}={shown(value)}: give a number of seconds above 0 (and finite){none}"
        )


def count(
    where: str, name: str, value: object, *, minimum: int = 0, optional: bool = False
) -> None:
    """A whole number of at least ``minimum`` (or None, when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        hint = f"; write {name}={int(value)}" if _is_number(value) and value == int(value) else ""
        raise TypeError(
            f"{where}: {name}={shown(value)}: give a whole number (an int) of at least "
            f"{minimum}{hint}"
        )
    if value < minimum:
        raise ValueError(f"{where}: {name}={value}: give a whole number of at least {minimum}")


def amount(where: str, name: str, value: object, *, optional: bool = False) -> None:
    """A finite number of at least 0 (a cost, a factor), or None when ``optional``."""
    if value is None and optional:
        return
    if not _is_number(value):
        none = " or None" if optional else ""
        raise TypeError(f"{where}: {name}={shown(value)}: give a number{none}")
    if not 0 <= value < math.inf:
        raise ValueError(f"{where}: {name}={shown(value)}: give a finite number of at least 0")


def text(
    where: str, name: str, value: object, *, empty: bool = False, optional: bool = False
) -> None:
    """A str, which must say something unless ``empty`` (or None, when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"{where}: {name}={shown(value)}: give a str")
    if not empty and not value.strip():
        raise ValueError(f"{where}: {name} is empty: give the {name.replace('_', ' ')} itself")


def path(where: str, name: str, value: object, *, optional: bool = False) -> None:
    """A path: a str or ``os.PathLike``, not empty."""
    if value is None and optional:
        return
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"{where}: {name}={shown(value)}: give a path (a str or a Path)")
    if not os.fspath(value):
        raise ValueError(f"{where}: {name} is empty: give a path")


def names(where: str, name: str, value: object) -> None:
    """Several strs: a list or tuple of them, never one str (iterated letter by letter)."""
    if isinstance(value, str):
        raise TypeError(
            f"{where}: {name}={shown(value)} is one str, and would be read letter by letter: "
            f"write {name}=[{value!r}]"
        )
    if not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise TypeError(f"{where}: {name}={shown(value)}: give a list of strs")
    for each in value:
        if not isinstance(each, str):  # None too
            raise TypeError(f"{where}: {name} holds {shown(each)}: give a list of strs")


def variables(where: str, name: str, value: object) -> None:
    """Environment variables: None, or a mapping of str to str."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise TypeError(f"{where}: {name}={shown(value)}: give a dict of str to str, or None")
    for k, v in value.items():
        if not isinstance(k, str | bytes) or not isinstance(v, str):
            raise TypeError(
                f"{where}: {name} maps {shown(k)} to {shown(v)}: variables are str to str"
            )


def component(where: str, name: str, value: object, what: str) -> None:
    """A function (a component): callable, not None, not a str."""
    if not callable(value):
        raise TypeError(f"{where}: {name}={shown(value)} is not {what}")


def flag(where: str, name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name}={shown(value)}: give True or False")


def prices(where: str, name: str, value: object) -> None:
    """None, or (USD per prompt token, USD per completion token)."""
    if value is None:
        return
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise TypeError(
            f"{where}: {name}={shown(value)}: give (USD per prompt token, USD per completion "
            "token), e.g. (3e-06, 1.5e-05)"
        )
    for part in value:
        amount(where, name, part)


def model_options(
    where: str, model: object, api_base: object, api_key: object, timeout: object, price: object
) -> None:
    """What every G that calls a model takes."""
    text(where, "model", model)
    text(where, "api_base", api_base, optional=True)
    text(where, "api_key", api_key, empty=True, optional=True)
    seconds(where, "timeout", timeout)
    prices(where, "prices", price)


def environment_options(
    where: str, timeout: object, max_output: object, exit_signal: object, cwd: object, env: object
) -> None:
    """What every V2 takes: a command's time limit, its output's size, the exit signal,
    where it runs and its variables."""
    seconds(where, "timeout", timeout)
    count(where, "max_output", max_output, minimum=0)
    text(where, "exit_signal", exit_signal)
    path(where, "cwd", cwd, optional=True)
    variables(where, "env", env)


def not_an_action(where: str, value: object) -> TypeError:
    """What a V2 raises when called with something other than an Action (a str, usually).

    >>> str(not_an_action("LocalEnv", "echo hi"))
    "LocalEnv takes an Action; wrap the command: Action('echo hi')"
    """
    if isinstance(value, str):
        return TypeError(f"{where} takes an Action; wrap the command: Action({shown(value)})")
    return TypeError(f"{where} takes an Action (four.Action(command)), not {shown(value)}")
