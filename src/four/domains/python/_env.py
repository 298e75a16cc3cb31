"""V2 for Python code: file edits applied in a workspace, then judged by ruff and mypy."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from returns.result import Failure, Result, Success

from four.domains.python._daemon import Dmypy
from four.domains.python._diagnostics import (
    Diagnostic,
    in_context,
    introduced,
    mypy_diagnostics,
    ruff_diagnostics,
)
from four.execute import Refused, ToolHost, Workspace, tool_host
from four.parse import EditAction, FileEdit, apply_edits, describe_edit
from four.types import Action, ExecutionError, Observation, Submitted

_SHOWN_IN_CONTEXT = 8  # new diagnostics shown with their function; the rest in one line
_SHOWN = 30  # diagnostics listed at most in one observation


@dataclass(eq=False)
class PythonEnv:
    """V2 for Python code; see ``python_env``. Holds a mypy daemon: close it (``run`` does)."""

    workspace: Path
    mypy_flags: tuple[str, ...] | None = ("--strict",)
    ruff: bool = True
    reject_new_errors: bool = False
    timeout: float = 120.0
    check_timeout: float = 120.0
    python: str | None = None
    host: ToolHost | None = field(default=None, repr=False)
    """Where the commands and the checkers run (None: here, each in a PID namespace of its
    own, made for this environment and closed with it)."""
    _files: Workspace = field(init=False, repr=False)
    _daemon: Dmypy | None = field(init=False, repr=False, default=None)
    _start: dict[str, bytes] = field(init=False, repr=False)
    _known: dict[str, tuple[str, tuple[Diagnostic, ...]]] = field(init=False, repr=False)
    _env: dict[str, str] = field(init=False, repr=False)
    _own_host: bool = field(init=False, repr=False, default=False)

    def __post_init__(self) -> None:
        self._files = Workspace(self.workspace)
        self.workspace = self._files.root
        if self.host is None:
            self.host = tool_host("local", self.workspace, timeout=self.timeout)
            self._own_host = True
        if self.python is not None:
            self.host.python = self.python
        self.python = self.host.python
        # The checkers run the workspace's configuration and plugins: no secrets. And no
        # module of the workspace in their place: `python -m ruff` would find a ruff/ of
        # the workspace first (a checker that says nothing), unless the path is safe.
        self._env = self.host.environment({"PYTHONSAFEPATH": "1"})
        self._start = self._files.snapshot((".py",))
        self._known = {}
        if self.mypy_flags is not None:
            self._daemon = Dmypy(
                self.workspace,
                self.mypy_flags,
                host=self.host,
                env=self._env,
                timeout=self.check_timeout,
            )

    def owns_host(self) -> PythonEnv:
        """Make ``close()`` end the host too (a domain hands its host over); returns self."""
        self._own_host = True
        return self

    # --- V2 -------------------------------------------------------------------------

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        if isinstance(action, EditAction):
            return Success(self.edit(action.edits))
        assert self.host is not None
        return self.host(action)

    def edit(self, edits: Sequence[FileEdit]) -> Observation:
        """Apply ``edits`` (all or none) and say what the checkers think of the result."""
        refused = [r for e in edits if (r := self._files.refusal(e.path)) is not None]
        if refused:
            return _observation("Edit refused; no file was changed.\n" + "\n".join(refused), 1)
        try:
            old = {e.path: self._files.read(e.path) for e in edits}
        except Refused as exc:
            return _observation(f"Edit refused; no file was changed.\n{exc}", 1)
        applied = apply_edits(edits, old.get)
        if isinstance(applied, Failure):
            return _observation(f"Format error: {applied.failure().feedback}", 1)
        new = applied.unwrap()
        summary = "Applied: " + "; ".join(describe_edit(e) for e in edits) + "."
        checked = [p for p in new if p.endswith(".py")]
        before = self._baseline([p for p in checked if old.get(p) is not None])
        written = self._files.write(new)
        if isinstance(written, Failure):
            return _observation(f"Edit failed: {written.failure()}", 1)
        after = self.diagnostics(checked)
        if isinstance(after, Failure) or isinstance(before, Failure):
            problem = after.failure() if isinstance(after, Failure) else before.failure()
            return _observation(f"{summary}\nThe checks could not run: {problem}", 1)
        found = after.unwrap()
        old_texts = {p: text or "" for p, text in old.items()}
        fresh, kept, fixed = introduced(before.unwrap(), found, old_texts, new)
        if fresh and self.reject_new_errors:
            self._files.restore(written.unwrap())
            for path in checked:
                self._known.pop(path, None)
            head = (
                f"Edit rejected: it adds {_count(len(fresh), 'problem')}, so no file was "
                "changed. Here is what the checkers found in the edited code:"
            )
            return _observation(f"{head}\n\n{_listing(fresh, [], [], new)}", 1)
        for path in checked:
            mine = tuple(d for d in found if d.file == path)
            self._known[path] = (_digest(new[path].encode("utf-8")), mine)
        checks = self._tools()
        if not checked:
            return _observation(summary, 0)
        report = _listing(fresh, kept, fixed, new)
        head = f"Checked {', '.join(checked)} with {checks}: " + _counts(fresh, kept, fixed)
        return _observation(
            f"{summary}\n{head}" + (f"\n\n{report}" if report else ""), int(bool(fresh))
        )

    # --- checks ---------------------------------------------------------------------

    def diagnostics(self, files: Sequence[str]) -> Result[list[Diagnostic], str]:
        """What ruff and mypy report on ``files`` (paths relative to the workspace)."""
        files = [f for f in files if (self.workspace / f).is_file()]
        found: list[Diagnostic] = []
        if not files:
            return Success(found)
        if self.ruff:
            linted = self._ruff(files)
            if isinstance(linted, Failure):
                return linted
            found += linted.unwrap()
        if self._daemon is not None:
            typed = self._daemon.check(files)
            if isinstance(typed, Failure):
                return typed
            found += mypy_diagnostics(typed.unwrap(), files)
        return Success(sorted(found, key=lambda d: (d.file, d.line, d.tool)))

    def _ruff(self, files: Sequence[str]) -> Result[list[Diagnostic], str]:
        assert self.host is not None and self.python is not None
        command = [self.python, "-m", "ruff", "check", "--output-format", "json", "--no-cache"]
        try:
            done = self.host.run(
                [*command, "--", *files],
                cwd=str(self.workspace),
                env=self._env,
                timeout=self.check_timeout,
            )
        except OSError as exc:
            return Failure(f"ruff could not run: {exc}")
        if done.stopped:
            return Failure("the run is being stopped")
        if done.returncode is None:
            return Failure(f"ruff did not finish within {self.check_timeout:g}s")
        if done.returncode not in (0, 1):
            problem = done.stderr.decode("utf-8", "replace").strip()
            return Failure(f"ruff failed (exit {done.returncode}): {problem[-500:]}")
        return Success(ruff_diagnostics(done.stdout.decode("utf-8", "replace"), self.workspace))

    def _baseline(self, files: Sequence[str]) -> Result[list[Diagnostic], str]:
        """The diagnostics of ``files`` as they are now: remembered for a text the checks
        already saw, else checked now."""
        known: list[Diagnostic] = []
        unknown: list[str] = []
        for path in files:
            data = self._files.read_bytes(path) or b""
            seen = self._known.get(path)
            if seen is not None and seen[0] == _digest(data):
                known += seen[1]
            else:
                unknown.append(path)
        if not unknown:
            return Success(known)
        return self.diagnostics(unknown).map(lambda fresh: known + fresh)

    def _tools(self) -> str:
        tools = (["ruff"] if self.ruff else []) + (
            [f"mypy {' '.join(self.mypy_flags)}".strip()] if self.mypy_flags is not None else []
        )
        return " and ".join(tools) or "no checker"

    # --- the workspace's story ----------------------------------------------------------

    @property
    def start(self) -> Mapping[str, bytes]:
        """The workspace's ``.py`` files as they were when the environment was made."""
        return self._start

    def changed_files(self) -> list[str]:
        """The ``.py`` files that differ from the start (created ones included), sorted."""
        now = self._files.snapshot((".py",))
        return sorted(p for p, data in now.items() if self._start.get(p) != data)

    @property
    def files(self) -> Workspace:
        return self._files

    @property
    def daemon_pid(self) -> int | None:
        """The mypy daemon's process id while it runs (None before the first check)."""
        return None if self._daemon is None else self._daemon.pid

    def close(self) -> None:
        """Stop the mypy daemon (and end the host, if this environment made it or was
        given it by its domain). Safe to call again."""
        if self._daemon is not None:
            self._daemon.stop()
        if self._own_host and self.host is not None:
            self.host.close()

    def __enter__(self) -> PythonEnv:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _observation(text: str, returncode: int) -> Observation:
    return Observation(text, returncode)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _counts(
    fresh: Sequence[Diagnostic], kept: Sequence[Diagnostic], fixed: Sequence[Diagnostic]
) -> str:
    if not fresh and not kept:
        done = f" ({_count(len(fixed), 'problem')} fixed by this edit)" if fixed else ""
        return "no problems." + done
    parts = [f"{_count(len(fresh), 'new problem')} (introduced by this edit)"]
    parts.append(f"{len(kept)} already there before it")
    if fixed:
        parts.append(f"{len(fixed)} fixed by it")
    return ", ".join(parts) + "."


def _listing(
    fresh: Sequence[Diagnostic],
    kept: Sequence[Diagnostic],
    fixed: Sequence[Diagnostic],
    texts: Mapping[str, str],
) -> str:
    sections: list[str] = []
    if fresh:
        shown = [in_context(d, texts.get(d.file, "")) for d in fresh[:_SHOWN_IN_CONTEXT]]
        shown += [str(d) for d in fresh[_SHOWN_IN_CONTEXT:_SHOWN]]
        sections.append("Introduced by this edit:\n" + "\n\n".join(shown))
    if kept:
        room = max(5, _SHOWN - len(fresh))
        lines = [str(d) for d in kept[:room]]
        if len(kept) > room:
            lines.append(f"... and {len(kept) - room} more")
        sections.append("Already there before this edit:\n" + "\n".join(lines))
    if fixed:
        sections.append("Fixed by this edit:\n" + "\n".join(str(d) for d in fixed[:10]))
    return "\n\n".join(sections)


def python_env(
    workspace: str | Path = ".",
    *,
    mypy: Sequence[str] | None = ("--strict",),
    ruff: bool = True,
    reject_new_errors: bool = False,
    timeout: float = 120.0,
    check_timeout: float = 120.0,
    python: str | None = None,
    host: ToolHost | None = None,
) -> PythonEnv:
    """V2 for Python code: the edits of ``edit_parse`` applied in ``workspace``, judged.

    An ``EditAction`` is applied all or none, only inside ``workspace`` (absolute paths,
    ``..`` and symlinks are refused); a SEARCH that matches nothing or more than one
    place is a format error and changes nothing. Then ``ruff check`` and mypy (with the
    ``mypy`` flags; ``None`` turns mypy off) run on the changed ``.py`` files, mypy
    through one ``dmypy`` daemon of this environment (started at the first check, with
    its own status file), so a re-check after an edit takes a fraction of a second.
    The observation lists the diagnostics with file, line and message, each new one
    inside its enclosing function, and says which the edit introduced, which were
    already there and which it fixed. With ``reject_new_errors=True`` an edit that adds
    problems is undone and the model is shown why. Other actions run as bash commands
    in ``workspace``. The checkers run with ``python`` (default: this interpreter, which
    needs the ``four-loop[python]`` extra; in a container, its ``python3``) and the
    workspace's own ruff and mypy configuration (mypy plugins included). Commands and
    checkers alike run in ``host`` (a ``four.execute`` ``ToolHost``: the run's sandbox
    or container) or, by default, here, each in a PID namespace of its own: they see no
    other process, none of the driver's secrets, and nothing they start outlives them.

    ``close()`` (which ``run`` calls, whatever ends the run) stops the daemon; if this
    process dies without closing, the daemon sees its pipe close and exits.

    >>> import tempfile
    >>> from four.parse import WholeFile
    >>> with python_env(tempfile.mkdtemp()) as env:
    ...     print(env.edit([WholeFile("a.py", "x: int = 'no'\\n")]).content.splitlines()[1])
    Checked a.py with ruff and mypy --strict: 1 new problem (introduced by this edit), 0 already there before it.
    """
    return PythonEnv(
        Path(workspace),
        None if mypy is None else tuple(mypy),
        ruff,
        reject_new_errors,
        timeout,
        check_timeout,
        python,
        host,
    )
