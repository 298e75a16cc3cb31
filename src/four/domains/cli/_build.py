"""Compiling a tool's sources with machine-readable diagnostics: C with gcc, Go with the
go command, Rust with cargo.

A build is a pure function of the workspace's sources and the toolchain: it returns the
diagnostics (file, line, column, message, the source line) and whether a binary came out.
They are read from the compiler's JSON where it has one (gcc, cargo, ``go vet -json``),
else from its one-line ``file:line:column: message`` form (``go build``). Warnings fail
the build: ``-Werror`` for gcc; for cargo any warning, for Go any ``go vet`` finding.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

Language: TypeAlias = Literal["c", "go", "rust"]
LANGUAGES: tuple[Language, ...] = ("c", "go", "rust")
COMPILERS: Mapping[Language, str] = {"c": "gcc", "go": "go", "rust": "cargo"}

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
        column = f":{self.column}" if self.column else ""
        where = f"{self.file}:{self.line}{column}" if self.line else self.file or "build"
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
    compiler = COMPILERS[language]
    if shutil.which(compiler) is None:
        return f"the {language} toolchain is not installed here ({compiler} is not on PATH)"
    return None


def build(
    workspace: Path, language: Language, name: str, env: Mapping[str, str], timeout: float
) -> Build:
    """Compile the tool called ``name`` in ``workspace`` (C: every ``*.c`` there, into
    ``./name``; Go: the main package of the module there; Rust: the Cargo project there,
    copied to ``./name``)."""
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
    if language == "go":
        return _go(workspace, name, {**env, **go_env(env)}, timeout)
    return _cargo(workspace, name, env, timeout)


def _go(workspace: Path, name: str, env: Mapping[str, str], timeout: float) -> Build:
    """``go build``, then ``go vet -json`` on what built: a vet finding fails the build
    (Go's compiler has no warnings; vet is its -Werror) and takes the binary away."""
    if not (workspace / "go.mod").is_file():
        why = "there is no go.mod: write one (a `module NAME` line, then a `go 1.N` line)"
        return Build((), (Diagnostic("go.mod", 0, 0, "error", why),), None, 1)
    made = workspace / name
    command = ("go", "build", "-o", name, ".")
    done = _run(command, workspace, env, timeout)
    if isinstance(done, str):
        return Build(command, (Diagnostic("", 0, 0, "error", done),), None, 1)
    found = go_diagnostics(done.stderr, workspace)
    if done.returncode != 0 or not made.is_file():
        return Build(command, found or (Diagnostic("", 0, 0, "error", "go build failed"),),
                     None, done.returncode or 1)  # fmt: skip
    vet = ("go", "vet", "-json", ".")
    checked = _run(vet, workspace, env, timeout)
    if isinstance(checked, str):
        found = (Diagnostic("", 0, 0, "error", checked),)
    else:
        found = vet_diagnostics(checked.stderr, workspace)
        if checked.returncode != 0 and not found:
            found = (Diagnostic("", 0, 0, "error", "go vet failed"),)
    if not found:
        return Build(command, (), made, 0)
    made.unlink(missing_ok=True)  # as under -Werror: no binary from a build with warnings
    return Build(vet, found, None, 1)


def go_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables that make a Go build local and offline: no module proxy, no
    checksum database, no toolchain download (``GOPROXY=off``, ``GOSUMDB=off``,
    ``GOTOOLCHAIN=local``), and a writable build cache and GOPATH (``env``'s own, else
    under its ``HOME``, else in the temporary folder). Modules come from ``vendor/`` or
    from the module cache, never from the network.

    >>> go_env({"GOCACHE": "/c", "GOPATH": "/p"})["GOPROXY"], go_env({"GOCACHE": "/c"})["GOCACHE"]
    ('off', '/c')
    """
    home = env.get("HOME", "")
    usable = bool(home) and os.path.isdir(home) and os.access(home, os.W_OK)
    spare = Path(tempfile.gettempdir()) / f"four-go-{os.getuid()}"
    cache = env.get("GOCACHE") or (
        os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "go-build")
        if usable
        else str(spare / "cache")
    )
    gopath = env.get("GOPATH") or (os.path.join(home, "go") if usable else str(spare / "path"))
    offline = {"GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local", "GOWORK": "off"}
    return {"GOCACHE": cache, "GOPATH": gopath, "GOTELEMETRY": "off", **offline}


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


_GO_LINE = re.compile(r"^(?:vet: )?([^\s:][^:]*):(\d+)(?::(\d+))?: (.+)$")


def go_diagnostics(stderr: bytes, workspace: Path) -> tuple[Diagnostic, ...]:
    r"""The go command's messages, ``file:line:column: message`` a line (``./`` dropped;
    an indented line continues the one before), each with its source line; other lines
    (``go: ...``) are diagnostics without a place, and ``# package`` headers are skipped.

    >>> go_diagnostics(b"# sum\n./main.go:7:2: x declared but not used\n", Path("."))[0].line
    7
    """
    found: list[Diagnostic] = []
    for raw in stderr.decode("utf-8", "replace").splitlines():
        text = raw.rstrip()
        if not text.strip() or text.startswith("#"):
            continue
        if raw[:1].isspace() and found:  # e.g. "\thave (int)" after a type error
            last = found[-1]
            joined = f"{last.message}{' ' if last.message.endswith(':') else '; '}{text.strip()}"
            found[-1] = Diagnostic(last.file, last.line, last.column, last.kind, joined,
                                   last.source)  # fmt: skip
            continue
        place = _GO_LINE.match(text)
        if place is None:
            kind = "note" if text.startswith("note: ") else "error"
            found.append(Diagnostic("", 0, 0, kind, text.removeprefix("note: ")))
            continue
        file = _relative(place.group(1), workspace)
        line = int(place.group(2))
        found.append(Diagnostic(file, line, int(place.group(3) or 0), "error", place.group(4),
                                source_line(workspace, file, line)))  # fmt: skip
    return tuple(found)


def vet_diagnostics(stderr: bytes, workspace: Path) -> tuple[Diagnostic, ...]:
    r"""``go vet -json``'s findings (``{package: {analyzer: [{posn, message}]}}``), each a
    warning named by its analyzer and given its source line; the lines between the JSON
    objects (a package that does not type-check) are read as ``go_diagnostics``.

    >>> vet_diagnostics(b'# sum\n{"sum": {"printf": [{"posn": "a.go:6:2", "message": "bad"}]}}',
    ...                 Path("."))[0].kind
    'warning (go vet: printf)'
    """
    text = stderr.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    found: list[Diagnostic] = []
    rest: list[str] = []
    at = 0
    while at < len(text):
        if text[at] == "{":
            try:
                record, at = decoder.raw_decode(text, at)
            except ValueError:
                pass
            else:
                found.extend(_vet_record(record, workspace))
                continue
        end = text.find("\n", at)
        end = len(text) if end < 0 else end + 1
        rest.append(text[at:end])
        at = end
    return (*found, *go_diagnostics("".join(rest).encode(), workspace))


def _vet_record(record: object, workspace: Path) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for analyzers in record.values() if isinstance(record, dict) else ():
        for analyzer, items in analyzers.items() if isinstance(analyzers, dict) else ():
            if isinstance(items, dict):  # {"error": "..."}: the analyzer itself failed
                found.append(
                    Diagnostic("", 0, 0, "error", f"go vet {analyzer}: {items.get('error')}")
                )
                continue
            for item in items if isinstance(items, list) else ():
                if not isinstance(item, dict):
                    continue
                file, line, column = _position(str(item.get("posn", "")), workspace)
                found.append(Diagnostic(file, line, column, f"warning (go vet: {analyzer})",
                                        str(item.get("message", "")),
                                        source_line(workspace, file, line)))  # fmt: skip
    return found


def _position(posn: str, workspace: Path) -> tuple[str, int, int]:
    """``file:line:column`` (the file perhaps absolute) as the workspace's relative path."""
    file, _, place = posn.partition(".go:")
    line, _, column = place.partition(":")
    if not place:
        return _relative(posn, workspace), 0, 0
    return _relative(file + ".go", workspace), _digits(line), _digits(column)


def _relative(file: str, workspace: Path) -> str:
    if os.path.isabs(file):
        with_root = Path(file)
        for root in (workspace, workspace.resolve()):
            if with_root.is_relative_to(root):
                return with_root.relative_to(root).as_posix()
        return file
    return file.removeprefix("./")


def _digits(text: str) -> int:
    return int(text) if text.isdigit() else 0


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
