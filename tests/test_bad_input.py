"""Bad input from the model: empty, huge, non-UTF-8 replies never crash the loop."""

from __future__ import annotations

from pathlib import Path

from four import (
    Finished,
    RepeatedFormatError,
    load_trajectory,
    run,
    save_trajectory,
    scripted_invoke,
)
from tests._doubles import FakeEnv, line_parse


def test_empty_replies_are_format_errors(tmp_path: Path) -> None:
    path = run(
        scripted_invoke(["", "", ""]), line_parse, FakeEnv(), save_trajectory(tmp_path), "s", "p"
    )
    assert (
        load_trajectory(path).outcome
        == RepeatedFormatError("Format error: write commands as lines starting with '$ '.").text
    )


def test_megabyte_replies_are_kept_whole(tmp_path: Path) -> None:
    big = "$ echo " + "x" * 5_000_000
    path = run(
        scripted_invoke([big, "DONE"]), line_parse, FakeEnv(), save_trajectory(tmp_path), "s", "p"
    )
    trajectory = load_trajectory(path)
    assert trajectory.outcome == Finished().text
    assert trajectory.messages[2].content == big


def test_non_utf8_reply_text(tmp_path: Path) -> None:
    garbled = b"$ echo \xff\xfe caf\xc3".decode("utf-8", "surrogateescape")
    path = run(
        scripted_invoke([garbled, "DONE"]),
        line_parse,
        FakeEnv(),
        save_trajectory(tmp_path),
        "s",
        "p",
    )
    assert load_trajectory(path).messages[2].content == garbled
