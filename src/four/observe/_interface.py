"""A tool's real command-line interface: its options and subcommands.

For a Python tool, its ``argparse`` parser, introspected (``_argparse_dump``, in a
process of its own that stops at the parse: four's own too); for any
other program, its ``--help`` parsed. Every process runs in an environment of
``four.execute`` (contained, with a timeout), never in this one.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from returns.result import Success

from four._checked import Checked, checked
from four._types import Action, Execute, output_of
from four.observe import _argparse_dump

_OPTION = re.compile(
    r"(?<![\w/=.<>-])(--?(?:\[no-\])?[A-Za-z0-9?][\w.+#-]*(?:,)?)"
    r"(\[?=|\s?<|\[<|\s\[?[A-Z][A-Z_-]*\b)?"
)
_SUBCOMMAND = re.compile(r"^\s{1,8}([a-z][\w-]*)(?:,\s*[a-z][\w-]*)*(?:\s{2,}|\t)\S")
_HEADER = re.compile(r"^(?=\S).*?\b(?:commands?|subcommands?)\b.*$", re.I)
_BRACES = re.compile(r"\{([a-z][\w-]*(?:,[a-z][\w-]*)+)\}")
_USAGE = re.compile(r"^\s*usage:\s*\S.*?(?:\n\s*\n|\Z)", re.I | re.M | re.S)
_COMMAND = re.compile(r"<command>|\bCOMMAND\b|\{\w+,|\bcommand \[")


@dataclass(frozen=True, slots=True)
class Help:
    """How a program tells its interface: the words that print it (each tuple one
    invocation, their outputs read together), those that print a subcommand's (``{}``
    is the subcommand), and the subcommands that pass unknown options on to another
    tool (their options are not checked)."""

    top: tuple[tuple[str, ...], ...] = (("--help",),)
    sub: tuple[str, ...] = ("{}", "--help")
    open: frozenset[str] = frozenset()
    also: frozenset[str] = frozenset()  # options it takes without ever listing them


HELP: Mapping[str, Help] = {
    "curl": Help((("--help", "all"),)),  # its --help names the important options only
    # git's --help opens a manual page for a subcommand; `help -a` lists them all
    "git": Help(
        (("--help",), ("help", "-a")),
        ("{}", "-h"),
        frozenset(
            {
                "log",
                "show",
                "diff",
                "whatchanged",
                "format-patch",
                "shortlog",
                "rev-list",
                "range-diff",
                "difftool",
            }
        ),
    ),
    "go": Help((("help",),), ("help", "{}")),  # `go build -h` names two flags of forty
    # gcc's --help lists a tenth of its options: -v --help adds its tools' (ld's -l),
    # --completion=- every option of the compiler; -pthread is a driver spec, in neither
    **{
        cc: Help((("-v", "--help"), ("--completion=-",)), also=frozenset({"-pthread"}))
        for cc in ("gcc", "cc", "g++", "c++")
    },
}
"""Programs whose ``--help`` is not how they tell their whole interface."""


@dataclass(frozen=True, slots=True)
class Interface:
    """What a tool accepts. ``options``: every spelling; ``valued``: those that take a
    value (``-o FILE``: the next word is no subcommand); ``subcommands``: each name's
    interface (None: not read yet); ``abbrev``: a long option may be shortened
    (argparse); ``bundles``: single-letter options may be bundled (``-czf``);
    ``source``: "argparse" or "help"."""

    options: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    subcommands: Mapping[str, Interface | None] = field(default_factory=dict)
    abbrev: bool = False
    bundles: bool = True
    source: str = "help"
    families: frozenset[str] = frozenset()  # -W, -f: prefixes of named options, not values

    def knows(self, option: str) -> bool:
        """Whether ``option`` (a spelling without its ``=value``) is one of ours: as
        written, a ``no-`` negation of one, an argparse abbreviation, or a joined value
        of a single-letter option that takes one (``-O2``, ``-lm``)."""
        if option in self.options:
            return True
        for prefix in ("--no-", "-fno-", "-Wno-", "-mno-"):
            if option.startswith(prefix):
                positive = prefix.replace("no-", "") + option[len(prefix) :]
                if positive in self.options:
                    return True
        if option.startswith("-Werror=") and ("-W" + option[8:]) in self.options:
            return True
        if self.abbrev and option.startswith("--"):
            matches = [o for o in self.options if o.startswith(option)]
            if len(matches) == 1:
                return True
        head = option[:2]
        joined = self.bundles or head not in self.families
        return len(option) > 2 and head in self.valued and joined and not option.startswith("--")

    def takes_value(self, option: str) -> bool:
        if option in self.valued:
            return True
        if self.abbrev and option.startswith("--"):
            matches = [o for o in self.options if o.startswith(option)]
            return len(matches) == 1 and matches[0] in self.valued
        return False


def from_argparse(data: object) -> Interface:
    """An ``Interface`` from ``_argparse_dump.describe``'s dump."""
    if not isinstance(data, dict):
        return Interface(source="argparse")
    options = data.get("options")
    pairs = (
        [p for p in options if isinstance(p, list) and len(p) == 2]
        if isinstance(options, list)
        else []
    )
    subs = data.get("subcommands")
    subcommands = (
        {str(k): from_argparse(v) for k, v in subs.items()} if isinstance(subs, dict) else {}
    )
    return Interface(
        frozenset(str(p[0]) for p in pairs),
        frozenset(str(p[0]) for p in pairs if p[1]),
        subcommands,
        abbrev=bool(data.get("abbrev", True)),
        bundles=True,
        source="argparse",
    )


def parse_help(text: str, subcommands: bool = True) -> Interface:
    """The options a program's help text names (``-x``, ``--long``, ``--long=VALUE``,
    ``--[no-]flag``, ``-O<number>``) and its subcommands (the words listed under a
    heading that says "commands", or in ``{a,b,c}``).

    >>> found = parse_help("usage: t [-v] [--file=NAME] {add,rm}\\n  -v, --verbose  say more")
    >>> sorted(found.options), sorted(found.valued), sorted(found.subcommands)
    (['--file', '--verbose', '-v'], ['--file'], ['add', 'rm'])
    """
    options: set[str] = set()
    valued: set[str] = set()
    for match in _OPTION.finditer(text):
        spelling = match.group(1).rstrip(",")
        takes = match.group(2) is not None
        if "[no-]" in spelling:
            plain = spelling.replace("[no-]", "")
            options.update({plain, plain.replace("--", "--no-", 1)})
            spelling = plain
        if spelling.endswith("=") or spelling in ("-", "--"):
            continue
        options.add(spelling)
        if takes:
            valued.add(spelling)
    names: dict[str, Interface | None] = {}
    if subcommands and any(_COMMAND.search(u) for u in _USAGE.findall(text)):
        names.update({n: None for group in _BRACES.findall(text) for n in group.split(",")})
        under = False
        for line in text.splitlines():
            if _HEADER.match(line):
                under = True
                continue
            if under and line.strip() and not line[:1].isspace():
                under = bool(_HEADER.match(line))
                continue
            found = _SUBCOMMAND.match(line) if under else None
            if found:
                for name in re.findall(r"[a-z][\w-]*", line.strip().split("  ")[0]):
                    names.setdefault(name, None)
    letters = {o for o in options if len(o) == 2}
    long_single = sum(  # -Wall, -pthread: not a bundle of single-letter options (-czf)
        1
        for o in options
        if not o.startswith("--") and len(o) > 2 and any(f"-{c}" not in letters for c in o[1:])
    )
    heads = [o[:2] for o in options if not o.startswith("--") and len(o) > 2]
    return Interface(
        frozenset(options),
        frozenset(valued),
        names,
        abbrev=False,
        bundles=long_single < 5,  # gcc-like tools spell long options with one dash
        source="help",
        families=frozenset(h for h in set(heads) if heads.count(h) >= 10),
    )


@dataclass
class Toolbox(Checked):
    """Asks an environment about programs, once each: ``env`` is where the run's commands
    run (does the program exist there?); ``helper`` where ``--help`` and argparse
    introspection run (contained; ``env`` when None); ``workspace`` the folder commands
    start in; ``timeout`` the seconds one question may take."""

    env: Execute
    helper: Execute | None = None
    workspace: str | None = None
    timeout: float = 10.0
    _found: dict[str, str | None] = field(default_factory=dict)
    _interfaces: dict[tuple[str, ...], Interface | str] = field(default_factory=dict)

    def close(self) -> None:
        """End what the environments hold (a launcher, a container, a sandbox's folder)."""
        for env in (self.env, self.helper):
            close = getattr(env, "close", None)
            if callable(close):
                close()

    def __enter__(self) -> Toolbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def where(self, program: str) -> str | None:
        """The program's path (or ``builtin``) in the run's environment, None if absent."""
        if program not in self._found:
            said = self._ask(self.env, f"command -v -- {shlex.quote(program)}")
            line = said[1].strip().splitlines()[-1:] if said[0] == 0 else []
            self._found[program] = (line[0] if line else "builtin") if said[0] == 0 else None
        return self._found[program]

    def interface(self, tool: tuple[str, ...]) -> Interface | str:
        """The interface of ``tool`` (a program, ``python -m MODULE`` or ``python
        SCRIPT``), or why it cannot be read."""
        if tool not in self._interfaces:
            self._interfaces[tool] = self._read(tool)
        return self._interfaces[tool]

    def subcommand(self, tool: tuple[str, ...], name: str) -> Interface | str:
        """The interface of ``tool name``, read with the subcommand's own help."""
        key = (*tool, "\0", name)
        if key not in self._interfaces:
            self._interfaces[key] = self._read_sub(tool, name)
        return self._interfaces[key]

    def _read(self, tool: tuple[str, ...]) -> Interface | str:
        python = self._python(tool)
        if python is not None:
            return self._introspect(*python, ())
        program = tool[0]
        how = HELP.get(Path(program).name, Help())
        lines = [f"{shlex.quote(program)} {shlex.join(words)}" for words in how.top]
        found = self._help("; ".join(lines), program)
        if isinstance(found, Interface) and how.also:
            return replace(found, options=found.options | how.also)
        return found

    def _read_sub(self, tool: tuple[str, ...], name: str) -> Interface | str:
        python = self._python(tool)
        if python is not None:
            found = self._introspect(*python, (name,))
            if isinstance(found, Interface):
                return found.subcommands.get(name) or found
            return found
        program = tool[0]
        how = HELP.get(Path(program).name, Help())
        if name in how.open:
            return f"`{program} {name}` passes options on to other tools"
        line = " ".join(shlex.quote(w.format(name)) for w in how.sub)
        return self._help(f"{shlex.quote(program)} {line}", f"{program} {name}", subcommands=False)

    def _python(self, tool: tuple[str, ...]) -> tuple[str, str, str] | None:
        """(interpreter, mode, target) when ``tool`` is a Python program, else None."""
        if len(tool) == 3 and tool[1] == "-m":
            return tool[0], "-m", tool[2]
        if len(tool) == 2:
            return tool[0], "run", tool[1]
        path = self.where(tool[0])
        if path is None or path == "builtin":
            return None
        relative = not path.startswith("/")
        said = self._ask(self.helper or self.env, f"head -c 160 -- {shlex.quote(path)}", relative)
        first = said[1].split("\n", 1)[0]
        if said[0] != 0 or not first.startswith("#!") or "python" not in first:
            return None
        interpreter = first[2:].strip().split()
        if interpreter and Path(interpreter[0]).name == "env":
            interpreter = interpreter[1:]
        if not interpreter:
            return None
        return interpreter[0], "run", path

    def _introspect(
        self, python: str, mode: str, target: str, words: tuple[str, ...]
    ) -> Interface | str:
        source = Path(_argparse_dump.__file__).read_text(encoding="utf-8")
        here = mode == "-m"  # a module may be the workspace's own; a script is named whole
        if mode == "run" and not target.startswith("/") and self.workspace:
            target = str(Path(self.workspace, target))
        line = shlex.join([python, "-c", source, mode, target, *words, "--help"])
        code, output = self._ask(self.helper or self.env, line, here)
        for text in output.splitlines():
            if text.startswith(_argparse_dump.MARK):
                try:
                    return from_argparse(json.loads(text[len(_argparse_dump.MARK) :]))
                except ValueError:
                    break
        if code in (None, 124, 137):
            return f"`{target} --help` did not finish within {self.timeout:g} s"
        found = parse_help(output)
        if not found.options:
            return f"`{target} --help` names no options"
        return found

    def _help(self, line: str, shown: str, subcommands: bool = True) -> Interface | str:
        relative = "/" in shown.split()[0] and not shown.startswith("/")
        code, output = self._ask(self.helper or self.env, line, relative)
        if code in (None, 124, 137):
            return f"`{shown} --help` did not finish within {self.timeout:g} s"
        found = parse_help(output, subcommands)
        if not found.subcommands and found.options <= {"--help", "-h", "--version"}:
            return f"`{shown} --help` names no options (exit {code})"  # mawk: "not an option"
        return found

    def _ask(self, env: Execute, command: str, here: bool = False) -> tuple[int | None, str]:
        """Run ``command`` (stdin closed; with ``here``, in the workspace: for a program
        named by a relative path) bounded by the timeout."""
        at = self.workspace if here or env is self.env else None
        where = f"cd {shlex.quote(at)} 2>/dev/null; " if at else ""
        wrapped = f"{where}timeout -k 2 {self.timeout:g} bash -c {shlex.quote(command)}"
        result = env(Action(wrapped))
        if not isinstance(result, Success):
            return None, str(result.failure())
        seen = result.unwrap()
        return (None if seen.timed_out else seen.returncode), output_of(seen.content)


HELP_OUTPUT = 4 << 20
"""Characters of a help text kept (gcc's whole interface is about 300 KB)."""


@checked
def toolbox(
    kind: str = "local",
    workspace: str | None = None,
    *,
    image: str | None = None,
    timeout: float = 10.0,
) -> Toolbox:
    """A ``Toolbox`` for runs whose commands run in the environment ``kind`` (local,
    persistent, sandbox, docker) starting in ``workspace``. Programs are looked for
    there; their help runs under bubblewrap (the PATH's folders and the workspace
    read-only, no network) where it is installed and the run's own environment is not
    contained already, else in the run's environment itself. Close it when done (it is
    a context manager).

    Example::

        with toolbox("sandbox", "project") as tools:
            tools.where("gcc")               # '/usr/bin/gcc' (None: not in the sandbox)
            tools.interface(("git",))        # Interface(options=..., subcommands=...)
    """
    import shutil

    from four.execute import docker_env, local_env, sandbox_env

    limit = timeout + 5
    env: Execute
    if kind == "docker":
        if not image:
            raise ValueError("--env docker needs an image: --image NAME")
        env = docker_env(image, limit, max_output=HELP_OUTPUT, cwd=workspace or "/")
        return Toolbox(env, None, None, timeout)
    if kind == "sandbox":
        env = sandbox_env(limit, max_output=HELP_OUTPUT, ro_binds=_binds(workspace))
        return Toolbox(env, None, workspace, timeout)
    env = local_env(limit, max_output=HELP_OUTPUT, cwd=workspace)
    helper = None
    if shutil.which("bwrap"):
        helper = sandbox_env(limit, max_output=HELP_OUTPUT, ro_binds=_binds(workspace, path=True))
    return Toolbox(env, helper, workspace, timeout)


def _binds(workspace: str | None, path: bool = False) -> tuple[str, ...]:
    """The folders a help sandbox shows read-only: the workspace and, with ``path``, the
    PATH's folders outside the system's (a virtual environment: its root, for its Python)
    and this Python's import path."""
    import os

    from four.execute._sandbox import SYSTEM

    found: list[str] = []
    if workspace and os.path.isdir(workspace):
        found.append(os.path.abspath(workspace))
    if path:  # and this Python's own path: four itself (an editable install's source too)
        import sys

        entries = os.environ.get("PATH", "").split(os.pathsep) + sys.path
        for entry in entries:
            real = os.path.abspath(entry) if entry else ""
            if (
                not real
                or not os.path.isdir(real)
                or any(real == s or real.startswith(s.rstrip("/") + "/") for s in SYSTEM)
            ):
                continue
            root = os.path.dirname(real) if os.path.basename(real) == "bin" else real
            if root not in found and root != "/":
                found.append(root)
    return tuple(found)
