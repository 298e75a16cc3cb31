"""Files of format ``four.trajectory/1`` written by the code of issue 32's branch point
(``fixtures/write_v1.py`` shows how): each still loads, with what it recorded, and each
still audits valid. The format keeps its version; a reader that stops reading these
breaks every run saved so far."""

from __future__ import annotations

from pathlib import Path

import pytest

from four import Assistant, User, audit, load_trajectory
from four.search import audit_group

V1 = Path(__file__).parent / "fixtures" / "v1"
RUNS = sorted(p for p in V1.rglob("*.json") if not p.name.endswith(".attempts.json"))
STREAMS = sorted(V1.rglob("*.jsonl"))


def test_every_kind_of_run_is_there() -> None:
    kinds = {p.parent.name for p in RUNS}
    assert kinds == {"plain", "verified", "attempts", "notebook", "resumed", "signed"}


@pytest.mark.parametrize("path", RUNS + STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_file_loads_and_audits_valid(path: Path) -> None:
    trajectory = load_trajectory(path)
    assert trajectory.format == "four.trajectory/1"
    assert any(isinstance(m, Assistant) for m in trajectory.messages)
    key = V1 / "signer.pub" if path.parent.name == "signed" else None
    result = audit(path, public_key=key)
    assert result.valid, result.errors
    if path.parent.name == "killed":
        assert trajectory.outcome is None and not result.finished
    else:
        assert trajectory.outcome is not None and result.finished


def test_what_a_plain_run_recorded_is_read_back() -> None:
    (path,) = (V1 / "plain").glob("*.json")
    t = load_trajectory(path)
    assert t.outcome == "exit:task_complete"
    assert [type(m).__name__ for m in t.messages[1:]] == ["User", "Assistant", "User", "Assistant"]
    assert t.messages[2].content.startswith("```bash\necho hi")
    assert isinstance(t.messages[3], User) and t.messages[3].returncode == 0
    assert len(t.timestamps) == len(t.messages)
    stream = load_trajectory(path.with_suffix(".jsonl"))
    assert stream.messages == t.messages and stream.outcome == t.outcome


def test_a_verified_run_keeps_its_verdicts_and_receipts() -> None:
    (path,) = (V1 / "verified").glob("*[0-9a-f].json")
    t = load_trajectory(path)
    assert t.outcome == "accepted" and t.detail.kind == "accepted"
    verdicts = t.stats.verdicts
    assert verdicts is not None and verdicts.evaluations == 3
    assert [v.verdict for v in verdicts.log] == ["NO", "NO", "YES"]
    assert verdicts.slots["no:2"] == "`grep -qx 4 answer.txt` failed (exit 1): no output"
    assert t.stats.usage.prompt_tokens == 50 and t.info.settings["check"] == "grep -qx 4 answer.txt"
    result = audit(path)
    assert result.valid and result.evaluations == 3 and result.verified, result


def test_an_attempts_group_audits_with_its_members() -> None:
    (group,) = (V1 / "attempts").glob("*.attempts.json")
    result = audit_group(group)
    assert result.valid and result.members == 2 and result.accepted, result
    for member in (V1 / "attempts").glob("*[0-9a-f].json"):
        outcome = load_trajectory(member).outcome or ""
        assert outcome == "accepted" or outcome.startswith("held: repeated failure")


def test_a_signed_run_is_not_signed_by_another_key(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from four.trajectory import SigningKey

    other = tmp_path / "other.pub"
    other.write_text(SigningKey.generate().public + "\n")
    (path,) = (V1 / "signed").glob("*.json")
    assert audit(path, public_key=V1 / "signer.pub").valid
    assert not audit(path, public_key=other).valid


def test_a_resumed_run_names_the_run_it_resumed() -> None:
    runs = [load_trajectory(p) for p in (V1 / "resumed").glob("*.json")]
    (resumed,) = [t for t in runs if t.info.resumed_from]
    (first,) = [t for t in runs if t is not resumed]
    assert resumed.messages[: len(first.messages)] == first.messages
