"""A real headless Chromium, driven through ChromeDriver's W3C WebDriver HTTP API.

Only the standard library: ChromeDriver listens on 127.0.0.1 and speaks JSON over
HTTP. Debian's ``chromium`` and ``chromium-driver`` packages provide both programs.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeAlias, cast

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"

CHROMIUM = os.environ.get("FOUR_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("FOUR_CHROMEDRIVER", shutil.which("chromedriver") or "")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--window-size=1200,1600",
)


def available() -> bool:
    """Both programs are installed."""
    return bool(CHROMEDRIVER) and os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Browser:
    """One WebDriver session."""

    def __init__(self, base: str, session: str) -> None:
        self._base = f"{base}/session/{session}"

    def call(self, method: str, path: str, body: JSON = None) -> JSON:
        return _request(method, self._base + path, body)

    def open(self, url: str) -> None:
        self.call("POST", "/url", {"url": url})

    def script(self, source: str) -> JSON:
        """Run ``source`` (a function body; ``return`` gives the value) in the page."""
        return self.call("POST", "/execute/sync", {"script": source, "args": []})

    def console(self) -> list[dict[str, JSON]]:
        """The browser's console entries since the last call (level, message)."""
        entries = self.call("POST", "/se/log", {"type": "browser"})
        return [e for e in cast(list[JSON], entries) if isinstance(e, dict)]

    def screenshot(self, path: Path) -> Path:
        data = self.call("GET", "/screenshot")
        path.write_bytes(base64.b64decode(str(data)))
        return path

    def click(self, css: str) -> None:
        found = self.call("POST", "/element", {"using": "css selector", "value": css})
        element = next(iter(cast(dict[str, JSON], found).values()))
        self.call("POST", f"/element/{element}/click", {})


def _request(method: str, url: str, body: JSON = None) -> JSON:
    data = None if method == "GET" else json.dumps(body if body is not None else {}).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"webdriver {method} {url}: {exc.read().decode()[:500]}") from None
    return cast(dict[str, JSON], answer).get("value")


@contextmanager
def chromium() -> Iterator[Browser]:
    """Start ChromeDriver and a headless Chromium with a fresh profile; stop both after."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="four-chromium-") as profile:
        driver = subprocess.Popen(
            [CHROMEDRIVER, f"--port={port}", "--allowed-ips=127.0.0.1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        session = ""
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    _request("GET", f"{base}/status")
                    break
                except (OSError, RuntimeError):
                    if time.monotonic() > deadline or driver.poll() is not None:
                        raise RuntimeError("chromedriver did not start") from None
                    time.sleep(0.05)
            options: dict[str, JSON] = {
                "binary": CHROMIUM,
                "args": [*FLAGS, f"--user-data-dir={profile}"],
            }
            capabilities: dict[str, JSON] = {
                "browserName": "chrome",
                "goog:chromeOptions": options,
                "goog:loggingPrefs": {"browser": "ALL"},
            }
            created = _request(
                "POST", f"{base}/session", {"capabilities": {"alwaysMatch": capabilities}}
            )
            session = str(cast(dict[str, JSON], created)["sessionId"])
            yield Browser(base, session)
        finally:
            if session:
                with suppress(OSError, RuntimeError):
                    _request("DELETE", f"{base}/session/{session}")
            driver.terminate()
            try:
                driver.wait(10)
            except subprocess.TimeoutExpired:
                driver.kill()
                driver.wait()
