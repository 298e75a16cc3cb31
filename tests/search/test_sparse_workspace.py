"""A search's copies of the workspace keep sparse files sparse, within the same bound.

The user's folder holds three 2 GiB files that are holes but for a few bytes (what
``truncate -s 2G`` makes): the start copy, each attempt's copy and the promoted work take
no more room on disk than the data, and the bound on a workspace (``max_bytes``) counts
that data, not the files' lengths. A workspace whose data is over the bound is still
refused, in one line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from four.search._workspace import Pristine, WorkspaceTooLarge

GIB = 1 << 30


def sparse(path: Path, length: int, data: bytes, at: int) -> None:
    """``path``: ``length`` bytes of hole, with ``data`` written at ``at``."""
    with path.open("wb") as f:
        f.truncate(length)
        f.seek(at)
        f.write(data)


def on_disk(path: Path) -> int:
    return os.stat(path).st_blocks * 512


@pytest.fixture
def user(tmp_path: Path) -> Path:
    folder = tmp_path / "user"
    (folder / "sub").mkdir(parents=True)
    for i, name in enumerate(("a.img", "b.img", "sub/c.img")):
        sparse(folder / name, 2 * GIB, f"data {i}".encode(), at=GIB + i)
    (folder / "notes.txt").write_text("plain")
    if sum(on_disk(p) for p in folder.rglob("*.img")) > 1 << 20:
        pytest.skip("this file system does not keep holes")
    return folder


def test_the_copies_keep_the_holes(user: Path, tmp_path: Path) -> None:
    start = Pristine(user, scratch=tmp_path, max_bytes=1 << 20)  # 1 MiB of data allowed
    try:
        attempt = start.fresh(1)
        for copy in (start.start, attempt):
            for i, name in enumerate(("a.img", "b.img", "sub/c.img")):
                copied = copy / name
                assert copied.stat().st_size == 2 * GIB
                assert on_disk(copied) <= 1 << 20  # data only, not 2 GiB of zeros
                with copied.open("rb") as f:
                    f.seek(GIB + i)
                    assert f.read(6) == f"data {i}".encode()
            assert (copy / "notes.txt").read_text() == "plain"
        sparse(attempt / "d.img", 2 * GIB, b"made by the attempt", at=GIB)
        start.promote(attempt)
        assert (user / "d.img").stat().st_size == 2 * GIB
        assert on_disk(user / "d.img") <= 1 << 20
        with (user / "d.img").open("rb") as f:
            f.seek(GIB)
            assert f.read(19) == b"made by the attempt"
    finally:
        start.close()


def test_a_workspace_whose_data_is_over_the_bound_is_refused(user: Path, tmp_path: Path) -> None:
    (user / "data.bin").write_bytes(os.urandom(2 << 20))  # 2 MiB of real data
    with pytest.raises(WorkspaceTooLarge) as raised:
        Pristine(user, scratch=tmp_path, max_bytes=1 << 20)
    message = str(raised.value)
    assert "\n" not in message and "give a smaller folder" in message, message
    assert not list(tmp_path.glob("four-attempts-*")), "no copy is left behind"
