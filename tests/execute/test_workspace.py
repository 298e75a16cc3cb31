"""Workspace: edits stay inside the folder, through no symlink, and land all or none."""

from __future__ import annotations

from pathlib import Path

import pytest
from returns.result import Failure

from four.execute import Refused, Workspace


def test_a_write_that_fails_midway_puts_back_what_it_wrote(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("old\n")
    ws = Workspace(tmp_path)
    # "new/deep" is a folder once "new/deep/b.py" is written, so writing it as a file fails.
    texts = {"a.py": "new\n", "new/deep/b.py": "created\n", "new/deep": "x\n"}
    result = ws.write(texts)
    assert isinstance(result, Failure)
    assert result.failure() == "new/deep: not a regular file; no file was changed"
    assert (tmp_path / "a.py").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_a_refused_path_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("a file, not a folder\n")
    result = Workspace(tmp_path).write({"a.py": "new\n", "plain/c.py": "x\n"})
    assert isinstance(result, Failure) and "no file was changed" in result.failure()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_reads_and_writes_never_follow_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("kept\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "dir").symlink_to(outside)
    (work / "file.py").symlink_to(outside / "secret.py")
    ws = Workspace(work)
    for path in ("dir/secret.py", "file.py"):
        with pytest.raises(Refused, match="symlink"):
            ws.read(path)
        assert isinstance(ws.write({path: "overwritten\n"}), Failure)
    assert (outside / "secret.py").read_text() == "kept\n"


def test_paths_that_leave_are_refused_by_their_text(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    assert ws.refusal("a/../../x.py") is not None
    assert ws.refusal("/etc/passwd") is not None
    assert ws.refusal("~/x.py") is not None
    assert ws.refusal("src/a.py") is None


def test_snapshot_skips_hidden_and_tool_folders(tmp_path: Path) -> None:
    for rel in ("a.py", "pkg/b.py", ".venv/c.py", "__pycache__/d.py", ".hidden/e.py", "f.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    assert sorted(Workspace(tmp_path).snapshot((".py",))) == ["a.py", "pkg/b.py"]


def test_a_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a folder; create it first"):
        Workspace(tmp_path / "nope")
