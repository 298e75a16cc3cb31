"""`four audit TRAJ`: 0 valid, 1 invalid with the reasons, 2 nothing to audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from four.cli import main
from tests.cli._runs import cli


def test_a_verified_run_is_valid(verified: Path) -> None:
    assert json.loads(verified.read_text())["outcome"] == "accepted"
    done = cli("audit", str(verified))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"valid: {verified}")
    assert "2 evaluations" in done.stdout and "outcome accepted" in done.stdout


def test_json_report(verified: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--json", str(verified)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is True and report["errors"] == [] and report["evaluations"] == 2


def _tampered(path: Path, edit: str) -> Path:
    doc = json.loads(path.read_text())
    receipts = doc["stats"]["verdicts"]["receipts"]["receipts"]
    if edit == "payload":
        receipts[0]["payload"] = "no:2"
    elif edit == "drop":
        del receipts[0]
    elif edit == "head":
        doc["stats"]["verdicts"]["head"] = "00" * 32
    out = path.with_name(f"tampered-{edit}.json")
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("edit", ["payload", "drop", "head"])
def test_tampered_receipts_are_invalid(
    verified: Path, edit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", str(_tampered(verified, edit))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("invalid: ")
    assert len(out) > 1 and all(line.startswith("  - ") for line in out[1:])


def test_a_run_without_receipts_has_nothing_to_audit(sample: Path) -> None:
    done = cli("audit", str(sample))
    assert done.returncode == 2
    assert "nothing to audit" in done.stderr and "--check" in done.stderr


def test_not_a_trajectory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"messages": [')
    assert main(["audit", str(path)]) == 2
    assert "is not valid JSON" in capsys.readouterr().err
