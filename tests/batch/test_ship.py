"""Records that travel: a worker's pieces of its runs' folders, sent again until the
driver acknowledges them, land whole and idempotent in the batch folder."""

from __future__ import annotations

import os
from pathlib import Path

from four.batch._ship import Landing, Shipper
from four.checks import audit
from four.trajectory import load_trajectory, save_trajectory


def test_a_report_not_acknowledged_is_sent_again_and_lands_the_same(tmp_path: Path) -> None:
    base, out = tmp_path / "scratch", tmp_path / "out"
    folder = base / "runs" / "a"
    folder.mkdir(parents=True)
    stream = folder / "s.jsonl"
    stream.write_bytes(b'{"n": 1}\n{"n": 2}\n{"n"')  # the last line is being written
    shipper = Shipper()
    shipper.track("a#1#k", base, "runs/a")
    landing = Landing(out)
    first = shipper.report()
    assert [(k, p.path, p.offset, p.data) for k, p in first] == [
        ("a#1#k", "runs/a/s.jsonl", 0, b'{"n": 1}\n{"n": 2}\n')
    ]
    # The reply is lost: the next report sends it all again (and the new line).
    with open(stream, "ab") as f:
        f.write(b": 3}\n")
    again = shipper.report()
    assert [p.data for _, p in again] == [b'{"n": 1}\n{"n": 2}\n{"n": 3}\n']
    landing.put(p for _, p in first)  # landing both, late and twice, changes nothing
    landing.put(p for _, p in again)
    landing.put(p for _, p in first)
    assert (out / "runs/a/s.jsonl").read_bytes() == stream.read_bytes()
    shipper.commit()  # acknowledged: nothing more to send until the file grows
    assert shipper.report() == []
    shipper.commit()
    with open(stream, "ab") as f:
        f.write(b'{"n": 4}\n')
    (last,) = shipper.report()
    assert (last[1].offset, last[1].data) == (27, b'{"n": 4}\n')


def test_other_files_travel_whole_and_an_older_version_never_wins(tmp_path: Path) -> None:
    base, out = tmp_path / "scratch", tmp_path / "out"
    (base / "runs" / "a" / "sub").mkdir(parents=True)
    artifact = base / "runs" / "a" / "sub" / "notebook.ipynb"
    artifact.write_text("v1")
    (base / "runs" / "a" / ".hidden.tmp").write_text("half")  # a file being written
    shipper = Shipper()
    shipper.track("a#1#k", base, "runs/a")
    (old,) = shipper.report()
    shipper.commit()
    artifact.write_text("version 2")
    os.utime(artifact, ns=(old[1].version + 10**9, old[1].version + 10**9))
    (new,) = shipper.report()
    assert new[1].whole and new[1].data == b"version 2"
    landing = Landing(out)
    landing.put([new[1], old[1]])  # the older one arrives late
    assert (out / "runs/a/sub/notebook.ipynb").read_text() == "version 2"
    assert not (out / "runs/a/.hidden.tmp").exists()
    assert Landing(out).put([new[1].__class__("../escape", 0, b"x", whole=True)]) == []
    assert not (tmp_path / "escape").exists()


def test_a_sealed_trajectory_shipped_piece_by_piece_still_verifies(tmp_path: Path) -> None:
    from four import Finished
    from four._types import User

    base, out = tmp_path / "scratch", tmp_path / "out"
    folder = base / "runs" / "r"
    folder.mkdir(parents=True)
    shipper = Shipper()
    shipper.track("r#1#k", base, "runs/r")
    landing = Landing(out)
    path = save_trajectory(folder)([User("hello"), User("again")], Finished())
    landing.put(p for _, p in shipper.report())
    shipper.commit()
    landing.put(shipper.final("r#1#k"))
    landed = out / "runs" / "r" / path.name
    assert audit(landed).status == "valid"
    assert audit(landed.with_suffix(".jsonl")).status == "valid"
    assert load_trajectory(landed).outcome == "exit:task_complete"
    shipper.drop("r#1#k")
    assert not base.exists()
