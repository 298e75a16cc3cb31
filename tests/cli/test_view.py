"""`four view`: one self-contained HTML page, checked as text and in a real headless Chromium."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from four.cli import main
from four.cli._steps import load_run
from tests.cli import _browser
from tests.cli._runs import cli

RECEIPTS = [
    {"step": 5, "verdict": "fail", "rank": 0, "detail": "<img src=x onerror=alert(1)>"},
    {"step": 6, "verdict": "pass", "rank": 1},
]


def with_verdicts(path: Path) -> Path:
    """The trajectory with a verified loop's record in its stats, as the lead's work stores it."""
    doc = json.loads(path.read_text())
    doc["stats"]["verdicts"] = {"receipts": json.dumps(RECEIPTS), "head": "abc123"}
    out = path.with_name("verified.json")
    out.write_text(json.dumps(doc))
    return out


def test_view_writes_one_self_contained_page(sample: Path, tmp_path: Path) -> None:
    page = tmp_path / "out" / "page.html"
    done = cli("view", str(with_verdicts(sample)), "-o", str(page))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(page)
    html = page.read_text()
    assert html.startswith("<!doctype html>")
    # nothing fetched: no external URLs in src/href, a CSP that forbids everything else
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "default-src 'none'" in html
    # untrusted text is escaped
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<b>x</b>" not in html
    assert html.count('<section class="step') == 6
    assert "exit:task_complete" in html and "$0.0070" in html
    assert 'class="grid receipts"' in html and "abc123" in html


def test_view_default_output_is_next_to_the_trajectory(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(sample)]) == 0
    target = sample.with_suffix(".html")
    assert capsys.readouterr().out.strip() == str(target)
    assert target.exists()


def test_view_cannot_write_is_a_usage_error(sample: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = cli("view", str(sample), "-o", str(blocker / "page.html"))
    assert done.returncode == 2 and "cannot write" in done.stderr


def _need_chromium() -> None:
    if _browser.available():
        return
    message = "chromium and chromedriver are not installed (tests/services.sh installs them)"
    if os.environ.get("FOUR_REQUIRE_SERVICES"):
        pytest.fail(message)
    pytest.skip(message)


def test_page_in_headless_chromium(
    sample: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _need_chromium()
    source = with_verdicts(sample)
    page = tmp_path / "page.html"
    assert main(["view", str(source), "-o", str(page)]) == 0
    run = load_run(source)
    failing = sum(1 for s in run.steps if s.failed or s.format_error)
    with _browser.chromium() as browser:
        browser.open(page.as_uri())
        facts = browser.script(
            "return {"
            " ready: document.body.getAttribute('data-ready'),"
            " steps: Array.from(document.querySelectorAll('section.step'))"
            "   .map(s => s.querySelector('header a').textContent),"
            " visible: Array.from(document.querySelectorAll('section.step'))"
            "   .filter(s => s.getBoundingClientRect().height > 0).length,"
            " scripts: document.scripts.length,"
            " fetched: performance.getEntriesByType('resource').length,"
            " outcome: document.getElementById('outcome').textContent,"
            " receipts: document.querySelectorAll('table.receipts tr').length,"
            " images: document.images.length"
            "}"
        )
        browser.click("#failing")
        shown = browser.script(
            "return Array.from(document.querySelectorAll('section.step'))"
            ".filter(s => s.getBoundingClientRect().height > 0).length"
        )
        browser.click("#failing")
        browser.click("#collapse")
        shot = browser.screenshot(tmp_path / "four-view.png")
        console = browser.console()
    with capsys.disabled():
        print(f"\nscreenshot of four view: {shot}")
    assert console == [], console
    assert isinstance(facts, dict)
    assert facts["ready"] == str(len(run.steps))
    assert facts["steps"] == [f"Step {n}" for n in range(1, len(run.steps) + 1)]
    assert facts["visible"] == len(run.steps)
    assert facts["scripts"] == 1 and facts["images"] == 0 and facts["fetched"] == 0
    assert facts["outcome"] == "exit:task_complete"
    assert facts["receipts"] == 1 + len(RECEIPTS)
    assert shown == failing == 2
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
