"""`four run --resume` acts only on a record that verifies against its seal.

A resume runs what the record says: its model server, its working folder, its check
command. So a real run, cut short, is edited on disk (its check command made to leave a
mark), and `four run --resume` refuses it in one line, before any model call and without
running anything. With `--sign KEY` the record must also be signed by that key: an
unsigned one and one signed by another key are refused, one signed by KEY resumes.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from four.cli import main
from tests._server import LoopbackServer, chat
from tests.cli._runs import cli

SUBMIT = "```bash\ntouch ok.txt && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
CHECK = "test -f ok.txt"
PLANTED = "touch PWNED"


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as running:
        yield running


@pytest.fixture(scope="module")
def original(server: LoopbackServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real run cut short, copied for each test that edits it."""
    return cut_run(server, tmp_path_factory.mktemp("original"), "edited")


def copy_of(document: Path, folder: Path) -> Path:
    for suffix in (".json", ".jsonl"):
        shutil.copy2(document.with_suffix(suffix), folder / document.with_suffix(suffix).name)
    return folder / document.name


def cut_run(server: LoopbackServer, tmp_path: Path, name: str, *argv: str) -> Path:
    """A real run cut short after one step (its sealed document's path)."""
    work, out = tmp_path / f"{name}-work", tmp_path / f"{name}-runs"
    work.mkdir()
    server.push(chat("```bash\necho one\n```"))
    done = cli("run", "put ok in ok.txt", "--model", "m", "--api-base", server.url,
               "-o", str(out), "--cwd", str(work), "--max-steps", "1", "--check", CHECK,
               "--attempts", "1",
               *argv)  # fmt: skip
    assert done.returncode == 1, done.stderr
    (document,) = out.glob("*.json")
    assert document.with_suffix(".jsonl").is_file()
    return document


def resume(
    server: LoopbackServer, record: Path, *argv: str, answer: bool = False
) -> tuple[int, str, int]:
    """``four run --resume record``: its exit status, its stderr, and the model calls it
    made (requests for a completion; not the look at the server's context size). With
    ``answer``, the model's reply is ready (else a call gets an error, and is counted)."""
    before = len(server.requests)
    if answer:
        server.push(chat(SUBMIT))
    done = cli("run", "--resume", str(record), "--quiet", *argv)
    made = [r for r in server.requests[before:] if r.path.endswith("/chat/completions")]
    return done.returncode, done.stderr, len(made)


@pytest.mark.parametrize(
    ("edited", "named"),
    [(".json", ".json"), (".jsonl", ".json"), (".json", ".jsonl"), ("both", ".jsonl")],
)
def test_an_edited_record_is_not_resumed(
    server: LoopbackServer, original: Path, tmp_path: Path, edited: str, named: str
) -> None:
    document = copy_of(original, tmp_path)
    for suffix in (".json", ".jsonl") if edited == "both" else (edited,):
        path = document.with_suffix(suffix)
        text = path.read_text()
        assert CHECK in text
        path.write_text(text.replace(CHECK, PLANTED))
    status, stderr, calls = resume(server, document.with_suffix(named))
    assert status == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "does not verify" in lines[0] and lines[0].endswith("not resumed"), lines[0]
    assert calls == 0
    assert not (original.parent.parent / "edited-work" / "PWNED").exists()
    assert len(list(document.parent.glob("*.json"))) == 1  # no new attempt saved


def test_an_untouched_record_resumes(
    server: LoopbackServer, original: Path, tmp_path: Path
) -> None:
    document = copy_of(original, tmp_path)
    status, stderr, calls = resume(server, document, answer=True)
    assert (status, calls) == (0, 1), stderr  # accepted by the recorded check
    assert len(list(document.parent.glob("*.json"))) == 2  # the new attempt beside it


def test_with_a_key_only_a_record_signed_by_it_resumes(
    server: LoopbackServer, tmp_path: Path
) -> None:
    mine, other = tmp_path / "mine.pem", tmp_path / "other.pem"
    assert main(["keygen", str(mine)]) == 0 and main(["keygen", str(other)]) == 0
    unsigned = cut_run(server, tmp_path, "unsigned")
    by_other = cut_run(server, tmp_path, "other", "--sign", str(other))
    by_me = cut_run(server, tmp_path, "mine", "--sign", str(mine))
    for record in (unsigned, by_other):
        status, stderr, calls = resume(server, record, "--sign", str(mine))
        assert status == 2 and calls == 0, stderr
        assert "does not verify" in stderr and len(stderr.strip().splitlines()) == 1, stderr
    status, stderr, calls = resume(server, by_me, "--sign", str(mine), answer=True)
    assert (status, calls) == (0, 1), stderr
