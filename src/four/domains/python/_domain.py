"""``four run --domain python``: the Python-code domain as a ``Domain``."""

from __future__ import annotations

from pathlib import Path

from four.domains import Domain, DomainSetup
from four.domains._host import domain_host
from four.domains._start import replay_from
from four.domains.python._check import typed_check
from four.domains.python._emit import save_files
from four.domains.python._env import PythonEnv, python_env
from four.execute import EXIT_SIGNAL
from four.parse import edit_parse
from four.types import Execute, Parse, Recorder, Verify

SYSTEM = f"""You are a careful Python developer working in a project folder. You change the
code with file edits; every edit is checked at once with ruff and mypy --strict, and you
are shown the diagnostics it introduced (inside their functions) and those already there.

To create a file, or rewrite a small one, put its path alone on a line, then a fenced
block with the whole file:

hello.py
```python
def greet(name: str) -> str:
    return f"hello, {{name}}"
```

To change an existing file, put its path alone on a line, then a fenced block of
SEARCH/REPLACE blocks. Each SEARCH part must match exactly one run of whole lines of the
file as it is now (copy them exactly, with their indentation); keep it short but unique:

hello.py
```python
<<<<<<< SEARCH
    return f"hello, {{name}}"
=======
    return f"hello, {{name}}!"
>>>>>>> REPLACE
```

To run commands (the tests, the program, grep, ls), use a ```bash block; commands must
not wait for input. A reply's edits are applied first (all or none), then its commands.
Paths are relative to the project folder; nothing outside it can be edited.

Write fully typed code (mypy --strict passes), fix the diagnostics your edits introduce,
and run the tests before you finish. When the task is done, reply with a line holding
only {EXIT_SIGNAL}
and a short summary of what you changed."""


def _parse() -> Parse:
    return edit_parse()


def _environment(setup: DomainSetup) -> Execute:
    timeout = setup.command_timeout or 120.0
    host = domain_host(setup, timeout, name="python")
    return python_env(host.workspace, timeout=timeout, host=host).owns_host()


def _emit(setup: DomainSetup, env: Execute) -> Recorder[Path]:
    if isinstance(env, PythonEnv):
        return save_files(setup.output_dir, env, signing_key=setup.signing_key)
    return save_files(
        setup.output_dir, setup.workspace or Path.cwd(), signing_key=setup.signing_key
    )


def _check(setup: DomainSetup, env: Execute, tests: str | None) -> Verify | None:
    return typed_check(tests or None, env=env if isinstance(env, PythonEnv) else None)


DOMAIN = Domain(
    name="python",
    summary="Python code: file edits judged by ruff and mypy --strict; --check runs the tests",
    system=SYSTEM,
    parse=_parse,
    environment=_environment,
    emit=_emit,
    check=_check,
    replay_workspace=replay_from("files"),
)
