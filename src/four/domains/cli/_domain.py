"""``four run --domain cli`` (C), ``cli-go`` and ``cli-rust``: a command-line tool,
compiled, with its man page. One domain per language: each has its own system prompt,
and a recorded run names its language (``four replay`` makes the same V2 again)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from four.domains import Domain, DomainSetup
from four.domains._host import domain_host
from four.domains._start import replay_from
from four.domains.cli._build import Language, toolchain_folders
from four.domains.cli._check import tool_check
from four.domains.cli._emit import save_tool
from four.domains.cli._env import ToolEnv, build_env
from four.execute import EXIT_SIGNAL
from four.parse import edit_parse
from four.types import Execute, Parse, Recorder, Verify


@dataclass(frozen=True, slots=True)
class _Prompt:
    """What the system prompt says of one language."""

    who: str  # "C programmer"
    build: str  # how each turn is built, and what fails it
    naming: str  # where the binary's name comes from
    path: str  # the example's file
    fence: str
    before: str  # a whole small file
    old: str  # a line of it, and what a SEARCH/REPLACE turns it into
    new: str


_PROMPTS: dict[Language, _Prompt] = {
    "c": _Prompt(
        "C programmer",
        "gcc -Wall -Wextra -Werror (every warning fails the build)",
        "NAME is the name of the .c file that holds\nmain(): sum.c makes ./sum.",
        "sum.c",
        "c",
        '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n',
        'int main(void) { puts("hello"); return 0; }',
        'int main(void) { puts("hello, world"); return 0; }',
    ),
    "go": _Prompt(
        "Go programmer",
        "go build, then go vet (every vet finding fails the build, as a\nwarning would)",
        "NAME is the last part of the module path in\ngo.mod: `module sum` makes ./sum. "
        "Write go.mod first: a `module NAME` line and a\n`go 1.19` line. Builds are "
        "offline: use the standard library only.",
        "main.go",
        "go",
        'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n',
        'func main() { fmt.Println("hello") }',
        'func main() { fmt.Println("hello, world") }',
    ),
    "rust": _Prompt(
        "Rust programmer",
        "cargo build --offline (every warning fails the build)",
        "NAME is the package name in Cargo.toml:\n"
        '`name = "sum"` makes ./sum. Write Cargo.toml first. Builds are offline: use no\n'
        "crates, the standard library only.",
        "src/main.rs",
        "rust",
        'fn main() {\n    println!("hello");\n}\n',
        '    println!("hello");',
        '    println!("hello, world");',
    ),
}


def system(language: Language) -> str:
    """The system prompt of the command-line-tool domain for ``language``."""
    say = _PROMPTS[language]
    return f"""You are a careful {say.who} writing a small Unix command-line tool in a project
folder. Each reply's file edits are written, then the tool is compiled at once with
{say.build} and you are shown each
diagnostic with its file, line and source line. A clean build is run in a sandbox:
`./NAME --help` and `./NAME --version` must print to stdout and exit 0 (a man page is
made from them, and it must lint clean). {say.naming}

To create a file, or rewrite a small one, put its path alone on a line, then a fenced
block with the whole file:

{say.path}
```{say.fence}
{say.before}```

To change an existing file, put its path alone on a line, then a fenced block of
SEARCH/REPLACE blocks; each SEARCH part must match exactly one run of whole lines:

{say.path}
```{say.fence}
<<<<<<< SEARCH
{say.old}
=======
{say.new}
>>>>>>> REPLACE
```

To run commands (the tool itself, ls, cat), use a ```bash block; they run in the same
sandbox, in the project folder, and must not wait for input. Handle --help and --version
first, write usage errors to stderr with exit status 2, and test the tool on a few
inputs. When the task is done, reply with a line holding only {EXIT_SIGNAL}
and one line on how to use the tool."""


SYSTEM = system("c")


def _parse() -> Parse:
    return edit_parse()


def _emit(setup: DomainSetup, env: Execute) -> Recorder[Path]:
    if not isinstance(env, ToolEnv):
        raise TypeError("--domain cli saves what its own build_env built")
    return save_tool(setup.output_dir, env, signing_key=setup.signing_key)


def _check(setup: DomainSetup, env: Execute, acceptance: str | None) -> Verify | None:
    return tool_check(acceptance or None, env=env if isinstance(env, ToolEnv) else None)


def _domain(name: str, language: Language, summary: str) -> Domain:
    def environment(setup: DomainSetup) -> Execute:
        # The compiler and the binary never run outside a sandbox: --env local means one.
        kind = "sandbox" if setup.env == "local" else setup.env
        timeout = setup.command_timeout or 60.0
        folders = toolchain_folders(language)
        host = domain_host(replace(setup, env=kind), timeout, name=name, readable=folders)
        try:
            made = build_env(host.workspace, language=language, timeout=timeout, host=host)
        except BaseException:
            host.close()
            raise
        return made.owns_host()

    return Domain(name, summary, system(language), _parse, environment, _emit, _check,
                  replay_workspace=replay_from("tool"))  # fmt: skip


DOMAIN = _domain(
    "cli", "c", "a command-line tool in C: compiled with -Werror, run sandboxed, with a man page"
)
GO_DOMAIN = _domain(
    "cli-go", "go", "the cli domain in Go: go build and go vet, run sandboxed, with a man page"
)
RUST_DOMAIN = _domain(
    "cli-rust", "rust", "the cli domain in Rust: cargo, offline, run sandboxed, with a man page"
)
