"""A receipts document written before the one hash chain (format 1: BLAKE2b over a
type-tagged encoding; every transition kind, from tests/quaternary/test_compiled_paths'
RUN) loads, and replays valid under its own chain in both accounting cores."""

from __future__ import annotations

import json
from pathlib import Path

from four.checks import config_from_json
from four.quaternary import audit_trace, load_receipts

DOCUMENT = json.loads((Path(__file__).parent / "fixtures" / "receipts_v1.json").read_text())


def test_format_1_replays_valid_under_its_own_chain() -> None:
    config = config_from_json(DOCUMENT["config"])
    receipts = load_receipts(json.dumps(DOCUMENT["receipts"]))
    head = bytes.fromhex(DOCUMENT["head"])
    result = audit_trace(config, receipts, head=head, version=1)
    assert result.valid, result.errors
    assert (result.evaluations, len(receipts)) == (7, 11)
    current = audit_trace(config, receipts, head=head)
    assert "receipt 1: digest does not match the chain" in current.errors


def test_format_1_with_an_edited_receipt_is_invalid() -> None:
    config = config_from_json(DOCUMENT["config"])
    entries = json.loads(json.dumps(DOCUMENT["receipts"]))
    entries["receipts"][7]["payload"] = "f2"  # the second NO names another reason
    receipts = load_receipts(json.dumps(entries))
    result = audit_trace(config, receipts, head=bytes.fromhex(DOCUMENT["head"]), version=1)
    assert "receipt 8: digest does not match the chain" in result.errors
