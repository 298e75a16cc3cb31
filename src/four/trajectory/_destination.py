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
from typing import NamedTuple, Protocol, cast

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

    The copy keeps an index (``.remote.json``) of each file as last synced: its tag at
    the URL (from a pull; None from a push), its size, and the copy's size and change
    time then. A pull never overwrites a file the copy changed since (a batch's records
    not pushed yet, its driver lost: they go up with the next push).

    >>> Remote("s3://bucket/runs").url
    's3://bucket/runs'
    """

    def __init__(self, url: str, local: Path | None = None) -> None:
        self.url = url.rstrip("/")
        digest = hashlib.sha256(self.url.encode()).hexdigest()[:16]
        self.local = local if local is not None else cache_root() / digest
        self._fs: _FileSystem | None = None
        self._root = ""
        self._index: dict[str, _Synced] | None = None

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
        _ = self.fs  # (sets the root)
        return f"{self._root}/{relative}".rstrip("/")

    @property
    def index(self) -> dict[str, _Synced]:
        if self._index is None:
            try:
                data = json.loads((self.local / INDEX).read_text())
            except (OSError, ValueError):
                data = {}
            self._index = {
                k: _Synced(*v) for k, v in data.items() if isinstance(v, list) and len(v) == 3
            } if isinstance(data, dict) else {}  # fmt: skip
        return self._index

    def save(self) -> None:
        """Write the index (a pull does; a batch does now and then, and at its end)."""
        self.local.mkdir(parents=True, exist_ok=True)
        temporary = self.local / f"{INDEX}.tmp"
        temporary.write_text(json.dumps({k: list(v) for k, v in self.index.items()}))
        os.replace(temporary, self.local / INDEX)

    def push(self, relatives: Iterable[str] | None = None) -> list[str]:
        """Upload the copy's files that changed since they were last synced (those of
        ``relatives``, files or folders, when given); what went up. Files whose names
        start with a dot (being written) stay."""
        pushed = []
        for relative, size, stamp in self._changed(relatives):
            self.fs.put_file(str(self.local / relative), self._remote(relative))
            self.index[relative] = _Synced(None, size, stamp)
            pushed.append(relative)
        return pushed

    def pull(self, relatives: Iterable[str] | None = None) -> Path:
        """Download what changed at the URL since the last sync (under ``relatives``
        when given) into the copy; the copy's path."""
        self.local.mkdir(parents=True, exist_ok=True)
        for prefix in list(relatives) if relatives is not None else [""]:
            try:
                found = self.fs.find(self._remote(prefix), detail=True)
            except FileNotFoundError:
                continue
            for name, info in found.items():
                relative = name[len(self._root) :].lstrip("/")
                if not relative or info.get("type") == "directory":
                    continue
                if any(part.startswith(".") for part in relative.split("/")):
                    continue  # the index, a batch's lease: never records (none go up)
                size = info.get("size")
                tag = f"{info.get('ETag') or info.get('etag') or ''}:{size}"
                if self._current(relative, tag, size):
                    continue
                target = self.local / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                temporary = target.with_name(f".{target.name}.pull")
                self.fs.get_file(name, str(temporary))
                os.replace(temporary, target)  # a reader of the copy never sees half
                stat = target.stat()
                self.index[relative] = _Synced(tag, stat.st_size, stat.st_mtime_ns)
        self.save()
        return self.local

    def _current(self, relative: str, tag: str, size: object) -> bool:
        """Whether the copy's file needs no download: the same as at the URL, or
        changed here since the last sync (then it is newer: it goes up, not down)."""
        try:
            stat = (self.local / relative).stat()
        except OSError:
            return False
        synced = self.index.get(relative)
        if synced is None or (stat.st_size, stat.st_mtime_ns) != (synced.size, synced.stamp):
            # Changed here (or never synced): records only grow, so the longer one wins.
            return isinstance(size, int) and stat.st_size >= size
        return synced.tag == tag or (synced.tag is None and _same_size(synced.size, size))

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
                synced = self.index.get(relative)
                if synced is None or (synced.size, synced.stamp) != (
                    stat.st_size,
                    stat.st_mtime_ns,
                ):
                    changed.append((relative, stat.st_size, stat.st_mtime_ns))
        return changed


INDEX = ".remote.json"


class _Synced(NamedTuple):
    tag: str | None  # the file's tag at the URL when pulled (None: pushed from here)
    size: int
    stamp: int  # the copy's change time (ns) then


def _same_size(a: object, b: object) -> bool:
    return isinstance(a, int) and a == b
