"""save_with_artifact: a domain's artifact beside the trajectory, its record under the seal;
an artifact that fails leaves nothing half-written and the run is sealed all the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from four import Finished, audit, load_trajectory, save_trajectory
from four.trajectory import save_with_artifact
from four.types import JSON, Outcome


def note(stem: Path, outcome: Outcome) -> dict[str, JSON]:
    folder = stem.with_name(stem.name + ".notes")
    folder.mkdir()
    (folder / "a.txt").write_text(outcome.text)
    return {"folder": folder.name}


def broken(stem: Path, outcome: Outcome) -> dict[str, JSON]:
    stem.with_name(stem.name + ".half").write_text("half of it")
    raise OSError(28, "No space left on device")


def test_the_artifact_is_beside_the_trajectory_and_under_its_seal(tmp_path: Path) -> None:
    path = save_with_artifact(save_trajectory(tmp_path), "notes", note)([], Finished("ok"))
    stats = load_trajectory(path).stats
    assert stats.extra["notes"] == {"folder": f"{path.stem}.notes"}
    digests = stats.artifacts
    assert digests is not None and list(digests) == [f"{path.stem}.notes/a.txt"]
    assert (tmp_path / f"{path.stem}.notes" / "a.txt").read_text() == "exit:task_complete"
    assert audit(path).valid
    original = path.read_text()
    text = original.replace(f'"{path.stem}.notes"', f'"x{path.stem}.notes"', 1)
    assert text != original  # the folder's name, edited wherever the encoder put it
    path.write_text(text)
    assert not audit(path).valid  # the record is sealed


def test_a_failing_artifact_is_recorded_and_leaves_nothing(tmp_path: Path) -> None:
    path = save_with_artifact(save_trajectory(tmp_path), "notes", broken)([], Finished("ok"))
    assert load_trajectory(path).stats.extra["notes"] == {
        "error": "OSError: [Errno 28] No space left on device"
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name, f"{path.stem}.jsonl"]
    assert audit(path).valid


@pytest.mark.parametrize("key", ["steps", "artifacts", "", "two words"])
def test_a_key_the_stats_use_or_no_word_is_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(ValueError, match="key="):
        save_with_artifact(save_trajectory(tmp_path), key, note)


def test_an_artifact_changed_or_removed_after_the_run_fails_the_audit(tmp_path: Path) -> None:
    path = save_with_artifact(save_trajectory(tmp_path), "notes", note)([], Finished("ok"))
    artifact = tmp_path / f"{path.stem}.notes" / "a.txt"
    assert audit(path).valid and audit(path).errors == ()
    artifact.write_text("exit:task_complete, honestly")
    result = audit(path)
    assert not result.valid
    assert result.errors == (
        f"the artifact {path.stem}.notes/a.txt was changed after the run sealed it",
    )
    artifact.unlink()
    assert audit(path).errors == (
        f"the artifact {path.stem}.notes/a.txt is missing (or not a regular file)",
    )
    artifact.symlink_to(tmp_path / "elsewhere.txt")
    (tmp_path / "elsewhere.txt").write_text("exit:task_complete")  # the same bytes, elsewhere
    assert not audit(path).valid
