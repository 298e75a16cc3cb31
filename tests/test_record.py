"""@record: value semantics, the dataclasses helpers, and what `import four` loads."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import pytest

from four import Assistant, Finished, ToolCall, Usage, User
from four._record import record


@record
class Point:
    x: int
    y: int = 0


@record
class Empty:
    pass


def test_values_compare_hash_and_print_by_their_fields() -> None:
    other: object = (1, 0)
    assert Point(1) == Point(1, 0) and Point(1) != Point(2) and Point(1) != other
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    assert repr(Point(2)) == "Point(x=2, y=0)" and repr(Empty()) == "Empty()"
    assert Empty() == Empty() and hash(Empty()) == hash(Empty())
    assert repr(User("hi")) == "User(content='hi', kind='text', returncode=None)"


def test_records_are_frozen_and_slotted() -> None:
    p = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="'x'"):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y
    assert not hasattr(p, "__dict__")


def test_dataclasses_helpers_and_pickling_work() -> None:
    reply = Assistant("", (ToolCall("c1", "bash", "ls"),), usage=Usage(3, 4))
    assert dataclasses.is_dataclass(reply) and dataclasses.is_dataclass(Assistant)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y"]
    assert dataclasses.fields(Point)[1].default == 0
    assert dataclasses.replace(Point(1), y=5) == Point(1, 5)
    assert dataclasses.asdict(Usage(1, 2))["completion_tokens"] == 2
    for value in (reply, Finished("out"), Point(3, 4), Empty()):
        assert pickle.loads(pickle.dumps(value)) == value
        assert copy.deepcopy(value) == value


def test_import_four_loads_neither_returns_nor_dataclasses_nor_litellm() -> None:
    probe = "import four, sys; print(sorted(m for m in ('returns', 'dataclasses', 'inspect', 'litellm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    probe = "from four import run; import sys; print('returns' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
