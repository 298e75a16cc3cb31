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


def test_view_writes_one_self_contained_page(sample: Path, tmp_path: Path) -> None:
    page = tmp_path / "out" / "page.html"
    page.parent.mkdir()
    done = cli("view", str(sample), "-o", str(page))
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
    assert "<b>x</b>" not in html
    assert html.count('<section class="step') == 6
    assert "exit:task_complete" in html and "$0.0070" in html
    assert "Verdicts and receipts" not in html


def test_view_shows_verdicts_receipts_and_their_audit(
    verified: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "verified.html"
    assert main(["view", str(verified), "-o", str(page)]) == 0
    html = page.read_text()
    assert "audit: valid" in html and "2 evaluations" in html
    assert html.count("<tr><td>") >= 4  # 2 log rows, 2 receipt rows
    assert ">NO<" in html and ">YES<" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    doc = json.loads(verified.read_text())
    doc["stats"]["verdicts"]["receipts"]["receipts"][0]["payload"] = "no:3"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(doc))
    assert main(["view", str(tampered), "-o", str(page)]) == 0
    assert "audit: invalid" in page.read_text()


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
    message = "chromium and chromedriver are not installed (tests/cli/services.sh installs them)"
    if os.environ.get("FOUR_REQUIRE_SERVICES"):
        pytest.fail(message)
    pytest.skip(message)


def test_page_in_headless_chromium(
    sample: Path, verified: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _need_chromium()
    page, verified_page = tmp_path / "page.html", tmp_path / "verified.html"
    assert main(["view", str(sample), "-o", str(page)]) == 0
    assert main(["view", str(verified), "-o", str(verified_page)]) == 0
    run = load_run(sample)
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
            " images: document.images.length"
            "}"
        )
        browser.click("#failing")
        shown = browser.script(
            "return Array.from(document.querySelectorAll('section.step'))"
            ".filter(s => s.getBoundingClientRect().height > 0).length"
        )
        browser.click("#failing")
        shot = browser.screenshot(tmp_path / "four-view.png")
        console = browser.console()
        browser.open(verified_page.as_uri())
        audit = browser.script(
            "return [document.getElementById('audit').textContent,"
            " document.querySelectorAll('table.receipts tr').length,"
            " document.querySelectorAll('section.step').length, document.images.length]"
        )
        verified_shot = browser.screenshot(tmp_path / "four-view-verified.png")
        console += browser.console()
    with capsys.disabled():
        print(f"\nscreenshots of four view: {shot} {verified_shot}")
    assert console == [], console
    assert isinstance(facts, dict)
    assert facts["ready"] == str(len(run.steps))
    assert facts["steps"] == [f"Step {n}" for n in range(1, len(run.steps) + 1)]
    assert facts["visible"] == len(run.steps)
    assert facts["scripts"] == 1 and facts["images"] == 0 and facts["fetched"] == 0
    assert facts["outcome"] == "exit:task_complete"
    assert audit == ["audit: valid", 3, 3, 0]
    assert shown == failing == 2
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_view_reads_mini_swe_agent_trajectories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.traj.json"
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "```mswea_bash_command\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsetup.py\n</output>"},
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
    ]
    info = {"exit_status": "Submitted", "submission": "diff --git a/x b/x"}
    path.write_text(
        json.dumps({"trajectory_format": "mini-swe-agent-1.1", "info": info, "messages": messages})
    )
    assert main(["view", str(path)]) == 0
    page = tmp_path / "x.html"
    assert capsys.readouterr().out.strip() == str(page)
    html = page.read_text()
    assert 'class="badge ok" id="outcome">Submitted<' in html
    assert "$ ls" in html and "diff --git a/x b/x" in html and "mini-swe-agent-1.1" in html


def test_view_streams_the_page_it_would_render_from_the_run_held_whole(
    verified: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page is written a step at a time; what it says is the page of the run read whole,
    byte for byte (control characters, a carriage return in an output, the verdicts)."""
    from returns.result import Success

    from four import Action, Assistant, Observation, run, save_trajectory
    from four.cli._view import render_page

    outputs = iter(["a\rb\r\nc", "\x1b[2Jcleared", "<!--figure 1-->"])
    path = run(
        lambda history: Success(Assistant("```bash\necho\n```")),
        lambda reply: Success([Action("echo")]),
        lambda action: Success(Observation(next(outputs, "done"), 0)),
        save_trajectory(tmp_path / "runs"),
        "system",
        "task",
        max_steps=4,
    )
    for source in (path, verified):
        page = tmp_path / f"{source.stem}.html"
        assert main(["view", str(source), "-o", str(page)]) == 0
        assert page.read_bytes() == render_page(load_run(source)).encode()
