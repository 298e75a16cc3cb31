"""The field checker of the public records (``four._checked.check_fields``).

A record's ``__post_init__`` calls it: each field given is checked against its
annotation, the first wrong one named in one line. What an annotation cannot say at run
time (``Any``, a name imported only for the type checker) is left unchecked, never
taken for ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pytest

from four._checked import check_fields, checked

if TYPE_CHECKING:
    from four.trajectory import SigningKey


@dataclass(frozen=True, slots=True)
class Point:
    x: int
    label: str | None = None
    tags: tuple[str, ...] = ()
    extra: Any = None
    key: SigningKey | None = None  # resolvable by a type checker only
    made: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        check_fields(self)


def test_each_field_is_checked_and_the_first_wrong_one_is_named() -> None:
    with pytest.raises(TypeError, match=r"^Point: x='3': give an int \(not a str\)$"):
        Point("3")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Point: label=5: give a str or None \(not an int\)$"):
        Point(3, 5)  # type: ignore[arg-type]


def test_what_works_in_place_of_a_collection_passes() -> None:
    listed: object = ["a"]  # a list for a tuple: four's callers pass them
    assert Point(3, tags=listed).tags is listed  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^Point: tags=None: give a tuple"):
        Point(3, tags=None)  # type: ignore[arg-type]


def test_any_and_a_type_checker_only_name_are_not_checked() -> None:
    """Neither is read as ``None`` (which would refuse every real value)."""
    marker = object()
    point = Point(3, extra=marker, key=marker)  # type: ignore[arg-type]
    assert point.extra is marker and point.key is marker


def test_a_function_parameter_annotated_for_the_type_checker_only_is_not_checked() -> None:
    @checked
    def sign(key: SigningKey, times: int) -> int:
        return times

    assert sign(object(), 2) == 2  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^.*sign: times=None: give an int"):
        sign(object(), None)  # type: ignore[arg-type]


def test_a_struct_checks_its_fields_when_made_and_decoding_still_validates_first() -> None:
    """A msgspec Struct checks in ``__post_init__`` too (which decoding also calls, after
    its own validation: a wrong value in a file stays a ``msgspec.ValidationError``)."""
    import msgspec

    from four.trajectory import UsageRecord

    with pytest.raises(TypeError, match=r"^UsageRecord: prompt_tokens='3': give an int"):
        UsageRecord("3")  # type: ignore[arg-type]
    assert msgspec.json.decode(b'{"prompt_tokens": 3}', type=UsageRecord).prompt_tokens == 3
    with pytest.raises(msgspec.ValidationError, match="prompt_tokens"):
        msgspec.json.decode(b'{"prompt_tokens": "3"}', type=UsageRecord)


def test_a_literal_field_takes_only_its_values_and_the_wrong_one_is_named() -> None:
    from four import User

    assert User("done", kind="feedback").kind == "feedback"
    with pytest.raises(
        TypeError,
        match=r"^User: kind='nope': give 'task' or 'observation' or 'format_error' or "
        r"'feedback' or 'text' \(not another str\)$",
    ):
        User("done", kind="nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^User: kind=3: give 'task' .* \(not an int\)$"):
        User("done", kind=3)  # type: ignore[arg-type]


def test_a_literal_parameter_takes_only_its_values() -> None:
    @checked
    def pick(side: Literal["left", "right"] | None, n: Literal[1, 2] = 1) -> str:
        return f"{side} {n}"

    assert pick("left", 2) == "left 2" and pick(None) == "None 1"
    with pytest.raises(TypeError, match=r"^.*pick: side='up': give 'left' or 'right' or None"):
        pick("up")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^.*pick: n=\[1\]: give 1 or 2 \(not a list\)$"):
        pick("left", [1])  # type: ignore[arg-type]


def test_a_str_enum_field_takes_its_members_only() -> None:
    from four import ModelError, ModelErrorKind

    assert ModelError(ModelErrorKind.TIMEOUT, "slow").kind == "timeout"
    with pytest.raises(TypeError, match=r"^ModelError: kind='slow': give a ModelErrorKind"):
        ModelError("slow", "slow")  # type: ignore[arg-type]
