"""V2 for a command-line tool: edits written, the tool compiled, then run sandboxed.

The binary is the model's code, so it never runs outside the sandbox (``sandbox_env``,
bubblewrap: the workspace the only writable place, no network, its own PIDs): its
``--help`` and ``--version``, help2man (which runs it), the user's smoke commands and
the model's own shell commands all run there. The compiler runs on the host, like any
checker, with a clean environment (for Go: offline, its caches kept where Go keeps them).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from returns.result import Failure, Result, Success

from four.domains.cli._build import LANGUAGES, Build, Language, build, toolchain_problem
from four.execute import DEFAULT_INHERIT, SandboxEnv, Workspace, command_env, sandbox_env
from four.parse import EditAction, FileEdit, apply_edits, describe_edit
from four.types import Action, ExecutionError, Observation, Submitted

_SHOWN = 20  # diagnostics listed at most in one observation
# Where the user's Go keeps its caches and modules (a vendored or cached module builds
# offline); GOOS and the like are not passed: the binary must run here.
_GO_INHERIT = ("GOCACHE", "GOPATH", "GOMODCACHE", "GOFLAGS", "GOROOT")

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
    last: Checked | None = field(init=False, default=None)
    _files: Workspace = field(init=False, repr=False)
    _sandbox: SandboxEnv = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._files = Workspace(self.workspace)
        self.workspace = self._files.root
        self._sandbox = sandbox_env(self.timeout, workdir=str(self.workspace))

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        if isinstance(action, EditAction):
            return Success(self.edit(action.edits))
        return self._sandbox(action)

    def sandboxed(self, command: str) -> Result[Observation, Submitted | ExecutionError]:
        """Run ``command`` in the tool's sandbox (its working directory: the workspace)."""
        return self._sandbox(Action(command))

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
        inherit = (*DEFAULT_INHERIT, *_GO_INHERIT) if self.language == "go" else DEFAULT_INHERIT
        made = build(self.workspace, self.language, name, command_env(inherit), self.build_timeout)
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
        made = self.sandboxed(f"help2man --no-info --no-discard-stderr -o {page} ./{name}")
        target = self.workspace / page
        if isinstance(made, Failure) or made.unwrap().returncode != 0 or not target.is_file():
            why = _output(made.unwrap().content) if isinstance(made, Success) else str(made)
            return None, f"help2man could not make the page: {why.strip()[:300]}"
        _dated(target)
        return target, _lint(target)

    def artifacts(self) -> dict[str, Path]:
        """The tool as it stands: binary, man page and sources, by their place in a
        release folder (``bin/``, ``man/man1/``, ``src/``)."""
        found: dict[str, Path] = {}
        name = self.tool
        binary = self.workspace / name
        if self.last is not None and self.last.build.clean and binary.is_file():
            found[f"bin/{name}"] = binary
        if self.last is not None and self.last.man_page is not None:
            found[f"man/man1/{name}.1"] = self.last.man_page
        for path, _ in sorted(self._files.snapshot(SOURCES[self.language]).items()):
            found[f"src/{path}"] = self.workspace / path
        return found

    def close(self) -> None:
        self._sandbox.close()

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


def _dated(page: Path) -> None:
    """The page's ``.TH`` date as ``YYYY-MM-DD``: help2man writes "December 2026", which
    mandoc cannot read as a date (SOURCE_DATE_EPOCH, if set, gives the day)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    day = time.gmtime(int(epoch) if epoch.isdigit() else None)
    text = page.read_text("utf-8", "replace")
    dated = _TH_DATE.sub(lambda m: f'{m.group(1)}"{time.strftime("%Y-%m-%d", day)}"', text, 1)
    page.write_text(dated, "utf-8")


_TH_DATE = re.compile(r'^(\.TH\s+(?:"[^"]*"|\S+)\s+(?:"[^"]*"|\S+)\s+)"[^"]*"', re.MULTILINE)


def _lint(page: Path) -> str | None:
    """mandoc's warnings and errors for ``page`` (None when clean), or groff's when there
    is no mandoc."""
    if shutil.which("mandoc") is not None:
        command = ["mandoc", "-T", "lint", "-W", "warning", str(page)]
    else:
        command = ["groff", "-man", "-ww", "-z", str(page)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the man page could not be linted: {exc}"
    text = (done.stdout + done.stderr).strip().replace(str(page.parent) + "/", "")
    return text or (None if done.returncode == 0 else f"lint exited {done.returncode}")


def tool_name(workspace: Path, language: Language) -> str:
    """The name a tool's binary gets from its sources (see ``ToolEnv.tool``)."""
    if language == "rust":
        found = _MANIFEST_NAME.search(_text(workspace / "Cargo.toml"))
        return found.group(1) if found else "tool"
    if language == "go":  # as go build names it: example.com/sum -> sum
        module = _MODULE.search(_text(workspace / "go.mod"))
        last = module.group(1).rstrip("/").rsplit("/", 1)[-1] if module else ""
        return last if re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*", last) else "tool"
    sources = sorted(workspace.glob("*.c"))
    with_main = [p for p in sources if _MAIN.search(_text(p))]
    chosen = with_main[0] if with_main else sources[0] if len(sources) == 1 else None
    return chosen.stem if chosen is not None else "tool"


_MAIN = re.compile(r"\bmain\s*\(")
_MANIFEST_NAME = re.compile(r'^\s*name\s*=\s*"([A-Za-z0-9_-]+)"', re.MULTILINE)
_MODULE = re.compile(r'^\s*module\s+"?([^\s"]+)"?', re.MULTILINE)


def _text(path: Path) -> str:
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return ""


def build_env(
    workspace: str | Path,
    name: str | None = None,
    *,
    language: Language = "c",
    smoke: Sequence[str] = (),
    timeout: float = 60.0,
    build_timeout: float = 300.0,
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
    Shell commands of the model run in the same sandbox. Raises ``ValueError`` for a
    language whose toolchain is missing here.

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
    return ToolEnv(Path(workspace), name, language, tuple(smoke), timeout, build_timeout)
