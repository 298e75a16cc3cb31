"""Shared test settings: Hypothesis profiles (CI is derandomised and slow-tolerant), a
loopback model server fixture, and a guard that fails any connection off 127.0.0.0/8."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests._server import LoopbackServer

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=200,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# The tests that press Ctrl-C on a command they start need it to hear it: a suite started
# in the background (`&`, nohup) inherits SIGINT ignored, and so would every child it
# starts. A handler, unlike SIG_IGN, is reset to the default at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A running loopback OpenAI-compatible server; its script starts empty."""
    with LoopbackServer() as running:
        yield running


def _loopback(host: object) -> bool:
    if host in ("localhost", None):
        return True
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any connection or name lookup that would leave the machine."""
    connect = socket.socket.connect
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: object) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(host):
            raise ConnectionRefusedError(f"test network guard: {address!r} is not loopback")
        connect(self, address)  # type: ignore[arg-type]

    def guarded_getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if not _loopback(host):
            raise socket.gaierror(f"test network guard: no lookups of {host!r}")
        return getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)


@pytest.fixture(autouse=True)
def state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """`four run` without -o saves under $XDG_STATE_HOME: a test's own, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
