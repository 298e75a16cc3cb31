"""The loopback test server itself, and the network guard of these tests."""

from __future__ import annotations

import httpx
import pytest

from four import ModelErrorKind, User
from four.invoke import litellm_invoke
from tests._server import Answer, LoopbackServer, Request, chat, serve


def test_script_then_default_then_exhausted() -> None:
    with serve(chat("one")) as server, httpx.Client() as client:
        first = client.post(f"{server.url}/chat/completions", json={"a": 1})
        assert first.json()["choices"][0]["message"]["content"] == "one"
        empty = client.post(f"{server.url}/chat/completions", json={})
        assert empty.status_code == 500
        server.default = lambda request: Answer({"echo": request.json()})
        echoed = client.post(f"{server.url}/responses", json={"b": 2})
        assert echoed.json() == {"echo": {"b": 2}}
        missing = client.post(f"{server.url}/nope", json={})
        assert missing.status_code == 404
    assert [r.path for r in server.requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/nope",
    ]
    assert server.bodies("/v1/responses") == [{"b": 2}]


def test_raw_bytes_headers_and_status() -> None:
    def teapot(_: Request) -> Answer:
        return Answer(b"not json", 418, {"X-Test": "yes"})

    with LoopbackServer(default=teapot) as server:
        response = httpx.post(f"{server.url}/chat/completions", json={})
    assert (response.status_code, response.content, response.headers["x-test"]) == (
        418,
        b"not json",
        "yes",
    )


def test_delay_is_served_late() -> None:
    with serve(Answer({"ok": True}, delay=0.05)) as server:
        response = httpx.post(f"{server.url}/chat/completions", json={})
    assert response.elapsed.total_seconds() >= 0.05


def test_the_guard_refuses_non_loopback_hosts() -> None:
    """No test can reach the network: a non-loopback address fails at once."""
    for base in ("http://10.255.255.1:9/v1", "http://api.openai.invalid/v1"):
        failure = litellm_invoke("openai/m", api_base=base, api_key="x", timeout=2)(
            [User("q")]
        ).failure()
        assert failure.kind is ModelErrorKind.CONNECTION
    with pytest.raises(httpx.ConnectError):
        httpx.get("http://192.0.2.1/")
