"""``four run --domain cli``: a command-line tool, compiled, with its man page."""

from __future__ import annotations

from pathlib import Path

from four.domains import Domain, DomainSetup
from four.domains._start import replay_from
from four.domains.cli._check import tool_check
from four.domains.cli._emit import save_tool
from four.domains.cli._env import ToolEnv, build_env
from four.execute import EXIT_SIGNAL
from four.parse import edit_parse
from four.types import Execute, Parse, Recorder, Verify

SYSTEM = f"""You are a careful C programmer writing a small Unix command-line tool in a project
folder. Each reply's file edits are written, then the tool is compiled at once with
gcc -Wall -Wextra -Werror (every warning fails the build) and you are shown each
diagnostic with its file, line and source line. A clean build is run in a sandbox:
`./NAME --help` and `./NAME --version` must print to stdout and exit 0 (a man page is
made from them, and it must lint clean). NAME is the name of the .c file that holds
main(): sum.c makes ./sum.

To create a file, or rewrite a small one, put its path alone on a line, then a fenced
block with the whole file:

sum.c
```c
#include <stdio.h>
int main(void) {{ puts("hello"); return 0; }}
```

To change an existing file, put its path alone on a line, then a fenced block of
SEARCH/REPLACE blocks; each SEARCH part must match exactly one run of whole lines:

sum.c
```c
<<<<<<< SEARCH
int main(void) {{ puts("hello"); return 0; }}
=======
int main(void) {{ puts("hello, world"); return 0; }}
>>>>>>> REPLACE
```

To run commands (the tool itself, ls, cat), use a ```bash block; they run in the same
sandbox, in the project folder, and must not wait for input. Handle --help and --version
first, write usage errors to stderr with exit status 2, and test the tool on a few
inputs. When the task is done, reply with a line holding only {EXIT_SIGNAL}
and one line on how to use the tool."""


def _parse() -> Parse:
    return edit_parse()


def _environment(setup: DomainSetup) -> Execute:
    if setup.env not in ("local", "sandbox"):
        raise ValueError(
            f"--domain cli builds here and runs its tool sandboxed, not --env {setup.env}"
        )
    workspace = setup.workspace if setup.workspace is not None else Path.cwd()
    return build_env(workspace, timeout=setup.command_timeout or 60.0)


def _emit(setup: DomainSetup, env: Execute) -> Recorder[Path]:
    if not isinstance(env, ToolEnv):
        raise TypeError("--domain cli saves what its own build_env built")
    return save_tool(setup.output_dir, env, signing_key=setup.signing_key)


def _check(setup: DomainSetup, env: Execute, acceptance: str | None) -> Verify | None:
    return tool_check(acceptance or None, env=env if isinstance(env, ToolEnv) else None)


DOMAIN = Domain(
    name="cli",
    summary="a command-line tool in C: compiled with -Werror, run sandboxed, with a man page",
    system=SYSTEM,
    parse=_parse,
    environment=_environment,
    emit=_emit,
    check=_check,
    replay_workspace=replay_from("tool"),
)
