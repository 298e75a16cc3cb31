"""Every domain saves as the bash domain does: a disk that fills during the run ends it
`save_failed` at the next step, and `--sign` signs the seal, which covers the domain's
artifact (its record and each file's SHA-256); `four replay` of a domain that edits its
workspace begins in a copy of it as it was. Real tmpfs, real checkers, real kernel, real
gcc and bubblewrap."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from four.cli import main
from four.trajectory import load_trajectory
from tests._server import LoopbackServer, chat
from tests.cli.test_save_faults import _mount, _one_line
from tests.domains.cli.test_cli_domain import SUM
from tests.execute.conftest import bwrap_problem, need

SUBMIT = "Done.\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
GREET = 'hello.py\n```python\ndef greet(name: str) -> str:\n    return f"hello {name}"\n```\n'
WORK = {  # a reply that does the work, and the artifact it leaves beside the trajectory
    "python": (GREET, "files", ".files/hello.py"),
    "notebook": ("A first cell.\n```python\nprint(6 * 7)\n```\n", "notebook", ".ipynb"),
    "cli": (f"sum.c\n```c\n{SUM}```\n", "tool", ".tool/bin/sum"),
}
STEP = {  # one step's action, after a large prose part
    "python": "```bash\necho {i}\n```",
    "notebook": "```python\nprint({i})\n```",
    "cli": "```bash\necho {i}\n```",
}
DOMAINS = list(WORK)


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from four.cli._settings import VARIABLES

    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _available(domain: str) -> None:
    if domain == "cli":
        need(bwrap_problem())
        for tool in ("gcc", "help2man", "mandoc"):
            if shutil.which(tool) is None:
                need(f"{tool} is not installed (tests/domains/services.sh)")
    if domain == "notebook" and importlib.util.find_spec("nbclient") is None:
        pytest.skip("the notebook extra is not installed")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 512 KB filesystem."""
    yield from _mount(tmp_path / "small", "size=512k,mode=0755")


def _argv(server: LoopbackServer, tmp_path: Path, domain: str, output: Path) -> list[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return ["run", "the task", "--domain", domain, "--model", "m", "--api-base", server.url,
            "-o", str(output), "--cwd", str(work)]  # fmt: skip


def _calls(server: LoopbackServer) -> int:
    return len(server.bodies("/v1/chat/completions"))


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_disk_that_fills_ends_the_run_save_failed(
    server: LoopbackServer,
    tmp_path: Path,
    small_disk: Path,
    capsys: pytest.CaptureFixture[str],
    domain: str,
) -> None:
    _available(domain)
    big = "x" * 60_000
    server.push(*[chat(f"{big}\n" + STEP[domain].format(i=i)) for i in range(30)])
    argv = _argv(server, tmp_path, domain, small_disk)
    assert main([*argv, "--max-steps", "30", "--quiet"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("four run: save_failed: no space left on device: ")
    assert 2 <= _calls(server) < 12  # stopped at the next step, not after 30
    (stream,) = small_disk.glob("*.jsonl")
    assert f"({stream} keeps " in line
    assert load_trajectory(stream).messages[2].content.startswith(big)
    assert not [p for p in small_disk.iterdir() if p.name.startswith(".")]  # no staging left


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_signed_run_audits_with_the_public_key(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], domain: str
) -> None:
    pytest.importorskip("cryptography")
    _available(domain)
    key, other = tmp_path / "key", tmp_path / "other"
    assert main(["keygen", str(key)]) == 0 and main(["keygen", str(other)]) == 0
    capsys.readouterr()
    reply, record, suffix = WORK[domain]
    server.push(chat(reply), chat(SUBMIT))
    argv = _argv(server, tmp_path, domain, tmp_path / "runs")
    assert main([*argv, "--sign", str(key), "--json"]) == 0
    path = Path(json.loads(capsys.readouterr().out)["path"])
    assert main(["audit", "--public-key", f"{key}.pub", str(path)]) == 0
    assert main(["audit", "--public-key", f"{other}.pub", str(path)]) == 1
    stats = load_trajectory(path).stats
    said = getattr(stats, record)
    assert isinstance(said, dict) and "error" not in said
    digests = stats.artifacts
    assert digests is not None and path.stem + suffix in digests
    for name, digest in digests.items():  # each file as it is on disk, under the seal
        assert digest == "sha256:" + hashlib.sha256((path.parent / name).read_bytes()).hexdigest()


def test_replay_of_a_cli_run_begins_where_it_began_and_leaves_the_workspace_alone(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _available("cli")
    work = tmp_path / "work"
    work.mkdir()
    (work / "sum.c").write_text(SUM)
    edit = 'sum.c\n```c\n<<<<<<< SEARCH\n        puts("sum 1.0");\n=======\n'
    server.push(chat(edit + '        puts("sum 1.1");\n>>>>>>> REPLACE\n```\n'), chat(SUBMIT))
    assert main([*_argv(server, tmp_path, "cli", tmp_path / "runs"), "--json"]) == 0
    path = Path(json.loads(capsys.readouterr().out)["path"])
    after = {p.name: p.read_bytes() for p in work.iterdir()}
    assert main(["replay", str(path), "--json"]) == 0  # the SEARCH finds its text again
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["same"] and replayed["replayed_outcome"] == "accepted"
    assert {p.name: p.read_bytes() for p in work.iterdir()} == after  # not rebuilt, not edited
