"""A real OTLP receiver with a query API: Arize Phoenix, installed by services.sh under the
user's cache folder, started once for these tests on 127.0.0.1 (free ports, its own
folder, no telemetry, no external resources). Absent, the tests skip with a reason; with
FOUR_REQUIRE_SERVICES=1 (CI) they fail.

``Receiver.spans(trace_id, n)`` reads a trace back from Phoenix's REST API in the OTLP
JSON shape (``/v1/projects/default/spans/otlpv1``), waiting for its ``n`` spans: Phoenix
takes a request at once and stores its spans a moment later.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
PHOENIX = CACHE / "four" / "phoenix" / "bin" / "phoenix"
STARTUP = 600.0  # seconds: its first start migrates its database; slow on a loaded machine


def wait_until(ready: Callable[[], bool], timeout: float, every: float = 0.1) -> None:
    """Ask ``ready`` every ``every`` seconds until it says yes or ``timeout`` seconds
    pass (a bound on a wait for a server, not a measure of speed)."""
    deadline = time.monotonic() + timeout
    while not ready() and time.monotonic() < deadline:
        time.sleep(every)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def nowhere() -> str:
    """The URL of a port on 127.0.0.1 that nothing listens on (a receiver that is down)."""
    return f"http://127.0.0.1:{_free_port()}"


JSONSpan = dict[str, object]


@dataclass(frozen=True)
class Receiver:
    url: str  # where OTLP/HTTP goes: url + /v1/traces

    def spans(
        self,
        trace_id: str | None,
        count: int,
        project: str = "default",
        timeout: float = 120.0,
        roots: bool = False,
    ) -> list[JSONSpan]:
        """The trace's spans (every span of ``project`` for None; ``roots``: the spans
        without a parent only) once there are ``count`` (or what there is after
        ``timeout`` seconds: the test's assertion then says what is missing). Phoenix
        stores some hundred spans a second on a loaded machine: a project's whole is
        asked for every 2 seconds, not to slow it further."""
        found: list[JSONSpan] = []

        def enough() -> bool:
            found[:] = self._read(trace_id, project, roots)
            return len(found) >= count

        wait_until(enough, timeout, 0.1 if trace_id else 2.0)
        return found

    def _read(self, trace_id: str | None, project: str, roots: bool = False) -> list[JSONSpan]:
        spans: list[JSONSpan] = []
        cursor = ""
        while True:
            query = "limit=1000" + (f"&trace_id={trace_id}" if trace_id else "")
            query += "&parent_id=null" if roots else ""
            query += f"&cursor={cursor}" if cursor else ""
            url = f"{self.url}/v1/projects/{project}/spans/otlpv1?{query}"
            try:
                with urllib.request.urlopen(url, timeout=30) as answer:
                    page = json.load(answer)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:  # no span yet: the project is made with the first
                    return []
                raise
            spans.extend(page["data"])
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return spans


def in_project(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Spans sent from now on go to Phoenix's project ``name`` (a resource attribute)."""
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={name}")


@pytest.fixture(autouse=True)
def no_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    """The receiver takes traces only: no metrics sent (tests/otel/test_metrics.py reads
    them from the SDK's own reader)."""
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    if not PHOENIX.is_file():
        reason = f"no OTLP receiver: {PHOENIX} missing (bash tests/otel/services.sh)"
        if os.environ.get("FOUR_REQUIRE_SERVICES") == "1":
            pytest.fail(f"FOUR_REQUIRE_SERVICES=1 but {reason}")
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = (folder / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if process.poll() is not None:
            return True
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=5) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    try:
        wait_until(up, STARTUP)
        if process.poll() is not None or not up():
            tail = (folder / "phoenix.log").read_text(errors="replace")[-2000:]
            pytest.fail(f"Phoenix did not start on {url}:\n{tail}")
        yield Receiver(url)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def attributes(span: JSONSpan) -> dict[str, object]:
    """A span's attributes as plain values (Phoenix's own ``llm.*``/``openinference.*``
    and the like left out: the ones four sent)."""
    return _values(span.get("attributes"))


def _values(items: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items if isinstance(items, list) else []:
        value = item["value"]
        out[item["key"]] = _value(value)
    return {
        k: v for k, v in out.items() if k.startswith(("gen_ai.", "four.", "error.", "process."))
    }


def _value(value: dict[str, object]) -> object:
    for key, found in value.items():
        if found is None:
            continue
        if key == "array_value" and isinstance(found, dict):
            return tuple(_value(v) for v in found.get("values") or [])
        return found
    return None


def events(span: JSONSpan) -> list[tuple[str, dict[str, object]]]:
    """A span's events: name and attributes."""
    found = span.get("events")
    return (
        [(e["name"], _values(e.get("attributes"))) for e in found if isinstance(e, dict)]
        if isinstance(found, list)
        else []
    )


def status(span: JSONSpan) -> tuple[object, object]:
    """A span's status: its code (0 unset, 1 OK, 2 error) and message."""
    found = span.get("status")
    return (found.get("code"), found.get("message")) if isinstance(found, dict) else (None, None)
