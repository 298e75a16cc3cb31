"""Files written before the one hash chain (receipts format 1: BLAKE2b over a
type-tagged encoding) still audit valid, and an edit of them is still found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from four import audit

FIXTURES = Path(__file__).parent / "fixtures" / "v1"


@pytest.mark.parametrize("name", ["verified.json", "verified.jsonl"])
def test_a_run_written_by_format_1_audits_valid(name: str) -> None:
    result = audit(FIXTURES / name)
    assert result.valid, result.errors
    assert (result.finished, result.verified, result.receipts) == (True, True, 2)


@pytest.mark.parametrize("name", ["verified.json", "verified.jsonl"])
def test_an_edited_receipt_of_format_1_is_found(tmp_path: Path, name: str) -> None:
    text = (FIXTURES / name).read_text()
    assert text.count('"payload":"no:1"') == 1
    edited = tmp_path / name
    edited.write_text(text.replace('"payload":"no:1"', '"payload":"no:2"'))
    result = audit(edited)
    assert not result.valid
    assert any("receipt" in error for error in result.errors), result.errors


def test_a_format_1_receipt_document_replays_only_under_its_own_chain(tmp_path: Path) -> None:
    """The document's version picks the chain: relabelled as the current version, its
    digests no longer match."""
    data = json.loads((FIXTURES / "verified.json").read_text())
    document = data["stats"]["verdicts"]["receipts"]
    assert document["version"] == 1
    document["version"] = 2
    (tmp_path / "relabelled.json").write_text(json.dumps(data))
    errors = audit(tmp_path / "relabelled.json").errors
    assert "receipts: receipt 1: digest does not match the chain" in errors


@pytest.mark.parametrize("version", [1.0, True])
def test_a_receipts_version_of_another_type_is_an_error_not_a_crash(
    tmp_path: Path, version: object
) -> None:
    data = json.loads((FIXTURES / "verified.json").read_text())
    data["stats"]["verdicts"]["receipts"]["version"] = version
    (tmp_path / "retyped.json").write_text(json.dumps(data))
    result = audit(tmp_path / "retyped.json")
    assert result.errors == ("stats.verdicts.receipts does not match the seal",)
