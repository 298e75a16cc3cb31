"""Run records at an object store URL (``s3://bucket/prefix``, ``gs://...``): through fsspec.

A folder of runs at a URL is worked on through a local copy (``Remote.local``, under
the user's cache): a batch writes there as it would anywhere and ``push``es what
changed; the readers (``four audit``, ``stats``, ``watch``, ``fleet``) ``pull`` what
changed and read the copy. Each file goes up as one whole object (a PUT, or a
multipart upload completed at once), so a reader never sees half a file; a sealed
trajectory goes up byte for byte and its seal verifies there.

fsspec and the store's own package (``s3fs`` for ``s3://``: ``pip install
'four-loop[s3]'``) are imported only when a URL is used. Credentials and endpoints come
from the store's usual settings (for S3: ``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``...).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, cast

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def is_url(value: str | os.PathLike[str]) -> bool:
    """Whether a destination names an object store (``scheme://``) rather than a path.

    >>> is_url("s3://bucket/runs"), is_url("runs/today"), is_url("file:///tmp/x")
    (True, False, False)
    """
    text = os.fspath(value)
    return bool(_URL.match(text)) and not text.startswith("file://")


class _FileSystem(Protocol):
    """What is used of an fsspec file system."""

    def put_file(self, lpath: str, rpath: str) -> object: ...
    def get_file(self, rpath: str, lpath: str) -> object: ...
    def find(self, path: str, *, detail: bool) -> dict[str, dict[str, object]]: ...
    def makedirs(self, path: str, exist_ok: bool) -> object: ...


def cache_root() -> Path:
    """Where local copies of URLs live: ``$FOUR_CACHE/remote``, else ``~/.cache/four/remote``."""
    base = os.environ.get("FOUR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "four"
    )
    return Path(base) / "remote"


class Remote:
    """The folder at ``url`` and its local copy.

    >>> Remote("s3://bucket/runs").url
    's3://bucket/runs'
    """

    def __init__(self, url: str, local: Path | None = None) -> None:
        self.url = url.rstrip("/")
        digest = hashlib.sha256(self.url.encode()).hexdigest()[:16]
        self.local = local if local is not None else cache_root() / digest
        self._fs: _FileSystem | None = None
        self._root = ""
        self._pushed: dict[str, tuple[int, int]] = {}  # relative path -> (size, mtime_ns)

    @property
    def fs(self) -> _FileSystem:
        if self._fs is None:
            try:
                import fsspec
            except ModuleNotFoundError as exc:
                raise ImportError(f"{self.url}: needs fsspec: pip install 'four-loop[s3]'") from exc
            try:
                fs, root = fsspec.core.url_to_fs(self.url)
            except (ImportError, ValueError) as exc:  # no package for the scheme
                raise ImportError(f"{self.url}: {exc}") from exc
            self._fs, self._root = cast(_FileSystem, fs), str(root).rstrip("/")
        return self._fs

    def _remote(self, relative: str) -> str:
        fs = self.fs  # (sets the root)
        del fs
        return f"{self._root}/{relative}"

    def push(self, relatives: Iterable[str] | None = None) -> list[str]:
        """Upload the local copy's files that changed since they last went up (those of
        ``relatives``, files or folders, when given); what went up. Files whose names
        start with a dot (being written) stay."""
        pushed = []
        for relative, size, stamp in self._changed(relatives):
            local = self.local / relative
            self.fs.put_file(str(local), self._remote(relative))
            self._pushed[relative] = (size, stamp)
            pushed.append(relative)
        return pushed

    def pull(self, relatives: Iterable[str] | None = None) -> Path:
        """Download what changed at the URL since the last pull (under ``relatives``
        when given) into the local copy; the copy's path."""
        self.local.mkdir(parents=True, exist_ok=True)
        index_path = self.local / ".remote.json"
        try:
            index = json.loads(index_path.read_text())
            if not isinstance(index, dict):
                index = {}
        except (OSError, ValueError):
            index = {}
        prefixes = list(relatives) if relatives is not None else [""]
        for prefix in prefixes:
            try:
                found = self.fs.find(self._remote(prefix).rstrip("/"), detail=True)
            except FileNotFoundError:
                continue
            for name, info in found.items():
                relative = name[len(self._root) :].lstrip("/")
                if not relative or info.get("type") == "directory":
                    continue
                tag = str(info.get("ETag") or info.get("etag") or "") + f":{info.get('size')}"
                target = self.local / relative
                if index.get(relative) == tag and target.exists():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                temporary = target.with_name(f".{target.name}.pull")
                self.fs.get_file(name, str(temporary))
                os.replace(temporary, target)  # a reader of the copy never sees half
                index[relative] = tag
                stat = target.stat()
                self._pushed[relative] = (stat.st_size, stat.st_mtime_ns)  # (not sent back)
        temporary = index_path.with_name(".remote.json.tmp")
        temporary.write_text(json.dumps(index))
        os.replace(temporary, index_path)
        return self.local

    def _changed(self, relatives: Iterable[str] | None) -> list[tuple[str, int, int]]:
        roots = [self.local / r for r in relatives] if relatives is not None else [self.local]
        changed = []
        for root in roots:
            if root.is_file():
                files = [root]
            else:
                files = [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
            for path in files:
                relative = path.relative_to(self.local).as_posix()
                if any(part.startswith(".") for part in relative.split("/")):
                    continue
                try:
                    stat = path.stat()
                except OSError:
                    continue
                now = (stat.st_size, stat.st_mtime_ns)
                if self._pushed.get(relative) != now:
                    changed.append((relative, *now))
        return changed
