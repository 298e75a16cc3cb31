"""Saving under faults: a read-only folder, a file as -o, a full disk, a deleted folder.

On real filesystems: a small tmpfs and a read-only one, mounted here (root, as in CI).
Where mounting is impossible the tests skip, with the reason; with
FOUR_REQUIRE_SERVICES=1 they fail instead. Each fault is one line and a documented exit
status, before the first model call where it can be seen then; during a run, the run
ends ``save_failed`` and what was kept is named, and only a file that exists is named.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from four.cli import main
from four.trajectory import load_trajectory
from tests._server import LoopbackServer, chat
from tests.cli.test_run import SUBMIT, args


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _mount(folder: Path, options: str) -> Iterator[Path]:
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}"
        if os.environ.get("FOUR_REQUIRE_SERVICES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 512 KB filesystem."""
    yield from _mount(tmp_path / "small", "size=512k,mode=0755")


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A real read-only filesystem (root may write anywhere else)."""
    yield from _mount(tmp_path / "ro", "ro,size=64k")


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _run(server: LoopbackServer, tmp_path: Path, output: Path, *extra: str) -> list[str]:
    argv = ["run", "task", *args(server, tmp_path, *extra)]
    at = argv.index("-o")
    argv[at + 1] = str(output)
    return argv


def test_a_read_only_folder_is_refused_before_the_model_is_called(
    server: LoopbackServer, tmp_path: Path, read_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.push(chat(SUBMIT))
    assert main(_run(server, tmp_path, read_only / "runs", "--quiet")) == 2
    line = _one_line(capsys.readouterr().err)
    assert (
        line
        == f"four run: error: -o {read_only / 'runs'}: cannot write there: read-only file system"
    )
    assert not server.bodies("/v1/chat/completions")


def test_an_existing_file_as_the_output_folder(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    assert main(_run(server, tmp_path, taken, "--quiet")) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == f"four run: error: -o {taken}: it is a file, not a folder; name a folder"
    assert taken.read_text() == "mine" and not server.bodies("/v1/chat/completions")


def test_a_full_disk_is_refused_before_the_model_is_called(
    server: LoopbackServer, tmp_path: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    filler = small_disk / "filler"
    with filler.open("wb") as f:
        f.write(b"x" * (512 * 1024 - 8 * 1024))
    assert main(_run(server, tmp_path, small_disk, "--quiet")) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"four run: error: -o {small_disk}: only ") and "KB free" in line
    assert not server.bodies("/v1/chat/completions")


def test_a_disk_that_fills_during_the_run_ends_it_save_failed(
    server: LoopbackServer, tmp_path: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each reply is 60 KB: the 512 KB disk fills after a few steps; the run stops at
    the next step (no more model calls), and the stream keeps every whole line."""
    big = "x" * 60_000
    server.push(*[chat(f"{big}\n```bash\necho {i}\n```") for i in range(30)])
    status = main(_run(server, tmp_path, small_disk, "--quiet", "--max-steps", "30"))
    err = capsys.readouterr().err
    assert status == 1
    line = _one_line(err)
    assert line.startswith("four run: save_failed: no space left on device: ")
    streams = list(small_disk.glob("*.jsonl"))
    assert len(streams) == 1 and f"({streams[0]} keeps " in line
    kept = load_trajectory(streams[0])  # readable: cut back to its last whole line
    calls = len(server.bodies("/v1/chat/completions"))
    assert 2 <= calls < 12 and len(kept.messages) >= 3
    assert kept.messages[2].content.startswith(big)


def test_the_agent_deleting_the_output_folder_loses_nothing(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    server.push(
        chat(f"```bash\nrm -rf {runs}\n```"), chat("```bash\necho after\n```"), chat(SUBMIT)
    )
    assert main(_run(server, tmp_path, runs, "--json")) == 0
    result = json.loads(capsys.readouterr().out)
    path = Path(result["path"])
    assert result["outcome"] == "exit:task_complete" and path.is_file()
    saved = load_trajectory(path)
    stream = load_trajectory(path.with_suffix(".jsonl"))
    assert saved.messages == stream.messages and len(saved.messages) == 7
    assert "after" in saved.messages[5].content


def test_view_creates_no_folders(sample: Path, tmp_path: Path) -> None:
    from tests.cli._runs import cli

    target = tmp_path / "nonexistent" / "d" / "x.html"
    done = cli("view", str(sample), "-o", str(target))
    assert done.returncode == 2
    assert _one_line(done.stderr) == (
        f"four view: error: cannot write {target}: the folder {target.parent} does not exist"
    )
    assert not (tmp_path / "nonexistent").exists()


def test_view_on_a_full_disk_leaves_no_partial_page(
    sample: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (small_disk / "filler").write_bytes(b"x" * (512 * 1024 - 4096))
    assert main(["view", str(sample), "-o", str(small_disk / "x.html")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.endswith("No space left on device") and list(small_disk.iterdir()) == [
        small_disk / "filler"
    ]


def test_the_library_keeps_going_in_memory_and_says_what_it_kept(small_disk: Path) -> None:
    """Without `four run`'s watch, a run whose stream fails goes on (its messages kept in
    memory); the seal that cannot be written raises TrajectoryNotSaved, naming the
    stream, which holds only whole lines."""
    from returns.result import Success

    from four import Action, Assistant, Observation, run, save_trajectory
    from four.trajectory import TrajectoryNotSaved

    big = "y" * 100_000

    def G(history: object) -> Success[Assistant]:  # a function: its settings record is small
        return Success(Assistant(f"{big}\n$ step"))

    with pytest.raises(TrajectoryNotSaved) as raised:
        run(
            G,
            lambda reply: Success([Action("true")]),
            lambda action: Success(Observation("ok", 0)),
            save_trajectory(small_disk),
            "s",
            "p",
            max_steps=8,
        )
    error = raised.value
    assert error.reason == "no space left on device" and error.kept is not None
    assert str(error).startswith("no space left on device: the run could not be saved in ")
    assert f"{error.kept} keeps " in str(error) and " of 18 messages" in str(error)
    assert 2 <= len(load_trajectory(error.kept).messages) < 18


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--check", " "], "four run: error: --check is empty: give the command that judges"),
        (["--command-timeout", "0"], "four run: error: local_env: timeout=0.0: give a number"),
    ],
    ids=["empty check", "zero command timeout"],
)
def test_settings_the_components_refuse_are_one_line(
    server: LoopbackServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    words: str,
) -> None:
    server.push(chat(SUBMIT))
    assert main(["run", "task", *args(server, tmp_path, *extra)]) == 2
    assert _one_line(capsys.readouterr().err).startswith(words)
    assert not server.bodies("/v1/chat/completions")
