"""Error classification: by exception type and status over real HTTP, and Retry-After parsing."""

from __future__ import annotations

import pytest

from four import ModelErrorKind, User
from four.invoke import litellm_invoke
from four.invoke._errors import (
    classify_litellm,
    headers_of,
    kind_of_status,
    kind_of_transport,
    retry_after,
)
from tests._server import LoopbackServer, error

K = ModelErrorKind


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, K.BAD_REQUEST),
        (401, K.AUTHENTICATION),
        (403, K.PERMISSION),  # litellm raises a generic APIError here: the status decides
        (404, K.NOT_FOUND),
        (422, K.BAD_REQUEST),
        (429, K.RATE_LIMIT),
        (500, K.SERVER),
        (502, K.SERVER),
        (503, K.OVERLOADED),
        (529, K.OVERLOADED),  # Anthropic's "overloaded"; also a generic APIError
    ],
)
def test_http_status_over_litellm(
    server: LoopbackServer, status: int, kind: ModelErrorKind
) -> None:
    """Each status reaches us as the right kind, with the status kept."""
    server.push(error(status, "no"))
    failure = litellm_invoke("openai/m", api_base=server.url, api_key="x")([User("q")]).failure()
    assert (failure.kind, failure.status) == (kind, status)
    assert failure.kind.transient == (status in (429, 500, 502, 503, 529))
    assert "no" in failure.message


def test_retry_after_ms_header_is_read(server: LoopbackServer) -> None:
    """OpenAI's retry-after-ms wins over retry-after."""
    server.push(error(429, "later", headers={"retry-after-ms": "1500", "retry-after": "9"}))
    failure = litellm_invoke("openai/m", api_base=server.url, api_key="x")([User("q")]).failure()
    assert failure.retry_after == 1.5


def test_no_retry_after_header_gives_none(server: LoopbackServer) -> None:
    server.push(error(429, "later"))
    failure = litellm_invoke("openai/m", api_base=server.url, api_key="x")([User("q")]).failure()
    assert failure.retry_after is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, 40.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:27:00 GMT"}, 0.0),  # in the past
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-1"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after-ms": "250"}, 0.25),
        ({}, None),
    ],
)
def test_retry_after_forms(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after(headers, now=lambda: 1445412470.0) == expected


def test_status_table() -> None:
    assert kind_of_status(None) is None
    assert kind_of_status(200) is None
    assert kind_of_status(408) is K.TIMEOUT
    assert kind_of_status(413) is K.CONTEXT_WINDOW
    assert kind_of_status(418) is K.BAD_REQUEST
    assert kind_of_status(504) is K.SERVER


def test_transport_errors_are_found_in_the_cause_chain() -> None:
    """A wrapper whose cause is a network error counts as that network error."""
    try:
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert kind_of_transport(outer) is K.CONNECTION
    assert kind_of_transport(TimeoutError()) is K.TIMEOUT
    assert kind_of_transport(ValueError()) is None


def test_unreadable_headers_are_no_headers() -> None:
    class Odd(Exception):
        @property
        def response(self) -> object:
            raise RuntimeError("no response attached")

    assert headers_of(Odd()) == {}
    assert headers_of(ValueError()) == {}


def test_non_litellm_exception_is_other_unless_it_is_network() -> None:
    assert classify_litellm(ValueError("bad argument")).kind is K.OTHER
    assert classify_litellm(TimeoutError()).kind is K.TIMEOUT
