"""The items of a batch: an id, a task, and whatever else the caller keeps with them."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from four._checked import checked
from four._types import JSON


@dataclass(frozen=True, slots=True)
class Item:
    """One task of a batch. ``id`` is unique in the batch; ``task`` is usually the prompt;
    ``fields`` holds anything else (a repository, an image...), copied to the manifest.

    >>> Item("django-1", "Fix the bug", {"image": "python:3.11"}).fields["image"]
    'python:3.11'
    """

    id: str
    task: str = ""
    fields: Mapping[str, JSON] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"an item id must be a non-empty string, not {self.id!r}")


@checked
def item_from_json(data: Mapping[str, JSON], where: str = "item") -> Item:
    """An item from a JSON object with ``id`` and ``task``; other keys become ``fields``.

    A number id is taken as its text.

    >>> item_from_json({"id": 7, "task": "t", "repo": "r"})
    Item(id='7', task='t', fields={'repo': 'r'})
    """
    raw_id = data.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or raw_id == "":
        raise ValueError(f'{where}: needs an "id" (a string or a number), got {raw_id!r}')
    task = data.get("task", "")
    if not isinstance(task, str):
        raise ValueError(f'{where}: "task" must be a string, got {type(task).__name__}')
    rest = {k: v for k, v in data.items() if k not in ("id", "task")}
    return Item(str(raw_id), task, rest)


@checked
def read_items(path: str | os.PathLike[str]) -> list[Item]:
    """Read a JSON Lines file of tasks: one object per line with ``id`` and ``task``
    (its errors: docs/batch.md).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "tasks.jsonl"
    >>> _ = p.write_text('{"id": "a", "task": "say hi"}\\n{"id": "b", "task": "say bye"}\\n')
    >>> [item.id for item in read_items(p)]
    ['a', 'b']
    """
    items: dict[str, Item] = {}
    for number, line in enumerate(Path(path).read_text("utf-8").split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{where}: not a JSON object")
        item = item_from_json(data, where)
        if item.id in items:
            raise ValueError(f"{where}: the id {item.id!r} appears twice")
        items[item.id] = item
    return list(items.values())


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_HASHED = re.compile(r".*-[0-9a-f]{16}")
"""The shape of a cleaned name: a safe id of this shape is hashed too, so that no id is
ever left as it is where another id's cleaned name could be."""


@checked
def folder_name(item_id: str) -> str:
    """A folder name for an id: the id itself when it is safe, else a cleaned form with
    16 hex digits of the id's SHA-256. One-to-one: two ids never share a folder (a safe
    id shaped like a cleaned name is cleaned as well).

    >>> folder_name("astropy__astropy-12907"), folder_name("a/b")
    ('astropy__astropy-12907', 'a_b-c14cddc033f64b9d')
    >>> folder_name("a_b-c14cddc033f64b9d") != folder_name("a/b")
    True
    """
    clean = _UNSAFE.sub("_", item_id)[:100]
    if clean == item_id and clean not in (".", "..", "") and not _HASHED.fullmatch(clean):
        return clean
    digest = hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{clean}-{digest}"
