"""The environment a run's commands go to, by name: local, persistent, sandbox, docker."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from four._types import Execute
from four.cli._errors import UsageError


def make_env(
    kind: str, *, image: str | None = None, cwd: str | None = None, timeout: float | None = None
) -> Execute:
    """V2 for ``--env KIND``; ``timeout`` None keeps the environment's own default.

    >>> make_env("local", cwd="/tmp").cwd
    '/tmp'
    """
    from four.execute import local_env, shell_env

    limits: dict[str, object] = {} if timeout is None else {"timeout": timeout}
    if kind == "local":
        return local_env(cwd=cwd) if timeout is None else local_env(timeout, cwd=cwd)
    if kind == "persistent":
        return shell_env(cwd=cwd) if timeout is None else shell_env(timeout, cwd=cwd)
    if kind == "sandbox":
        return _factory("sandbox_env")(cwd=cwd, **limits)
    if kind == "docker":
        if not image:
            raise UsageError("--env docker needs an image: --image NAME or FOUR_IMAGE")
        return _factory("docker_env")(image, cwd=cwd, **limits)
    raise UsageError(f"unknown environment {kind!r}: use local, persistent, sandbox or docker")


def _factory(name: str) -> Callable[..., Execute]:
    """An environment factory of ``four.execute`` that may not exist in this version."""
    module = importlib.import_module("four.execute")
    factory = getattr(module, name, None)
    if factory is None:
        raise UsageError(f"this version of four has no {name} (--env {name[:-4]})")
    return cast(Callable[..., Execute], factory)
