"""`four audit TRAJ|DIR`: 0 valid (an unfinished run is a valid prefix), 1 invalid with
the reasons, 2 when there is nothing to audit; a folder gives a line per run and a summary."""

from __future__ import annotations

import json
import shutil
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
    assert "unsigned: the seal catches accidents and careless edits, not a forger" in done.stdout


def test_json_report(verified: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--json", str(verified)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is True and report["errors"] == [] and report["evaluations"] == 2
    assert report["status"] == "valid" and report["receipts"] == 2 and report["signer"] is None


def _tampered(path: Path, edit: str) -> Path:
    doc = json.loads(path.read_text())
    receipts = doc["stats"]["verdicts"]["receipts"]["receipts"]
    if edit == "payload":
        receipts[0]["payload"] = "no:2"
    elif edit == "drop":
        del receipts[0]
    elif edit == "head":
        doc["stats"]["verdicts"]["head"] = "00" * 32
    elif edit == "outcome":
        doc["outcome"] = "held: repeated failure"
    out = path.with_name(f"tampered-{edit}.json")
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("edit", ["payload", "drop", "head", "outcome"])
def test_tampered_runs_are_invalid(
    verified: Path, edit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", str(_tampered(verified, edit))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("invalid: ")
    assert len(out) > 1 and all(line.startswith("  - ") for line in out[1:])


def test_a_run_without_receipts_is_sealed_too(sample: Path) -> None:
    done = cli("audit", str(sample))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"valid: {sample}") and "verdicts" not in done.stdout


def test_a_stream_without_its_end_is_a_valid_unfinished_prefix(
    verified: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = verified.with_suffix(".jsonl").read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:4]) + lines[4][:30])  # a kill in the middle of a write
    assert main(["audit", str(cut)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"valid, unfinished: {cut}") and "prefix of 3 messages" in out
    cut.write_text("".join(lines[:2] + lines[3:4]))  # a message dropped
    assert main(["audit", str(cut)]) == 1
    assert "line 3 (messages[1]) does not match its digest" in capsys.readouterr().out


def test_not_a_trajectory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"a": 1}')
    assert main(["audit", str(path)]) == 2
    assert "nothing to audit" in capsys.readouterr().err
    path.write_text('{"format": "four.trajectory/1", "messa')  # a sealed document cut short
    assert main(["audit", str(path)]) == 1
    assert "not JSON" in capsys.readouterr().out
    assert main(["audit", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_a_folder_gets_a_line_per_run_and_a_summary(
    verified: Path, sample: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = tmp_path / "fleet"
    (fleet / "a").mkdir(parents=True)
    for path in (verified, verified.with_suffix(".jsonl"), sample):
        shutil.copy(path, fleet / "a" / path.name)
    _tampered(verified, "outcome").rename(fleet / "forged.json")
    killed = verified.with_suffix(".jsonl").read_text().splitlines(keepends=True)[:3]
    (fleet / "killed.jsonl").write_text("".join(killed))
    (fleet / "manifest.jsonl").write_text('{"id": "t1"}\n')
    assert main(["audit", str(fleet)]) == 1
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[1]: line.split()[0] for line in out[:-1]}
    assert rows == {
        f"a/{sample.name}": "valid",
        f"a/{verified.name}": "valid",  # its .jsonl is covered by the sealed document
        "forged.json": "invalid",
        "killed.jsonl": "unfinished",
        "manifest.jsonl": "skipped",
    }
    assert "outcome does not match the seal" in next(r for r in out if "forged" in r)
    assert out[-1] == (
        "4 runs: 2 valid, 1 invalid, 1 unfinished, 4 unsigned; 1 other files skipped"
    )
    (fleet / "forged.json").unlink()
    assert main(["audit", str(fleet)]) == 0


def test_a_wrong_public_key_is_a_usage_error(
    verified: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", str(verified), "--public-key", str(tmp_path / "none.pub")]) == 2
    assert "--public-key: cannot read the public key" in capsys.readouterr().err
    assert main(["audit", str(verified), "--public-key", "ab" * 32]) == 1
    assert "not signed: the audit asked for a signature by abab" in capsys.readouterr().out
