"""Run records at a URL, pulled into a local copy for the commands that read them."""

from __future__ import annotations

from pathlib import Path

from four.cli._errors import UsageError
from four.trajectory._destination import Remote, is_url


def local_paths(paths: list[str]) -> list[str]:
    """``paths`` with each URL replaced by its pulled local copy (a folder's, or for a
    URL of one file, that file in its folder's copy).

    >>> local_paths(["runs", "other/x.json"])
    ['runs', 'other/x.json']
    """
    return [str(_pull(p)) if is_url(p) else p for p in paths]


def reachable(url: str) -> None:
    """A ``UsageError`` when ``url``'s store cannot be used here (its package is missing,
    the URL is malformed).

    >>> reachable("memory://bucket/evals")  # fsspec's own in-memory store: nothing to install
    """
    try:
        _ = Remote(url).fs
    except ImportError as exc:
        raise UsageError(str(exc)) from None


def _pull(url: str) -> Path:
    try:
        found = Remote(url).pull()
        if any(p.is_file() for p in found.rglob("*") if not p.name.startswith(".")):
            return found
        # Nothing under it as a folder: a URL of one file, pulled into its folder's copy.
        parent, _, name = url.rstrip("/").rpartition("/")
        if name and is_url(parent):
            copy = Remote(parent).pull([name]) / name
            if copy.is_file():
                return copy
        raise UsageError(f"{url}: nothing there")
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{url}: cannot read: {exc}".splitlines()[0]) from None
