"""A batch item's own settings: taken over the batch's, or refused in one line naming it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from four._types import JSON
from four.batch._items import Item
from four.cli import build_parser
from four.cli._errors import UsageError
from four.cli._launchfile import check_items, item_options
from four.cli._options import RunOptions, options


def _batch_options() -> RunOptions:
    args = build_parser("batch").parse_args(["batch", "t.jsonl", "--model", "openai/m", "-q"])
    return options(argparse.Namespace(**{**vars(args), "task": "(each item's task)"}))


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"max_steps": 0}, "max_steps must be a whole number of at least 1"),
        ({"max_steps": True}, "max_steps must be a whole number of at least 1"),
        ({"domain": ""}, "domain must be a non-empty string"),
        ({"image": None}, "image must be a non-empty string"),
        ({"check_files": "tests"}, "check_files must be a list of [DEST=]DIR strings"),
        ({"check_files": ["tests"]}, "check_files need a check"),
        ({"check": "true", "feedback": "all"}, "feedback 'all': use full, output or verdict"),
        ({"domain": "cobol"}, "unknown domain 'cobol'"),
    ],
)
def test_an_item_setting_its_run_cannot_take_is_refused_naming_the_item(
    fields: dict[str, JSON], said: str
) -> None:
    with pytest.raises(UsageError) as refused:
        check_items(_batch_options(), [Item("a", "do it", fields)], Path("t.jsonl"))
    assert str(refused.value).startswith(f"t.jsonl: item 'a': {said}")


def test_an_item_settings_win_over_the_batch_and_the_rest_are_the_batch() -> None:
    batch = _batch_options()
    fields: dict[str, JSON] = {"max_steps": 7, "check": "pytest -q", "cwd": "/srv/w"}
    check_items(batch, [Item("a", "do it", fields)], Path("t.jsonl"))
    mine = item_options(batch, "do it", fields)
    assert (mine.task, mine.max_steps, mine.check, mine.cwd) == ("do it", 7, "pytest -q", "/srv/w")
    plain = item_options(batch, "other", {})
    assert (plain.max_steps, plain.check, plain.domain) == (batch.max_steps, None, batch.domain)
