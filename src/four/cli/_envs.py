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
    container; for the sandbox, the one writable folder, a fresh one when None).

    >>> make_env("local", cwd="/tmp").cwd
    '/tmp'
    """
    limit = DEFAULT_TIMEOUT if timeout is None else timeout
    try:
        return _make(kind, image, cwd, limit)
    except (TypeError, ValueError) as exc:  # a setting the environment refuses
        raise UsageError(f"cannot make the {kind} environment: {exc}") from None


def _make(kind: str, image: str | None, cwd: str | None, limit: float) -> Execute:
    from four.execute import docker_env, local_env, sandbox_env, shell_env

    if kind == "local":
        return local_env(limit, cwd=cwd)
    if kind == "persistent":
        return shell_env(limit, cwd=cwd)
    if kind == "sandbox":
        return sandbox_env(limit, workdir=cwd)
    if kind == "docker":
        if not image:
            raise UsageError("--env docker needs an image: --image NAME or FOUR_IMAGE")
        return docker_env(image, limit, cwd=cwd or "/")
    raise UsageError(f"unknown environment {kind!r}: use local, persistent, sandbox or docker")
