"""The environment a run's commands go to, by name: local, persistent, sandbox, docker."""

from __future__ import annotations

from four._types import Execute
from four.cli._errors import UsageError

DEFAULT_TIMEOUT = 120.0
"""Seconds one command may run, as the environments of ``four.execute`` default to."""


def make_env(
    kind: str, *, image: str | None = None, cwd: str | None = None, timeout: float | None = None
) -> Execute:
    """V2 for ``--env KIND``; ``cwd`` is the working directory (for docker, inside the
    container; for the sandbox, the one writable folder, a fresh one when None). A
    command that repeats an earlier one and its output is pointed out to the model.

    >>> make_env("local", cwd="/tmp").cwd
    '/tmp'
    """
    from four.execute import docker_env, local_env, note_repeats, sandbox_env, shell_env

    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    if kind == "local":
        return note_repeats(local_env(limit, cwd=cwd))
    if kind == "persistent":
        return note_repeats(shell_env(limit, cwd=cwd))
    if kind == "sandbox":
        return note_repeats(sandbox_env(limit, workdir=cwd))
    if kind == "docker":
        if not image:
            raise UsageError("--env docker needs an image: --image NAME or FOUR_IMAGE")
        return note_repeats(docker_env(image, limit, cwd=cwd or "/"))
    raise UsageError(f"unknown environment {kind!r}: use local, persistent, sandbox or docker")
