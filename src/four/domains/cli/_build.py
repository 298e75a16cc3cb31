"""Compiling a tool's sources with machine-readable diagnostics: C with gcc, Go with the
go command, Rust with cargo.

A build is a pure function of the workspace's sources and the toolchain: it returns the
diagnostics (file, line, column, message, the source line) and whether a binary came out.
They are read from the compiler's JSON where it has one (gcc, cargo, ``go vet -json``),
else from its one-line ``file:line:column: message`` form (``go build``). Warnings fail
the build: ``-Werror`` for gcc; for cargo any warning, for Go any ``go vet`` finding.

The compilers, and all they run (cgo's gcc, a ``build.rs``, a linker a configuration
names), are tools of the run's environment (``four.execute``'s ``ToolHost``): in the
sandbox they see the workspace, the system and the toolchain, nothing else. Every file
name reaches a compiler as ``./name``, never as an option (``-B.c`` would be one). A
diagnostic never shows the content of a file outside the workspace: one placed in such a
file (not a system header) is withheld, and a source line is only ever read from the
workspace, never through a symlink.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, TypeAlias

from four.execute import Refused, ToolHost, ToolRun, Workspace

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


def build(host: ToolHost, language: Language, name: str, timeout: float) -> Build:
    """Compile the tool called ``name`` in ``host``'s workspace (C: every ``*.c`` there,
    into ``./name``; Go: the main package of the module there; Rust: the Cargo project
    there, copied to ``./name``), each compiler run in ``host`` within ``timeout``
    seconds. Diagnostics outside the workspace are withheld (see the module docstring).
    """
    workspace = Path(host.workspace)
    env = host.environment(toolchain_env(host, language))
    if language == "c":
        made = _gcc(host, workspace, name, env, timeout)
    elif language == "go":
        made = _go(host, workspace, name, env, timeout)
    else:
        made = _cargo(host, workspace, name, env, timeout)
    return replace(made, diagnostics=confine(made.diagnostics, workspace))


def _gcc(
    host: ToolHost, workspace: Path, name: str, env: Mapping[str, str], timeout: float
) -> Build:
    files = Workspace(workspace).files((".c",))
    sources = [f"./{path}" for path in files]  # never an option: ./-B.c, ./@x.c
    if not sources:
        return Build((), (Diagnostic("", 0, 0, "error", "there is no .c file to build"),),
                     None, 1)  # fmt: skip
    command = ("gcc", *C_FLAGS, "-o", f"./{name}", *sources)
    done = _run(host, command, env, timeout)
    if isinstance(done, str):
        return Build(command, (Diagnostic("", 0, 0, "error", done),), None, 1)
    found = gcc_diagnostics(done.stderr, workspace)
    binary = _regular(workspace, name)
    ok = done.returncode == 0 and binary is not None
    return Build(command, found, binary if ok else None, done.returncode or 0)


def _go(
    host: ToolHost, workspace: Path, name: str, env: Mapping[str, str], timeout: float
) -> Build:
    """``go build``, then ``go vet -json`` on what built: a vet finding fails the build
    (Go's compiler has no warnings; vet is its -Werror) and takes the binary away."""
    if _regular(workspace, "go.mod") is None:
        why = "there is no go.mod: write one (a `module NAME` line, then a `go 1.N` line)"
        return Build((), (Diagnostic("go.mod", 0, 0, "error", why),), None, 1)
    command = ("go", "build", "-o", f"./{name}", ".")
    done = _run(host, command, env, timeout)
    if isinstance(done, str):
        return Build(command, (Diagnostic("", 0, 0, "error", done),), None, 1)
    found = go_diagnostics(done.stderr, workspace)
    made = _regular(workspace, name)
    if done.returncode != 0 or made is None:
        return Build(command, found or (Diagnostic("", 0, 0, "error", "go build failed"),),
                     None, done.returncode or 1)  # fmt: skip
    vet = ("go", "vet", "-json", ".")
    checked = _run(host, vet, env, timeout)
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


def toolchain_env(host: ToolHost, language: Language) -> dict[str, str]:
    """The variables a build of ``language`` needs in ``host`` besides its environment:
    for Go, local and offline (``GOPROXY=off``, ``GOSUMDB=off``, ``GOTOOLCHAIN=local``)
    with a build cache and GOPATH of the run's own (in the host's shared folder: one
    run's builds cannot leave a poisoned object for another's), the user's module cache
    read where it is (vendored or cached modules build offline, never from the network);
    for Rust, a ``CARGO_HOME`` of the run's own and the user's rustup toolchains.

    >>> import tempfile
    >>> from four.execute import tool_host
    >>> with tool_host("local", tempfile.mkdtemp()) as host:
    ...     toolchain_env(host, "go")["GOPROXY"]
    'off'
    """
    own = Path(host.folder)
    if language == "go":
        offline = {"GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local", "GOWORK": "off"}
        found = {"GOCACHE": str(own / "go-cache"), "GOPATH": str(own / "go"),
                 "GOTELEMETRY": "off", "GOFLAGS": "", **offline}  # fmt: skip
        modules = _go_modules()
        if modules is not None and host.kind != "docker":
            found["GOMODCACHE"] = modules
        return found
    if language == "rust":
        found = {"CARGO_HOME": str(own / "cargo")}
        rustup = _rustup_home()
        if rustup is not None and host.kind != "docker":
            found["RUSTUP_HOME"] = rustup
        return found
    return {}


def toolchain_folders(language: Language) -> list[str]:
    """Host folders a sandbox must show (read-only) for ``language``'s toolchain to run
    there, besides the system folders: the Go module cache, rustup's toolchains and the
    folder of the ``cargo`` found on PATH."""
    found: list[str] = []
    if language == "go":
        modules = _go_modules()
        found += [modules] if modules is not None else []
        goroot = os.environ.get("GOROOT")
        found += [goroot] if goroot and os.path.isdir(goroot) else []
    if language == "rust":
        rustup = _rustup_home()
        found += [rustup] if rustup is not None else []
        cargo = shutil.which("cargo")
        if cargo is not None:
            found.append(os.path.dirname(os.path.abspath(cargo)))
            found.append(os.path.dirname(os.path.realpath(cargo)))
    return list(dict.fromkeys(found))


def _go_modules() -> str | None:
    """The user's Go module cache, if there is one (read-only to builds)."""
    given = os.environ.get("GOMODCACHE")
    if not given:
        gopath = os.environ.get("GOPATH") or os.path.join(os.path.expanduser("~"), "go")
        given = os.path.join(gopath.split(os.pathsep)[0], "pkg", "mod")
    return given if os.path.isdir(given) else None


def _rustup_home() -> str | None:
    home = os.environ.get("RUSTUP_HOME") or os.path.join(os.path.expanduser("~"), ".rustup")
    return home if os.path.isdir(home) else None


def _cargo(
    host: ToolHost, workspace: Path, name: str, env: Mapping[str, str], timeout: float
) -> Build:
    command = ("cargo", "build", "--offline", "--release", "--message-format=json")
    done = _run(host, command, env, timeout)
    if isinstance(done, str):
        return Build(command, (Diagnostic("", 0, 0, "error", done),), None, 1)
    found, artifact = cargo_diagnostics(done.stdout, workspace)
    if done.returncode != 0 and not found:
        text = done.stderr.decode("utf-8", "replace").strip()[-1000:]
        found = (Diagnostic("Cargo.toml", 0, 0, "error", text or "cargo failed"),)
    binary: Path | None = None
    if done.returncode == 0 and artifact is not None:
        binary = _take(host, workspace, artifact, name, env)
    return Build(command, found, binary, done.returncode or 0)


def _take(
    host: ToolHost, workspace: Path, artifact: Path, name: str, env: Mapping[str, str]
) -> Path | None:
    """Copy cargo's executable to ``./name`` where the build ran (never here: the path
    comes from the build's output, and a symlink there could lead anywhere), and only
    from inside the workspace."""
    try:
        inside = artifact.relative_to(workspace).as_posix()
    except ValueError:
        return None
    done = host.run(["cp", "-P", "--", f"./{inside}", f"./{name}"], env=env, timeout=60)
    return _regular(workspace, name) if done.returncode == 0 else None


def _regular(workspace: Path, name: str) -> Path | None:
    """``workspace/name`` when it is a regular file there (not a symlink, FIFO...)."""
    path = workspace / name
    try:
        return path if Path(path).lstat().st_mode & 0o170000 == 0o100000 else None
    except OSError:
        return None


def _run(
    host: ToolHost, command: Sequence[str], env: Mapping[str, str], timeout: float
) -> ToolRun | str:
    try:
        done = host.run(list(command), env=env, timeout=timeout)
    except OSError as exc:
        return f"{command[0]} could not run: {exc}"
    if done.stopped:
        return f"{command[0]} was stopped: the run is being stopped"
    if done.timed_out or done.returncode is None:
        return f"{command[0]} did not finish within {timeout:g} s"
    return done


SYSTEM_SOURCES = ("/usr/",)
"""Where a diagnostic may point outside the workspace and still be shown: the system's
headers and the toolchain's own sources."""


def confine(found: Sequence[Diagnostic], workspace: Path) -> tuple[Diagnostic, ...]:
    """``found`` with every diagnostic placed in a file outside ``workspace`` (links
    resolved) and outside ``SYSTEM_SOURCES`` withheld: its message and source line may
    hold that file's content (``#include "/etc/passwd"`` makes gcc name its words).

    >>> d = Diagnostic("/etc/passwd", 1, 5, "error", "unknown type name 'root'")
    >>> confine([d], Path("/w"))[0].message
    'a problem in a file outside the workspace (not shown)'
    """
    root = workspace.resolve()
    kept = []
    for diagnostic in found:
        if diagnostic.file and not _shown(diagnostic.file, workspace, root):
            diagnostic = Diagnostic(diagnostic.file, diagnostic.line, diagnostic.column,
                                    diagnostic.kind, WITHHELD)  # fmt: skip
        kept.append(diagnostic)
    return tuple(kept)


WITHHELD = "a problem in a file outside the workspace (not shown)"


def _shown(file: str, workspace: Path, root: Path) -> bool:
    path = Path(os.path.normpath(file if os.path.isabs(file) else workspace / file))
    if path.is_relative_to(workspace) or path.is_relative_to(root):
        real = path.resolve()
        return real.is_relative_to(root) or str(real).startswith(SYSTEM_SOURCES)
    return str(path).startswith(SYSTEM_SOURCES) and str(path.resolve()).startswith(SYSTEM_SOURCES)


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
        str(caret.get("file", "")).removeprefix("./"),
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
    """Line ``line`` of ``file`` (relative to the workspace), or "" when it is not there:
    read only from a regular file inside the workspace, never through a symlink (an
    absolute path is read only when it names a file there).

    >>> source_line(Path("/tmp"), "/etc/passwd", 1)
    ''
    """
    if not file or line < 1:
        return ""
    relative = file
    if os.path.isabs(file):
        try:
            relative = Path(file).relative_to(workspace).as_posix()
        except ValueError:
            return ""
    try:
        data = Workspace(workspace).read_bytes(relative)
    except (Refused, ValueError):
        return ""
    if data is None:
        return ""
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[line - 1] if line <= len(lines) else ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
