"""retry_invoke over scripted Gs: waits, limits, attempts, billed usage. Nothing sleeps."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from four import Assistant, ModelError, ModelErrorKind, Usage, scripted_invoke
from four._describe import describe
from four.invoke import retry_invoke

K = ModelErrorKind


def busy(retry_after: float | None = None, usage: Usage | None = None) -> ModelError:
    return ModelError(K.RATE_LIMIT, "429", 429, retry_after, usage=usage)


@dataclass
class FakeTime:
    """A clock that moves only when someone sleeps."""

    now: float = 0.0
    waits: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def test_backoff_doubles_up_to_max_delay() -> None:
    t = FakeTime()
    G = retry_invoke(
        scripted_invoke([busy()] * 7 + ["ok"]),
        max_attempts=10,
        base_delay=1,
        max_delay=10,
        sleep=t.sleep,
        clock=t.clock,
        rng=lambda: 1.0,
    )
    assert G([]).unwrap().content == "ok"
    assert t.waits == [1, 2, 4, 8, 10, 10, 10]


def test_jitter_takes_half_to_all_of_the_backoff() -> None:
    t = FakeTime()
    G = retry_invoke(scripted_invoke([busy(), busy(), "ok"]), sleep=t.sleep, rng=lambda: 0.0)
    G([])
    assert t.waits == [0.5, 1.0]


@given(
    failures=st.integers(1, 40),
    draw=st.floats(0, 1),
    base=st.floats(0.01, 5),
    cap=st.floats(0.01, 100),
    after=st.none() | st.floats(0, 1000),
)
def test_delay_bounds(
    failures: int, draw: float, base: float, cap: float, after: float | None
) -> None:
    """Every wait is within [half, all] of the capped backoff, and never below Retry-After."""
    G = retry_invoke(scripted_invoke([]), base_delay=base, max_delay=cap, rng=lambda: draw)
    wait = G.delay(failures, busy(after))
    backoff = min(cap, base * 2.0 ** (failures - 1))
    assert wait >= backoff / 2 * (1 - 1e-9)
    if after is None:
        assert wait <= backoff * (1 + 1e-9)
    else:
        assert wait >= after
        assert wait == max(after, wait)


@pytest.mark.parametrize(
    "kind",
    [
        K.AUTHENTICATION,
        K.PERMISSION,
        K.NOT_FOUND,
        K.BAD_REQUEST,
        K.CONTEXT_WINDOW,
        K.BUDGET,
        K.OTHER,
    ],
)
def test_permanent_errors_return_at_once(kind: ModelErrorKind) -> None:
    t = FakeTime()
    G = retry_invoke(scripted_invoke([ModelError(kind, "no"), "ok"]), sleep=t.sleep)
    failure = G([]).failure()
    assert (failure.kind, failure.attempts, t.waits) == (kind, 1, [])


@pytest.mark.parametrize("kind", [K.RATE_LIMIT, K.TIMEOUT, K.CONNECTION, K.SERVER, K.OVERLOADED])
def test_transient_errors_are_retried(kind: ModelErrorKind) -> None:
    t = FakeTime()
    G = retry_invoke(scripted_invoke([ModelError(kind, "x"), "ok"]), sleep=t.sleep)
    assert G([]).unwrap().content == "ok"
    assert len(t.waits) == 1


def test_last_error_records_attempts() -> None:
    t = FakeTime()
    G = retry_invoke(scripted_invoke([busy()] * 5), max_attempts=4, sleep=t.sleep)
    failure = G([]).failure()
    assert failure.attempts == 4 and len(t.waits) == 3


def test_nested_retries_count_every_attempt() -> None:
    t = FakeTime()
    inner = retry_invoke(scripted_invoke([busy()] * 10), max_attempts=2, sleep=t.sleep)
    outer = retry_invoke(inner, max_attempts=3, sleep=t.sleep)
    assert outer([]).failure().attempts == 6


def test_gives_up_when_the_next_wait_would_pass_max_elapsed() -> None:
    """A Retry-After longer than the time left ends the retries now, not after the wait."""
    t = FakeTime()
    G = retry_invoke(
        scripted_invoke([busy(5.0), busy(3600.0), "ok"]),
        max_elapsed=60,
        sleep=t.sleep,
        clock=t.clock,
    )
    failure = G([]).failure()
    assert (failure.attempts, failure.retry_after, t.waits) == (2, 3600.0, [5.0])


def test_billed_failures_are_added_to_the_reply_usage() -> None:
    """Attempts that were billed before failing still count toward the run's usage."""
    reply = Assistant("ok", usage=Usage(10, 5, 0.01))
    G = retry_invoke(scripted_invoke([busy(usage=Usage(7, 0, 0.002)), reply]), sleep=lambda _: None)
    usage = G([]).unwrap().usage
    assert usage == Usage(17, 5, 0.012, 2)


def test_billed_failures_are_added_to_the_final_error_usage() -> None:
    G = retry_invoke(
        scripted_invoke([busy(usage=Usage(7, 0, None)), busy(usage=Usage(3, 0, 0.5))]),
        max_attempts=2,
        sleep=lambda _: None,
    )
    usage = G([]).failure().usage
    assert usage == Usage(10, 0, 0.5, 2, 1)


def test_success_passes_through_untouched() -> None:
    reply = Assistant("ok", usage=Usage(1, 1, 0.0))
    assert retry_invoke(scripted_invoke([reply]))([]) == Success(reply)


def test_described_with_its_settings_and_the_wrapped_g() -> None:
    G = retry_invoke(scripted_invoke(["x"]), max_attempts=3)
    description = describe(G)
    assert isinstance(description, dict)
    assert description["max_attempts"] == 3
    assert "sleep" not in description and "clock" not in description
    assert isinstance(description["G"], dict)


def test_max_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        retry_invoke(scripted_invoke([]), max_attempts=0)


def test_records_copy_with_changes() -> None:
    """dataclasses.replace works on the @record value classes."""
    from dataclasses import replace

    error = ModelError(K.SERVER, "x", 500, 1.0, 2, Usage(1, 1, None))
    assert replace(error, attempts=5) == ModelError(K.SERVER, "x", 500, 1.0, 5, Usage(1, 1, None))
    with pytest.raises(TypeError):
        replace(error, nope=1)  # type: ignore[call-arg]
