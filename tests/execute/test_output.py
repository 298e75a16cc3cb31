"""OutputBuffer against a naive model: decode everything, then cut head and tail."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from four import Submitted
from four.execute import EXIT_SIGNAL, OutputBuffer
from four.execute._output import Ran, conclude, observe

_pieces = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.text(max_size=20).map(str.encode),
        st.sampled_from([b"\n", EXIT_SIGNAL.encode(), b"\xe2\x82", b"\xac", b"\xff"]),
    ),
    max_size=12,
)


def naive(data: bytes, max_output: int) -> tuple[str, int]:
    text = data.decode("utf-8", "replace")
    if len(text) <= max_output:
        return text, 0
    head, tail = max_output - max_output // 2, max_output // 2
    shown_tail = text[len(text) - tail :] if tail else ""
    elided = len(text) - head - tail
    if max_output == 0:
        return "", elided
    return f"{text[:head]}\n[... {elided} characters elided ...]\n{shown_tail}", elided


@given(_pieces, st.integers(0, 60), st.booleans())
def test_render_matches_the_naive_model(pieces: list[bytes], max_output: int, signal: bool) -> None:
    buffer = OutputBuffer(max_output, EXIT_SIGNAL if signal else None)
    for piece in pieces:
        buffer.feed(piece)
    buffer.finish()
    data = b"".join(pieces)
    assert buffer.render() == naive(data, max_output)
    assert buffer.total == len(data.decode("utf-8", "replace"))


@given(_pieces, st.integers(0, 60))
def test_submission_matches_the_naive_rule(pieces: list[bytes], max_output: int) -> None:
    buffer = OutputBuffer(max_output, EXIT_SIGNAL)
    for piece in pieces:
        buffer.feed(piece)
    buffer.finish()
    text = b"".join(pieces).decode("utf-8", "replace").lstrip()
    first, _, rest = text.partition("\n")
    expected = rest if first.strip() == EXIT_SIGNAL else None
    assert buffer.submission() == expected


def test_submission_is_not_cut_at_max_output() -> None:
    buffer = OutputBuffer(10, EXIT_SIGNAL)
    patch = "".join(f"line {i}\n" for i in range(5_000))
    buffer.feed(f"{EXIT_SIGNAL}\n{patch}".encode())
    buffer.finish()
    ran = Ran(0, buffer, 0.1)
    assert conclude(ran) == Failure(Submitted(patch.strip("\n")))


def test_large_output_is_counted_not_kept() -> None:
    buffer = OutputBuffer(100)
    chunk = b"x" * 65536
    for _ in range(1000):  # 64 MB
        buffer.feed(chunk)
    buffer.finish()
    shown, elided = buffer.render()
    assert elided == 65536 * 1000 - 100 and len(shown) < 200
    kept = sum(len(s) for s in buffer._head) + sum(len(s) for s in buffer._tail)
    assert kept < 2 * 65536


def test_observation_format() -> None:
    buffer = OutputBuffer(100)
    buffer.feed(b"hello")
    buffer.finish()
    assert conclude(Ran(0, buffer, 0.5)) == Success(observe(Ran(0, buffer, 0.5)))
    observation = observe(Ran(0, buffer, 0.5))
    assert observation.content == "<returncode>0</returncode>\n<output>\nhello\n</output>"
    assert observation.duration == 0.5
    timed = observe(Ran(None, buffer, 2.0, timed_out=True, timeout=2.0))
    assert timed.returncode == 124 and timed.timed_out
    assert timed.content.startswith("<returncode>124</returncode>\n<warning>The command timed out")
