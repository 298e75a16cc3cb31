"""The manual (docs/, MkDocs) builds with warnings as errors, and the README stays short."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_is_short_and_points_to_the_manual() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 200
    for page in ("install", "loop", "cli", "seal"):
        assert f"(docs/{page}.md)" in text and (ROOT / "docs" / f"{page}.md").is_file()


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    """Every page of docs/ (a broken link, a missing page, an API name that does not
    resolve: each fails the build), and every page is in the site without a nav entry."""
    if shutil.which("mkdocs", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("mkdocs is not installed (the dev extra has it)")
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    built = {p.parent.name for p in site.glob("*/index.html")} | {"index"}
    assert pages <= built
    api = (site / "api" / "index.html").read_text()
    assert "max_format_errors" in api and "Finished" in api  # from the docstrings


def test_every_docstring_example_runs() -> None:
    """The examples in four's docstrings (the API pages show them) give what they say;
    the Ray driver's need a cluster (tests/batch/test_ray* run it)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "--doctest-modules", str(ROOT / "src" / "four"),
         "--ignore", str(ROOT / "src" / "four" / "batch" / "_ray.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:]
