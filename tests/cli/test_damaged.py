"""Damaged and hostile trajectory files: every reader refuses each with one line.

A corpus is built from a real run's files: cut at many byte offsets, a value of the
wrong type at every level the readers read, invalid UTF-8, a stream with a line cut in
its middle, a string over the size limit, 200,000 nested brackets, a FIFO, a link to
/dev/zero, a broken link, a folder, a sparse file over the limit. Each goes through
`four show`, `view`, `audit`, `stats`, `replay` and `load_trajectory`: exit 1 or 2,
exactly one line on standard error starting with the command's name, no traceback, and
soon (a reader that blocks or loops fails the timeout).

A key repeated in one object is read with its last value (as msgspec and ``json`` read
it), and refused by `four audit`: which value the seal covers is the auditor's business.
"""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from four.cli import main
from four.trajectory import TrajectoryError, load_trajectory
from tests.cli._runs import cli, sample_run

READERS = ("show", "view", "audit", "stats", "replay")
SECONDS = 10.0
"""What "soon" means here; a hostile file answered in time takes well under a second."""

Build = Callable[[Path], Path]


def _json_file(doc: object, name: str = "x.json") -> Build:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_text(json.dumps(doc))
        return path

    return build


def _bytes_file(data: bytes, name: str = "x.json") -> Build:
    def build(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return build


def _wrong_types(doc: dict[str, object]) -> Iterator[tuple[str, object]]:
    """The document with one value of the wrong type, at each level the readers read."""
    bad_for = {str: 5, int: "5", float: "slow", dict: ["x"], list: {"x": 1}, bool: "no"}

    def changed(path: tuple[str | int, ...], value: object) -> dict[str, object]:
        copy: dict[str, object] = json.loads(json.dumps(doc))
        *parents, last = path
        target: Any = copy  # JSON, walked by keys and indexes
        for key in parents:
            target = target[key]
        target[last] = value
        return copy

    for key in ("format", "outcome", "info", "stats", "outcome_detail", "messages", "timestamps"):
        yield key, changed((key,), bad_for[type(doc[key])])
    yield "messages[1]", changed(("messages", 1), "a message")
    for key in ("components", "max_steps", "started_at"):
        yield f"info.{key}", changed(("info", key), bad_for[type(doc["info"][key])])  # type: ignore[index]
    for key in ("steps", "usage", "wall_time"):
        yield f"stats.{key}", changed(("stats", key), bad_for[type(doc["stats"][key])])  # type: ignore[index]
    yield "stats.usage.cost", changed(("stats", "usage", "cost"), "free")
    messages = doc["messages"]
    assert isinstance(messages, list)
    reply = next(i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("usage"))
    tool = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
    observation = next(i for i, m in enumerate(messages) if "returncode" in m)
    yield "role", changed(("messages", 0, "role"), 1)
    yield "role value", changed(("messages", 0, "role"), "wizard")
    yield "content", changed(("messages", reply, "content"), {"text": 1})
    yield "content part", changed(("messages", reply, "content"), [{"text": 5}])
    yield "usage", changed(("messages", reply, "usage"), "lots")
    yield "usage.prompt_tokens", changed(("messages", reply, "usage", "prompt_tokens"), "100")
    yield "tool_calls", changed(("messages", tool, "tool_calls"), "bash")
    yield "tool call", changed(("messages", tool, "tool_calls", 0), "bash")
    yield "tool call function", changed(("messages", tool, "tool_calls", 0, "function"), 7)
    yield "returncode", changed(("messages", observation, "returncode"), "0")
    yield "returncode bool", changed(("messages", observation, "returncode"), True)
    yield "kind", changed(("messages", observation, "kind"), ["observation"])


def corpus(run: Path) -> dict[str, Build]:
    """Name -> a function making that damaged file in a folder, from the run at ``run``."""
    text = run.read_bytes()
    doc = json.loads(text)
    stream = run.with_suffix(".jsonl").read_bytes()
    cases: dict[str, Build] = {}
    for offset in range(1, len(text) - 1, max(1, len(text) // 23)):
        cases[f"cut at byte {offset}"] = _bytes_file(text[:offset])
    for where, changed in _wrong_types(doc):
        cases[f"wrong type: {where}"] = _json_file(changed)
    at = text.index(b"Let me look")
    cases["invalid UTF-8"] = _bytes_file(text[:at] + b"\xff\xfe" + text[at:])
    lines = stream.splitlines(keepends=True)
    cases["jsonl cut mid-line"] = _bytes_file(
        b"".join([*lines[:3], lines[3][:20], *lines[4:]]), "x.jsonl"
    )
    cases["jsonl without a start"] = _bytes_file(b"".join(lines[1:]), "x.jsonl")
    cases["jsonl wrong type"] = _bytes_file(
        lines[0] + b'{"type": "message", "t": 0, "message": [1]}\n', "x.jsonl"
    )
    cases["200,000 nested ["] = _bytes_file(b"[" * 200_000)
    cases["200,000 nested [ in messages"] = _bytes_file(b'{"messages": [' + b"[" * 200_000)
    cases["nested 5,000 deep in a message"] = _bytes_file(
        b'{"messages": [{"role": "user", "content": "hi", "extra": ' + _deep(5000) + b"}]}"
    )
    cases["nested 5,000 deep in info"] = _bytes_file(
        b'{"format": "four.trajectory/1", "messages": [], "info": ' + _deep(5000) + b"}"
    )
    cases["nested 200,000 deep in a jsonl line"] = _bytes_file(
        lines[0] + b'{"type": "message", "message": ' + b"[" * 200_000 + b"\n", "x.jsonl"
    )
    cases["empty"] = _bytes_file(b"")
    cases["null"] = _bytes_file(b"null")
    cases["a number"] = _bytes_file(b"12345")
    cases["trailing data"] = _bytes_file(text + b"{}")
    cases["no messages"] = _json_file({"format": "four.trajectory/1", "outcome": "x"})
    cases["huge string over the limit"] = _json_file(
        {"messages": [{"role": "user", "content": "x" * 3_000_000}]}
    )
    cases["sparse file over the limit"] = _sparse
    cases["FIFO"] = _fifo
    cases["link to /dev/zero"] = _link_to("/dev/zero")
    cases["broken link"] = _link_to("/nonexistent/run.json")
    cases["a folder"] = _folder
    return cases


def _replaced(data: bytes, old: bytes, new: bytes) -> bytes:
    assert old in data, old  # the damage is really made
    return data.replace(old, new, 1)


def _deep(levels: int) -> bytes:
    return b'{"a": ' * levels + b'"bottom"' + b"}" * levels


def duplicates(run: Path) -> dict[str, Build]:
    """Files that repeat a key in one object, which only `four audit` refuses."""
    text = run.read_bytes()
    lines = run.with_suffix(".jsonl").read_bytes().splitlines(keepends=True)
    return {
        "duplicate key, top level": _bytes_file(
            _replaced(text, b'"outcome": ', b'"outcome": "held", "outcome": ')
        ),
        "duplicate key, in a message": _bytes_file(
            _replaced(
                text, b'{"content":"do the task",', b'{"content":"do it","content":"do the task",'
            )
        ),
        "duplicate key, jsonl": _bytes_file(
            _replaced(lines[0], b'"type": "start", ', b'"type": "start", "type": "end", '),
            "x.jsonl",
        ),
    }


def _sparse(folder: Path) -> Path:
    path = folder / "x.json"
    with path.open("wb") as f:
        f.truncate(300 * 2**20)  # 300 MiB of holes: nothing on disk, over the limit
    return path


def _fifo(folder: Path) -> Path:
    path = folder / "x.json"
    os.mkfifo(path)
    return path


def _link_to(target: str) -> Build:
    def build(folder: Path) -> Path:
        path = folder / "x.json"
        path.symlink_to(target)
        return path

    return build


def _folder(folder: Path) -> Path:
    path = folder / "x.json"
    path.mkdir()
    return path


LIMIT = ["--max-size", "2M"]  # so the 3 MB string is over it; everything else is far below


def _argv(reader: str, path: Path, folder: Path) -> list[str]:
    extra = ["-o", str(folder / "page.html")] if reader == "view" else []
    return [reader, str(path), *extra, *LIMIT]


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("damaged")
    run = sample_run(root / "run")
    made = {}
    for n, (name, build) in enumerate(corpus(run).items()):
        folder = root / f"case{n}"
        folder.mkdir()
        made[name] = build(folder)
    return made


def _within(seconds: float, fn: Callable[[], object]) -> object:
    """``fn()``'s value, or a test failure when it takes longer than ``seconds``."""
    box: list[object] = []
    worker = threading.Thread(target=lambda: box.append(_catch(fn)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    result = box[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _catch(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except BaseException as exc:  # handed to the test's thread
        return exc


def test_the_corpus_is_large(damaged: dict[str, Path]) -> None:
    assert len(damaged) >= 60


def test_every_reader_refuses_every_damaged_file_in_one_line(damaged: dict[str, Path]) -> None:
    """In process (quick): the readers' exit status and their one line on stderr."""
    failures = []
    for name, path in damaged.items():
        for reader in READERS:
            err, out = io.StringIO(), io.StringIO()

            def call(
                reader: str = reader,
                path: Path = path,
                err: io.StringIO = err,
                out: io.StringIO = out,
            ) -> object:
                with redirect_stderr(err), redirect_stdout(out):
                    return main(_argv(reader, path, path.parent))

            status = _within(SECONDS, call)
            lines = err.getvalue().splitlines()
            if not _refused(reader, status, lines, out.getvalue()):
                failures.append(f"{reader} / {name}: exit {status}, stderr {lines!r:.300}")
    assert not failures, "\n".join(failures)


def _refused(reader: str, status: object, lines: list[str], out: str) -> bool:
    """Exit 1 or 2 and one line on stderr naming the command; `four audit` may instead
    judge a file it can read but not verify: exit 1, ``invalid: PATH`` and its reasons."""
    if status in (1, 2) and len(lines) == 1 and lines[0].startswith(f"four {reader}"):
        return True
    return reader == "audit" and status == 1 and not lines and out.startswith("invalid: ")


def test_load_trajectory_refuses_every_damaged_file(damaged: dict[str, Path]) -> None:
    for name, path in damaged.items():

        def load(path: Path = path) -> object:
            return load_trajectory(path, max_bytes=2 * 2**20)

        def timed(load: Callable[[], object] = load) -> object:
            return _within(SECONDS, load)

        result = _catch(timed)
        assert isinstance(result, TrajectoryError), f"{name}: {result!r}"
        message = str(result)
        assert str(path) in message and "\n" not in message, f"{name}: {message}"


HOSTILE = (
    "FIFO",
    "link to /dev/zero",
    "broken link",
    "200,000 nested [",
    "invalid UTF-8",
)


def test_hostile_files_through_the_real_command(damaged: dict[str, Path]) -> None:
    """As a user meets them: `four` subprocesses, each with a timeout."""
    cases = [(name, reader) for name in HOSTILE for reader in READERS]

    def one(case: tuple[str, str]) -> str | None:
        name, reader = case
        path = damaged[name]
        done = cli(*_argv(reader, path, path.parent), timeout=SECONDS)
        lines = done.stderr.splitlines()
        if _refused(reader, done.returncode, lines, done.stdout) and "Traceback" not in (
            done.stderr + done.stdout
        ):
            return None
        return f"{reader} / {name}: exit {done.returncode}, stderr {done.stderr!r:.300}"

    with ThreadPoolExecutor(4) as pool:
        failures = [f for f in pool.map(one, cases) if f]
    assert not failures, "\n".join(failures)


def test_the_refusals_name_the_problem(damaged: dict[str, Path]) -> None:
    expected = {
        "FIFO": "is a FIFO (named pipe), not a regular file",
        "link to /dev/zero": "is a character device (a symbolic link to /dev/zero)",
        "broken link": "is a broken symbolic link (to /nonexistent/run.json)",
        "a folder": "is a folder, not a regular file",
        "sparse file over the limit": "over the limit of 2.0 MiB: raise it with --max-size",
        "invalid UTF-8": "is not UTF-8 text (byte 0xff",
        "200,000 nested [": "nests deeper than this reader follows",
        "nested 5,000 deep in info": "nests deeper than this reader follows",
        "wrong type: role value": "messages[0].role: invalid value 'wizard'",
        "wrong type: usage.prompt_tokens": "usage.prompt_tokens: expected `int`, got `str`",
        "jsonl cut mid-line": "line 4 is not JSON",
        "no messages": "has no message list",
    }
    for name, words in expected.items():
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            main(["show", str(damaged[name]), *LIMIT])
        assert words in err.getvalue(), (name, err.getvalue())


def test_a_repeated_key_is_read_with_its_last_value_and_refused_by_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = sample_run(tmp_path / "run")
    for n, (name, build) in enumerate(duplicates(run).items()):
        folder = tmp_path / f"case{n}"
        folder.mkdir()
        path = build(folder)
        if name == "duplicate key, jsonl":  # its type is "end" then: no start record
            with pytest.raises(TrajectoryError, match=r"x\.jsonl: type: invalid value 'end'"):
                load_trajectory(path)
        else:
            trajectory = load_trajectory(path)
            assert trajectory.outcome == "exit:task_complete"
            assert trajectory.messages[1].content == "do the task"
        code = main(["audit", str(path)])
        out, err = capsys.readouterr()
        assert (code == 1 and out.startswith("invalid: ")) or (code == 2 and "x.jsonl" in err), name


def test_a_stream_cut_by_a_kill_still_reads_at_every_offset(tmp_path: Path) -> None:
    """Only the last line may be cut short, as a killed process leaves it: at every
    offset the stream reads to its last whole line, or (no start record yet) is refused."""
    run = sample_run(tmp_path / "run")
    stream = run.with_suffix(".jsonl").read_bytes()
    whole = len(load_trajectory(run.with_suffix(".jsonl")).messages)
    cut = tmp_path / "cut.jsonl"
    counts = []
    for offset in range(0, len(stream), max(1, len(stream) // 40)):
        cut.write_bytes(stream[:offset])
        try:
            counts.append(len(load_trajectory(cut).messages))
        except TrajectoryError as exc:
            assert "no start record" in str(exc)
            assert offset <= stream.index(b"\n")
    assert counts == sorted(counts) and counts[-1] <= whole


def test_stats_names_a_folder_of_broken_links(tmp_path: Path) -> None:
    (tmp_path / "x.json").symlink_to(tmp_path / "gone.json")
    done = cli("stats", str(tmp_path), timeout=SECONDS)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"four stats: skipped: {tmp_path / 'x.json'} is a broken symbolic link "
        f"(to {tmp_path / 'gone.json'}), not followed in a folder"
    ]
    assert done.stdout.startswith("runs: 0  (1 files skipped")


def test_a_large_limit_lets_a_large_file_through(tmp_path: Path) -> None:
    path = _json_file({"messages": [{"role": "user", "content": "x" * 3_000_000}]})(tmp_path)
    assert main(["show", str(path), "--max-size", "2M"]) == 2
    assert main(["show", str(path), "--max-size", "4M"]) == 0
    assert len(load_trajectory(path).messages[0].content) == 3_000_000
