"""The bash domain (the default): shell commands in fenced blocks, run by an environment
of ``four.execute``, saved as a trajectory, judged by a command's exit status."""

from __future__ import annotations

from pathlib import Path

from four.domains import Domain, DomainSetup
from four.domains._host import hidden
from four.execute import EXIT_SIGNAL
from four.types import Execute, Parse, Recorder, Verify

DEFAULT_TIMEOUT = 120.0
"""Seconds one command may run, as the environments of ``four.execute`` default to."""

ENVIRONMENTS = ("local", "persistent", "sandbox", "docker")

_COMMON = f"""You are an autonomous software agent working in a Linux shell. You solve the
user's task by running shell commands, one step at a time, and reading their output.

Rules:
- Every command runs in bash; its output and return code come back to you.
- Commands must not wait for input (no editors, no pagers: use `cat`, `sed -n`, `head`).
- Keep outputs short: grep, head and tail rather than printing whole large files.
- Look at a file before you change it or compute from it (`cat notes.txt`).
- To write a file, write all of it in one command with a heredoc (Python code goes in a
  .py file, never typed into bash):
  cat > shapes.py <<'EOF'
  def area(width, height):
      return width * height
  EOF
  To change one line, `sed -i 's/old/new/' file`; then `cat` the file to check it.
- When the task names a file for the result, write the result there and show it in
  the same command: `command > result.txt && cat result.txt` (printing it is not enough).
  The file must hold exactly what the task asks for, nothing else.
- Check your work (run the tests, run the program) before you finish.
- When the task is done, finish by running:
  echo {EXIT_SIGNAL}
  followed by nothing else in that command (or `&& cat` a file with your final answer).
"""

TEXT = (
    _COMMON
    + """
Format: reply with a short thought, then exactly one command in a fenced block:

```bash
ls -la
```
"""
)

TOOLCALLS = (
    _COMMON
    + """
Format: call the `bash` tool with {"command": "..."} for every command you run.
"""
)


def environment(
    kind: str,
    *,
    image: str | None = None,
    cwd: str | None = None,
    timeout: float | None = None,
    hide: tuple[str, ...] = (),
) -> Execute:
    """V2 for an environment's name; ``cwd`` is the working directory (for docker, inside
    the container; for the sandbox, the one writable folder, a fresh one when None).
    ``hide``: folders the sandbox's commands must not see (see ``sandbox_env``).
    A command that repeats the one before it and its output is pointed out to the model.
    An unknown name, or docker without an image, raises ValueError.

    >>> environment("local", cwd="/tmp").cwd
    '/tmp'
    """
    from four.execute import docker_env, local_env, note_repeats, sandbox_env, shell_env

    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    if kind == "local":
        return note_repeats(local_env(limit, cwd=cwd))
    if kind == "persistent":
        return note_repeats(shell_env(limit, cwd=cwd))
    if kind == "sandbox":
        return note_repeats(sandbox_env(limit, workdir=cwd, hide=hide))
    if kind == "docker":
        if not image:
            raise ValueError("--env docker needs an image: --image NAME or FOUR_IMAGE")
        return note_repeats(docker_env(image, limit, cwd=cwd or "/"))
    raise ValueError(f"unknown environment {kind!r}: use {', '.join(ENVIRONMENTS)}")


def _parse() -> Parse:
    from four.parse import regex_parse

    return regex_parse()


def _environment(setup: DomainSetup) -> Execute:
    cwd = None if setup.workspace is None else str(setup.workspace)
    hide = () if setup.workspace is None else hidden(setup, setup.workspace)
    return environment(
        setup.env, image=setup.image, cwd=cwd, timeout=setup.command_timeout, hide=hide
    )


def _emit(setup: DomainSetup, env: Execute) -> Recorder[Path]:
    from four.trajectory import save_trajectory

    return save_trajectory(setup.output_dir, signing_key=setup.signing_key)


def _check(setup: DomainSetup, env: Execute, command: str | None) -> Verify | None:
    if not command:
        return None
    from four.checks import command_check

    return command_check(command)


DOMAIN = Domain(
    name="bash",
    summary="shell commands in ```bash blocks, run in --env (the default)",
    system=TEXT,
    parse=_parse,
    environment=_environment,
    emit=_emit,
    check=_check,
)
