"""The terminal belongs to the user: escape sequences from the model or a command are shown
as text, never obeyed, in every command that prints a run (captured in a real pseudo-terminal).

The run is a real ``four run`` (the loopback model, real bash) whose replies, commands and
outputs carry a corpus of hostile sequences: OSC 52 (writes the clipboard), OSC 8 (a link),
OSC 0 (the window title), a screen clear, cursor moves, C1 controls, CR/BS overwrites, NUL,
DEL, a bidi override. What reaches the terminal may hold only rich's own colours and cursor
moves; every sequence of the corpus must appear in its visible form (``\\x1b]52;...``).
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from four.cli._terminal import visible
from tests._server import LoopbackServer, chat
from tests.cli._runs import cli, cli_env

# name -> (the raw sequence, how a user must see it)
CORPUS: dict[str, tuple[str, str]] = {
    "osc52": ("\x1b]52;c;cHduZWQ=\x07", r"\x1b]52;c;cHduZWQ=\x07"),
    "osc8": (
        "\x1b]8;;http://x.invalid/\x1b\\link\x1b]8;;\x1b\\",
        "\\x1b]8;;http://x.invalid/\\x1b\\link\\x1b]8;;\\x1b\\",
    ),
    "osc0": ("\x1b]0;owned\x07", r"\x1b]0;owned\x07"),
    "clear": ("\x1b[2J\x1b[H", r"\x1b[2J\x1b[H"),
    "cursor": ("\x1b[3A\x1b[10;1H\x1b7\x1b8", r"\x1b[3A\x1b[10;1H\x1b7\x1b8"),
    "c1": ("\x9b2J\x9d0;t\x9c", r"\x9b2J\x9d0;t\x9c"),
    "overwrite": ("safe\rEVIL\x08\x08", r"safe\x0dEVIL\x08\x08"),
    "bidi": ("abc\u202edcba", r"abc\u202edcba"),
}
NUL = ("\x00\x7f", r"\x00\x7f")  # in replies and outputs; a command line cannot hold NUL

# What rich itself writes to a terminal: colours (SGR), and for the live table hiding the
# cursor, erasing a line and moving one line up. Anything else is the model's.
OURS = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[2K|\x1b\[1A|\r")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def rogue(screen: str) -> list[str]:
    """Control characters that are not rich's own sequences, with a little context."""
    rest = OURS.sub("", screen)
    return [repr(rest[max(0, m.start() - 10) : m.end() + 10]) for m in CONTROL.finditer(rest)]


def shown_everything(screen: str, names: Mapping[str, tuple[str, str]] = CORPUS) -> list[str]:
    """The names of the corpus whose visible form is missing from ``screen``."""
    return [name for name, (_, seen) in names.items() if seen not in screen]


@dataclass(frozen=True, slots=True)
class Captured:
    tty: str  # what the pseudo-terminal received (stdout, and stderr unless piped)
    stderr: str  # stderr when it was a pipe
    returncode: int


def in_terminal(*args: str, env: Mapping[str, str], pipe_stderr: bool = False) -> Captured:
    """``four ARGS`` with a pseudo-terminal (250 columns) as its stdout (and stderr)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 250, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "four.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE if pipe_stderr else slave,
        env={**cli_env(env), "TERM": "xterm-256color", "COLUMNS": "250", "LINES": "60"},
        start_new_session=True,
    )
    os.close(slave)
    tty, err = bytearray(), bytearray()
    readers = [master] + ([process.stderr.fileno()] if process.stderr else [])
    deadline = time.monotonic() + 60
    try:
        while readers and time.monotonic() < deadline:
            ready, _, _ = select.select(readers, [], [], 1)
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the terminal's last writer closed it
                    chunk = b""
                if not chunk:
                    readers.remove(fd)
                (tty if fd == master else err).extend(chunk)
        code = process.wait(timeout=10)
    finally:
        process.kill()
        os.close(master)
        if process.stderr:
            process.stderr.close()
    return Captured(tty.decode("utf-8", "replace"), err.decode("utf-8", "replace"), code)


GROUPS = [("osc52",), ("osc8",), ("osc0", "clear"), ("cursor", "c1"), ("overwrite", "bidi")]
"""Sequences sharing a command: the live table keeps 8 rows, and each command fits one."""


def replies() -> list[str]:
    """Steps whose reply and (failing) command carry the sequences, and so does the
    command's output; then a submission whose output carries them all."""
    steps = []
    for group in GROUPS:
        raws = [CORPUS[name][0] for name in group]
        words = " ".join(f"'{name}:{raw}'" for name, raw in zip(group, raws, strict=True))
        steps.append(f"Step {' '.join(raws)}\n```bash\necho {words}; false\n```")
    steps.append(f"Now NUL {NUL[0]}\n```bash\nprintf 'nul:\\0\\177\\n'; false\n```")
    everything = "".join(raw for raw, _ in CORPUS.values())
    steps.append(
        "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n"
        f"echo '{everything}'; printf 'nul:\\0\\177\\n'\n```"
    )
    return steps


def four_run(tmp: Path, pipe_stderr: bool) -> tuple[Captured, Path]:
    work, runs = tmp / "work", tmp / "runs"
    work.mkdir(parents=True)
    with LoopbackServer() as server:
        server.push(*(chat(text) for text in replies()))
        captured = in_terminal(
            "run",
            f"title {CORPUS['osc0'][0]}",
            "--model",
            "test-model",
            "--api-base",
            server.url,
            "-o",
            str(runs),
            "--cwd",
            str(work),
            "--max-steps",
            "20",
            env={},
            pipe_stderr=pipe_stderr,
        )
    (saved,) = runs.rglob("*.json")
    return captured, saved


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Captured, Path]:
    """``four run`` with its live table on the terminal; the run it saved."""
    return four_run(tmp_path_factory.mktemp("live"), pipe_stderr=False)


def test_the_live_table_shows_the_commands_escapes(live: tuple[Captured, Path]) -> None:
    captured, _ = live
    assert captured.returncode == 0, captured.tty
    assert "\x1b[1A" in captured.tty  # it was the live table (redrawn in place)
    assert rogue(captured.tty) == []
    assert shown_everything(captured.tty) == []


def test_the_printed_submission_shows_its_escapes(live: tuple[Captured, Path]) -> None:
    captured, _ = live
    submission = captured.tty[captured.tty.index("submission:") :]
    assert rogue(submission) == []
    assert shown_everything(submission, {**CORPUS, "nul": NUL}) == []


def test_line_mode_shows_the_escapes(tmp_path: Path) -> None:
    captured, _ = four_run(tmp_path, pipe_stderr=True)  # stderr is a pipe: line mode
    assert captured.returncode == 0, captured.stderr
    assert "step 1 · $ echo 'osc52:" in captured.stderr
    assert CONTROL.findall(captured.stderr) == []  # no terminal here: not even colours
    assert shown_everything(captured.stderr) == []
    assert rogue(captured.tty) == []


def test_four_show_shows_replies_commands_and_outputs(live: tuple[Captured, Path]) -> None:
    _, saved = live
    shown = in_terminal("show", str(saved), "--full", env={})
    assert shown.returncode == 0, shown.tty
    assert "\x1b[" in shown.tty  # colours: it knew it was a terminal
    assert rogue(shown.tty) == []
    assert shown_everything(shown.tty, {**CORPUS, "nul": NUL}) == []
    # in the reply, the command and the output alike
    assert shown.tty.count(CORPUS["osc52"][1]) >= 3


def test_four_stats_shows_the_failing_commands(live: tuple[Captured, Path]) -> None:
    _, saved = live
    stats = in_terminal("stats", str(saved.parent), "--top", "20", env={})
    assert stats.returncode == 0, stats.tty
    assert rogue(stats.tty) == []
    assert shown_everything(stats.tty) == []


def test_an_error_naming_a_hostile_file_shows_it(tmp_path: Path) -> None:
    name = str(tmp_path / f"run{CORPUS['osc52'][0]}{CORPUS['clear'][0]}.json")
    error = in_terminal("show", name, env={})
    assert error.returncode == 2
    assert rogue(error.tty) == []
    assert shown_everything(error.tty, {k: CORPUS[k] for k in ("osc52", "clear")}) == []


def test_the_page_carries_no_raw_escape_or_nul(live: tuple[Captured, Path], tmp_path: Path) -> None:
    _, saved = live
    page = tmp_path / "page.html"
    done = cli("view", str(saved), "-o", str(page))
    assert done.returncode == 0, done.stderr
    data = page.read_bytes()
    assert b"\x1b" not in data and b"\x00" not in data
    assert CONTROL.findall(data.decode("utf-8")) == []
    assert b"\\x1b]52;c;cHduZWQ=\\x07" in data  # shown, not dropped


# --- the sanitiser itself --------------------------------------------------------------


@given(st.text())
def test_visible_leaves_nothing_a_terminal_would_act_on(text: str) -> None:
    shown = visible(text)
    assert CONTROL.findall(shown) == []
    assert visible(shown) == shown  # applying it twice changes nothing


@given(st.text(st.characters(blacklist_categories=["Cc", "Cf"]) | st.sampled_from("\n\t")))
def test_visible_keeps_ordinary_text_as_it_is(text: str) -> None:
    assert visible(text) == text


def test_a_crlf_line_end_is_a_newline() -> None:
    assert visible("HTTP/1.1 200 OK\r\nx: 1\r\n") == "HTTP/1.1 200 OK\nx: 1\n"
