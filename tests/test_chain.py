"""The one hash chain's compiled twin (``four._chain_c``) gives the pure one's bytes."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from four import _chain
from four._types import JSON

SRC = Path(__file__).resolve().parents[1] / "src"


scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
labels = st.text()


def compiled() -> ModuleType:
    try:
        return importlib.import_module("four._chain_c")
    except ImportError:
        pytest.skip("the compiled chain is not built")


@given(st.binary(min_size=32, max_size=32), labels, values)
def test_a_link_is_the_same_digest_compiled_and_pure(
    digest: bytes, label: str, value: JSON
) -> None:
    assert compiled().link(digest, label, value) == _chain.pure_link(digest, label, value)


@given(st.binary(min_size=32, max_size=32), labels, st.text())
def test_a_link_of_encoded_text_is_the_same_digest_compiled_and_pure(
    digest: bytes, label: str, value: str
) -> None:
    assert compiled().link_text(digest, label, value) == _chain.pure_link_text(digest, label, value)


@given(st.lists(st.tuples(labels, values), max_size=6))
def test_a_chain_is_the_same_digests_compiled_and_pure(links: list[tuple[str, JSON]]) -> None:
    start = _chain.start("four.test")
    assert compiled().chain(start, links) == _chain.pure_chain(start, links)


def test_a_value_with_no_json_form_is_refused_alike() -> None:
    start = _chain.start("four.test")
    for link in (compiled().link, _chain.pure_link):
        with pytest.raises(TypeError, match="not JSON serializable"):
            link(start, "x", {"a": object()})  # type: ignore[dict-item]


def test_the_compiled_chain_is_selected_unless_no_extensions_is_set() -> None:
    compiled()
    env = {k: v for k, v in os.environ.items() if k != "FOUR_NO_EXTENSIONS"}
    env["PYTHONPATH"] = str(SRC)
    code = "from four import _chain; print(_chain.COMPILED, _chain.link.__module__)"
    seen = [
        subprocess.run(
            [sys.executable, "-c", code], env=env | extra, capture_output=True, text=True
        ).stdout.split()
        for extra in ({}, {"FOUR_NO_EXTENSIONS": "1"})
    ]
    assert seen == [["True", "four._chain_c"], ["False", "four._chain"]]


@given(st.lists(st.tuples(st.sampled_from("abc"), values), max_size=4))
def test_an_object_is_read_alike_compiled_and_pure(pairs: list[tuple[str, JSON]]) -> None:
    outcomes = []
    for unique in (compiled().unique, _chain.pure_unique):
        try:
            outcomes.append(unique(pairs))
        except ValueError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]
    repeated = len({key for key, _ in pairs}) < len(pairs)
    assert (outcomes[0] == "a key repeated in one object") is repeated


def test_a_document_that_repeats_a_key_is_refused() -> None:
    assert _chain.decode('{"a": {"b": 1}, "c": [2]}') == {"a": {"b": 1}, "c": [2]}
    with pytest.raises(ValueError, match="a key repeated in one object"):
        _chain.decode('{"a": {"b": 1, "b": 2}}')
