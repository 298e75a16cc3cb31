"""V2 for a command-line tool: edits written, the tool compiled, then run sandboxed.

Everything the tool's sources can make run runs in the run's environment (a
``four.execute`` ``ToolHost``: bubblewrap by default, the workspace the only writable
place, no network, its own PIDs; or the run's container): the compiler and what it runs
(cgo, ``build.rs``), the binary's ``--help`` and ``--version``, help2man (which runs it),
mandoc, the user's smoke commands and the model's own shell commands. Files the build
made are read here only from inside the workspace, never through a symlink.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from returns.result import Failure, Result, Success

from four.domains.cli._build import (
    LANGUAGES,
    Build,
    Language,
    build,
    toolchain_folders,
    toolchain_problem,
)
from four.execute import Refused, ToolHost, Workspace, tool_host
from four.parse import EditAction, FileEdit, apply_edits, describe_edit
from four.types import Action, ExecutionError, Observation, Submitted

_SHOWN = 20  # diagnostics listed at most in one observation

SOURCES: dict[Language, tuple[str, ...]] = {
    "c": (".c", ".h"),
    "go": (".go", "go.mod", "go.sum"),
    "rust": (".rs", ".toml", ".lock"),
}
"""The files of a tool's sources, by language (kept in ``src/``, and at a run's start)."""


@dataclass(frozen=True, slots=True)
class Probe:
    """One command run on the built binary in the sandbox: its exit status and output."""

    command: str
    returncode: int | None
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and bool(self.output.strip())


@dataclass(frozen=True, slots=True)
class Checked:
    """A build and what was found of the binary it made (nothing when it failed)."""

    build: Build
    probes: tuple[Probe, ...] = ()
    man_page: Path | None = None
    lint: str | None = None  # mandoc's complaints; None when the page lints clean

    @property
    def problem(self) -> str | None:
        """What keeps this tool from being done, first thing first; None when nothing."""
        if not self.build.clean:
            first = self.build.diagnostics[0] if self.build.diagnostics else None
            return f"the build failed: {first}" if first else "the build made no binary"
        for probe in self.probes:
            if not probe.ok:
                return f"`{probe.command}` exited {probe.returncode} with " + (
                    "no output on stdout" if not probe.output.strip() else "output on stdout"
                )
        if self.man_page is None:
            return "no man page could be made from --help and --version"
        if self.lint is not None:
            return f"the man page does not lint: {self.lint.splitlines()[0]}"
        return None


@dataclass(eq=False)
class ToolEnv:
    """V2 for a command-line tool; see ``build_env``. Holds a sandbox: close it."""

    workspace: Path
    name: str | None = None
    language: Language = "c"
    smoke: tuple[str, ...] = ()
    timeout: float = 60.0
    build_timeout: float = 300.0
    host: ToolHost | None = field(default=None, repr=False)
    """Where the builds, the binary and the commands run (None: a sandbox made for this
    environment and closed with it)."""
    last: Checked | None = field(init=False, default=None)
    _files: Workspace = field(init=False, repr=False)
    _own_host: bool = field(init=False, default=False, repr=False)

    def __post_init__(self) -> None:
        self._files = Workspace(self.workspace)
        self.workspace = self._files.root
        if self.host is None:
            self.host = tool_host(
                "sandbox",
                self.workspace,
                timeout=self.timeout,
                readable=toolchain_folders(self.language),
            )
            self._own_host = True

    @property
    def place(self) -> ToolHost:
        assert self.host is not None
        return self.host

    def owns_host(self) -> ToolEnv:
        """Make ``close()`` end the host too (a domain hands its host over); returns self."""
        self._own_host = True
        return self

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        if isinstance(action, EditAction):
            return Success(self.edit(action.edits))
        return self.place(action)

    def sandboxed(self, command: str) -> Result[Observation, Submitted | ExecutionError]:
        """Run ``command`` where the tool runs (the sandbox, or the run's container; its
        working directory: the workspace)."""
        return self.place(Action(command))

    def edit(self, edits: Sequence[FileEdit]) -> Observation:
        """Write ``edits`` (all or none), then build and try the tool; say what came of it."""
        refused = [r for e in edits if (r := self._files.refusal(e.path)) is not None]
        if refused:
            return Observation("Edit refused; no file was changed.\n" + "\n".join(refused), 1)
        old = {e.path: self._files.read(e.path) for e in edits}
        applied = apply_edits(edits, old.get)
        if isinstance(applied, Failure):
            return Observation(f"Format error: {applied.failure().feedback}", 1)
        written = self._files.write(applied.unwrap())
        if isinstance(written, Failure):
            return Observation(f"Edit failed: {written.failure()}", 1)
        summary = "Applied: " + "; ".join(describe_edit(e) for e in edits) + "."
        checked = self.check()
        return Observation(f"{summary}\n{report(checked, self.tool)}",
                           0 if checked.problem is None else 1)  # fmt: skip

    @property
    def tool(self) -> str:
        """The binary's name: ``name``, else the stem of the C file that defines
        ``main`` (or of the only C file), the last part of the Go module's path, or the
        Cargo package's name; else ``tool``."""
        return self.name or tool_name(self.workspace, self.language)

    def check(self) -> Checked:
        """Build the sources as they are now and, if a binary came out, try it."""
        name = self.tool
        made = build(self.place, self.language, name, self.build_timeout)
        checked = Checked(made)
        if made.clean:
            probes = tuple(self._probe(f"./{name} {flag}") for flag in ("--help", "--version"))
            page, lint = self._man_page(name) if all(p.ok for p in probes) else (None, None)
            smoke = tuple(self._probe(command) for command in self.smoke)
            checked = Checked(made, probes + smoke, page, lint)
        self.last = checked
        return checked

    def _probe(self, command: str) -> Probe:
        done = self.sandboxed(f"{command} 2>/dev/null")
        if isinstance(done, Failure):
            return Probe(command, None, str(done.failure()))
        seen = done.unwrap()
        return Probe(command, seen.returncode, _output(seen.content))

    def _man_page(self, name: str) -> tuple[Path | None, str | None]:
        """help2man's page (it runs the binary: in the sandbox), and mandoc's lint of it."""
        page = f"{name}.1"
        made = self.sandboxed(f"help2man --no-info --no-discard-stderr -o ./{page} ./{name}")
        target = self.workspace / page
        failed = isinstance(made, Failure) or made.unwrap().returncode != 0
        if failed or not _dated(self._files, page):
            why = _output(made.unwrap().content) if isinstance(made, Success) else str(made)
            return None, f"help2man could not make the page: {why.strip()[:300]}"
        return target, self._lint(page)

    def _lint(self, page: str) -> str | None:
        """mandoc's warnings and errors for ``page`` (None when clean), or groff's when
        there is no mandoc, run where the tool runs (a page may ask to read a file:
        ``.so``)."""
        command = (
            f"mandoc -T lint -W warning ./{page}"
            if shutil.which("mandoc") is not None or self.place.kind == "docker"
            else f"groff -man -ww -z ./{page}"
        )
        done = self.sandboxed(f"{command} 2>&1")
        if isinstance(done, Failure):
            return f"the man page could not be linted: {done.failure()}"
        seen = done.unwrap()
        text = _output(seen.content).strip().replace("./", "").replace(f"{self.workspace}/", "")
        return text or (None if seen.returncode == 0 else f"lint exited {seen.returncode}")

    def artifacts(self) -> dict[str, Path]:
        """The tool as it stands: binary, man page and sources, by their place in a
        release folder (``bin/``, ``man/man1/``, ``src/``)."""
        found: dict[str, Path] = {}
        name = self.tool
        binary = self.workspace / name
        if self.last is not None and self.last.build.clean and _regular(binary):
            found[f"bin/{name}"] = binary
        page = self.last.man_page if self.last is not None else None
        if page is not None and _regular(page):
            found[f"man/man1/{name}.1"] = page
        for path, _ in sorted(self._files.snapshot(SOURCES[self.language]).items()):
            found[f"src/{path}"] = self.workspace / path
        return found

    def close(self) -> None:
        if self._own_host and self.host is not None:
            self.host.close()

    def __enter__(self) -> ToolEnv:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def report(checked: Checked, name: str) -> str:
    """What the model is told of a build and of its binary."""
    made = checked.build
    if not made.clean:
        shown = "\n".join(str(d) for d in made.diagnostics[:_SHOWN])
        more = len(made.diagnostics) - _SHOWN
        tail = f"\n... and {more} more" if more > 0 else ""
        head = f"Build failed ({' '.join(made.command)}): {len(made.diagnostics)} problem(s)."
        return f"{head}\n{shown}{tail}\nWarnings fail the build: fix every one."
    lines = [f"Build OK: ./{name}."]
    for probe in checked.probes:
        state = "ok" if probe.ok else f"exit {probe.returncode}"
        first = probe.output.strip().splitlines()[:3]
        lines.append(f"`{probe.command}` ({state}): " + (" | ".join(first) or "(no output)"))
    if checked.probes[:2] and not all(p.ok for p in checked.probes[:2]):
        lines.append(
            "The man page is made from --help and --version: both must print to stdout and exit 0."
        )
    elif checked.lint is not None:
        lines.append(f"Man page {name}.1: {checked.lint}")
    elif checked.man_page is not None:
        lines.append(f"Man page {name}.1 made from --help and --version; it lints clean.")
    return "\n".join(lines)


def _output(content: str) -> str:
    """The command's output in an observation's text (after its ``<output>`` line)."""
    head, marker, rest = content.partition("<output>\n")
    text = rest if marker else head
    return text.removesuffix("</output>").rstrip("\n")


def _dated(files: Workspace, page: str) -> bool:
    """Give the page's ``.TH`` date as ``YYYY-MM-DD`` (help2man writes "December 2026",
    which mandoc cannot read as a date; SOURCE_DATE_EPOCH, if set, gives the day).
    False when there is no page, or it is not a regular file of the workspace."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    day = time.gmtime(int(epoch) if epoch.isdigit() else None)
    try:
        text = files.read(page)
    except Refused:
        return False
    if text is None:
        return False
    dated = _TH_DATE.sub(lambda m: f'{m.group(1)}"{time.strftime("%Y-%m-%d", day)}"', text, 1)
    return not isinstance(files.write({page: dated}), Failure)


_TH_DATE = re.compile(r'^(\.TH\s+(?:"[^"]*"|\S+)\s+(?:"[^"]*"|\S+)\s+)"[^"]*"', re.MULTILINE)


def _regular(path: Path) -> bool:
    """A regular file, not a symlink (a build may leave one leading anywhere)."""
    try:
        return path.lstat().st_mode & 0o170000 == 0o100000
    except OSError:
        return False


def tool_name(workspace: Path, language: Language) -> str:
    """The name a tool's binary gets from its sources (see ``ToolEnv.tool``)."""
    if language == "rust":
        found = _MANIFEST_NAME.search(_text(workspace / "Cargo.toml"))
        return found.group(1) if found else "tool"
    if language == "go":  # as go build names it: example.com/sum -> sum
        module = _MODULE.search(_text(workspace / "go.mod"))
        last = module.group(1).rstrip("/").rsplit("/", 1)[-1] if module else ""
        return last if re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*", last) else "tool"
    sources = sorted(p for p in workspace.glob("*.c") if _regular(p))
    with_main = [p for p in sources if _MAIN.search(_text(p))]
    chosen = with_main[0] if with_main else sources[0] if len(sources) == 1 else None
    return chosen.stem if chosen is not None else "tool"


_MAIN = re.compile(r"\bmain\s*\(")
_MANIFEST_NAME = re.compile(r'^\s*name\s*=\s*"([A-Za-z0-9_-]+)"', re.MULTILINE)
_MODULE = re.compile(r'^\s*module\s+"?([^\s"]+)"?', re.MULTILINE)


def _text(path: Path) -> str:
    """The text of a regular file of the workspace ("" for anything else: a symlink, a
    FIFO, which is never opened)."""
    try:
        data = Workspace(path.parent).read_bytes(path.name)
    except (Refused, ValueError):
        return ""
    return "" if data is None else data.decode("utf-8", "replace")


def build_env(
    workspace: str | Path,
    name: str | None = None,
    *,
    language: Language = "c",
    smoke: Sequence[str] = (),
    timeout: float = 60.0,
    build_timeout: float = 300.0,
    host: ToolHost | None = None,
) -> ToolEnv:
    """V2 for a command-line tool in ``workspace``, its binary called ``name`` (by default
    the stem of the C source that defines ``main``, the last part of the Go module's
    path, or the Cargo package's name).

    A turn's file edits (``edit_parse``: sources headed by their path, SEARCH/REPLACE
    blocks) are written all or none, then the tool is built with machine-readable
    diagnostics (C: ``gcc -Wall -Wextra -Werror -fdiagnostics-format=json``; Go: ``go
    build``, then ``go vet -json``, whose findings fail the build like warnings under
    -Werror, offline: ``GOPROXY=off``, ``GOTOOLCHAIN=local``; Rust: ``cargo build
    --offline --message-format=json``), and the model is shown each diagnostic with its
    file, line and source line. A clean build is then tried in the
    sandbox: ``./name --help`` and ``--version`` (stdout, exit 0), a man page made by
    help2man and linted by mandoc, and each ``smoke`` command, each under ``timeout``.
    Shell commands of the model run in the same sandbox, and so do the compilers and
    all they run (``build.rs``, cgo): ``host`` is that place (a ``four.execute``
    ``ToolHost``: the run's container, say; by default a sandbox made for this
    environment). Raises ``ValueError`` for a language whose toolchain is missing here.

    >>> import tempfile
    >>> with build_env(tempfile.mkdtemp(), "sum") as env:
    ...     env.tool
    'sum'
    """
    if language not in LANGUAGES:
        raise ValueError(
            f"build_env: language must be one of {', '.join(LANGUAGES)}, not {language!r}"
        )
    problem = toolchain_problem(language)
    if problem is not None:
        raise ValueError(f"build_env: {problem}")
    if name is not None and (not name or "/" in name or name.startswith("-")):
        raise ValueError(f"build_env: name must be a plain file name, not {name!r}")
    return ToolEnv(Path(workspace), name, language, tuple(smoke), timeout, build_timeout, host)
