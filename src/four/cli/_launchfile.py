"""What ``four batch TASKS`` takes from beside TASKS: ``four.toml`` (a long flag a key,
``max-steps = 30``; a path relative to its folder) and each item's own settings
(docs/batch.md)."""

from __future__ import annotations

import argparse
import difflib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from four._types import JSON
from four.batch._items import Item
from four.cli._errors import UsageError

if TYPE_CHECKING:
    from four.cli._options import RunOptions

_PATHS = frozenset({"system", "output_dir", "cwd", "sign"})
_FIXED = frozenset({"tasks", "help", "redo", "quiet", "json", "check_files", "output_in_workspace"})


def apply_settings(
    args: argparse.Namespace, tasks: Path, flags: Callable[[argparse.ArgumentParser], None]
) -> Path | None:
    """Fill the flags not given (``flags`` defines them) from ``four.toml`` beside ``tasks``;
    the file read, or None. A key or value ``four batch`` does not take: a ``UsageError``."""
    path = tasks.parent / "four.toml"
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    parser = argparse.ArgumentParser()
    flags(parser)
    actions = {  # by long flag, those a launch may set
        spelling[2:]: action
        for action in parser._actions
        if action.dest not in _FIXED and action.default is None
        for spelling in action.option_strings
        if spelling.startswith("--")
    }
    for key, value in data.items():
        action = actions.get(key)
        if action is None:
            near = difflib.get_close_matches(key, sorted(actions), 1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"{path}: {key!r} is no setting of four batch{hint}")
        if getattr(args, action.dest, None) is not None:
            continue  # given on the command line
        setattr(args, action.dest, _value(action, key, value, path))
    return path


def _value(action: argparse.Action, key: str, value: object, path: Path) -> object:
    if isinstance(action, argparse.BooleanOptionalAction):
        if not isinstance(value, bool):
            raise UsageError(f"{path}: {key} must be true or false")
        return value
    if isinstance(value, bool | dict | list):
        raise UsageError(f"{path}: {key} must be a string or a number")
    text = str(value)
    if action.dest in _PATHS:
        text = str(path.parent / os.path.expanduser(text))
    try:
        converted = action.type(text) if callable(action.type) else text
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise UsageError(f"{path}: {key} = {value!r}: {exc}") from None
    if action.choices is not None and converted not in action.choices:
        raise UsageError(
            f"{path}: {key} = {value!r}: use one of {', '.join(map(str, action.choices))}"
        )
    return converted


def resolve_items(items: list[Item], tasks: Path) -> list[Item]:
    """The items with each ``check_files`` source made relative to ``tasks``'s folder
    (as the item was written, for a launch folder that moves)."""
    base = tasks.parent.absolute()

    def placed(given: JSON) -> JSON:
        dest, sep, source = str(given).rpartition("=")
        return f"{dest}{sep}{source if os.path.isabs(source) else base / source}"

    return [
        replace(item, fields={**item.fields, "check_files": [placed(f) for f in files]})
        if isinstance(files := item.fields.get("check_files"), list)
        else item
        for item in items
    ]


def item_options(opts: RunOptions, task: str, fields: Mapping[str, JSON]) -> RunOptions:
    """``opts`` for one item, its own settings over the batch's; a bad one: ``UsageError``."""

    def text(name: str) -> str | None:
        value = fields.get(name)
        if name in fields and not (isinstance(value, str) and value.strip()):
            raise UsageError(f"{name} must be a non-empty string")
        return value if isinstance(value, str) else None

    steps = fields.get("max_steps", opts.max_steps)
    if "max_steps" in fields and (type(steps) is not int or steps < 1):  # (a bool is no int)
        raise UsageError("max_steps must be a whole number of at least 1")
    files = fields.get("check_files", list(opts.check_files))
    if not (isinstance(files, list) and all(isinstance(f, str) for f in files)):
        raise UsageError("check_files must be a list of [DEST=]DIR strings")
    return replace(
        opts,
        task=task,
        image=text("image") or opts.image,
        cwd=text("cwd") or opts.cwd,
        domain=text("domain") or opts.domain,
        check=text("check") or opts.check,
        check_files=tuple(str(f) for f in files),
        max_steps=steps if isinstance(steps, int) else opts.max_steps,
        feedback=text("feedback") or opts.feedback,
    )


def check_items(opts: RunOptions, items: list[Item], tasks: Path) -> None:
    """Each item's own settings are ones its run can take (before any model call), or a
    ``UsageError`` naming the item."""
    from four.cli._build import load_domain, make_check

    for item in items:
        try:
            mine = item_options(opts, item.task, item.fields)
            if mine.feedback not in ("full", "output", "verdict"):
                raise UsageError(f"feedback {mine.feedback!r}: use full, output or verdict")
            if mine.check_files and not mine.check:
                raise UsageError("check_files need a check")
            load_domain(mine.domain)  # an unknown one: the known ones named
            make_check(mine)
        except UsageError as exc:
            raise UsageError(f"{tasks}: item {item.id!r}: {exc}") from None
