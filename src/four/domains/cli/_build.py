"""Compiling a tool's sources with machine-readable diagnostics: C with gcc, Rust with cargo.

A build is a pure function of the workspace's sources and the toolchain: it returns the
diagnostics (file, line, column, message, the source line) read from the compiler's
JSON, never from its prose, and whether a binary came out. Warnings fail the build
(``-Werror``; for cargo, any warning counts as a failure too).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

Language: TypeAlias = Literal["c", "rust"]
LANGUAGES: tuple[Language, ...] = ("c", "rust")

C_FLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fdiagnostics-format=json")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One compiler message, in the model's terms."""

    file: str
    line: int
    column: int
    kind: str  # error, warning, note
    message: str
    source: str = ""  # the source line it points at

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file or "build"
        shown = f"{where}: {self.kind}: {self.message}"
        return f"{shown}\n    {self.source.strip()}" if self.source.strip() else shown


@dataclass(frozen=True, slots=True)
class Build:
    """What one build gave: its diagnostics, the binary (None when none came out), and the
    command that ran."""

    command: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]
    binary: Path | None
    returncode: int

    @property
    def clean(self) -> bool:
        """A binary, and not one warning or error on the way."""
        return self.binary is not None and self.returncode == 0 and not self.diagnostics


def toolchain_problem(language: Language) -> str | None:
    """Why ``language`` cannot be built here (its compiler is missing), or None."""
    compiler = {"c": "gcc", "rust": "cargo"}[language]
    if shutil.which(compiler) is None:
        return f"the {language} toolchain is not installed here ({compiler} is not on PATH)"
    return None


def build(
    workspace: Path, language: Language, name: str, env: Mapping[str, str], timeout: float
) -> Build:
    """Compile the tool called ``name`` in ``workspace`` (C: every ``*.c`` there, into
    ``./name``; Rust: the Cargo project there, copied to ``./name``)."""
    if language == "c":
        sources = sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*.c"))
        if not sources:
            return Build((), (Diagnostic("", 0, 0, "error", "there is no .c file to build"),),
                         None, 1)  # fmt: skip
        command = ("gcc", *C_FLAGS, "-o", name, *sources)
        done = _run(command, workspace, env, timeout)
        if isinstance(done, str):
            return Build(command, (Diagnostic("", 0, 0, "error", done),), None, 1)
        found = gcc_diagnostics(done.stderr, workspace)
        made = workspace / name
        ok = done.returncode == 0 and made.is_file()
        return Build(command, found, made if ok else None, done.returncode)
    return _cargo(workspace, name, env, timeout)


def _cargo(workspace: Path, name: str, env: Mapping[str, str], timeout: float) -> Build:
    command = ("cargo", "build", "--offline", "--release", "--message-format=json")
    done = _run(command, workspace, env, timeout)
    if isinstance(done, str):
        return Build(command, (Diagnostic("", 0, 0, "error", done),), None, 1)
    found, artifact = cargo_diagnostics(done.stdout, workspace)
    if done.returncode != 0 and not found:
        text = done.stderr.decode("utf-8", "replace").strip()[-1000:]
        found = (Diagnostic("Cargo.toml", 0, 0, "error", text or "cargo failed"),)
    binary: Path | None = None
    if done.returncode == 0 and artifact is not None and artifact.is_file():
        binary = workspace / name
        shutil.copy2(artifact, binary)
    return Build(command, found, binary, done.returncode)


def _run(
    command: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[bytes] | str:
    try:
        return subprocess.run(
            list(command), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            capture_output=True, timeout=timeout, start_new_session=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"{command[0]} did not finish within {timeout:g} s"
    except OSError as exc:
        return f"{command[0]} could not run: {exc}"


def gcc_diagnostics(stderr: bytes, workspace: Path) -> tuple[Diagnostic, ...]:
    """gcc's JSON diagnostics (``-fdiagnostics-format=json``), each with its source line;
    lines that are not JSON (the linker's) become diagnostics of their own.

    >>> gcc_diagnostics(b'[{"kind": "error", "message": "bad", "locations": []}]', Path("."))
    (Diagnostic(file='', line=0, column=0, kind='error', message='bad', source=''),)
    """
    found: list[Diagnostic] = []
    for raw in stderr.decode("utf-8", "replace").splitlines():
        text = raw.strip()
        if not text:
            continue
        try:
            items = json.loads(text)
        except ValueError:
            found.append(Diagnostic("", 0, 0, "error", text))  # e.g. ld: undefined reference
            continue
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                found.append(_gcc_item(item, workspace))
    return tuple(found)


def _gcc_item(item: Mapping[str, object], workspace: Path) -> Diagnostic:
    kind = str(item.get("kind", "error"))
    option = item.get("option")
    if isinstance(option, str) and option.startswith("-Werror="):
        kind = f"warning turned error ({option.removeprefix('-Werror=')})"
    caret: Mapping[str, object] = {}
    locations = item.get("locations")
    if isinstance(locations, list) and locations and isinstance(locations[0], dict):
        found = locations[0].get("caret")
        caret = found if isinstance(found, dict) else {}
    file, line, column = (
        str(caret.get("file", "")),
        _int(caret.get("line")),
        _int(caret.get("column")),
    )
    return Diagnostic(file, line, column, kind, str(item.get("message", "")),
                      source_line(workspace, file, line))  # fmt: skip


def cargo_diagnostics(stdout: bytes, workspace: Path) -> tuple[tuple[Diagnostic, ...], Path | None]:
    """cargo's compiler messages (``--message-format=json``) and the built executable."""
    found: list[Diagnostic] = []
    artifact: Path | None = None
    for raw in stdout.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("reason") == "compiler-artifact" and record.get("executable"):
            artifact = Path(str(record["executable"]))
        message = record.get("message")
        if record.get("reason") != "compiler-message" or not isinstance(message, dict):
            continue
        level = str(message.get("level", "error"))
        if level not in ("error", "warning"):
            continue
        spans = [s for s in message.get("spans") or [] if isinstance(s, dict)]
        primary = next((s for s in spans if s.get("is_primary")), spans[0] if spans else {})
        file, line = str(primary.get("file_name", "")), _int(primary.get("line_start"))
        found.append(Diagnostic(file, line, _int(primary.get("column_start")), level,
                                str(message.get("message", "")),
                                source_line(workspace, file, line)))  # fmt: skip
    return tuple(found), artifact


def source_line(workspace: Path, file: str, line: int) -> str:
    """Line ``line`` of ``file`` (relative to the workspace), or "" when it is not there."""
    if not file or line < 1:
        return ""
    path = Path(file) if os.path.isabs(file) else workspace / file
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, 1):
                if number == line:
                    return text.rstrip("\n")
    except OSError:
        return ""
    return ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
