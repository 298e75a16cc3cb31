"""The environment a run's commands go to, by name: local, persistent, sandbox, docker."""

from __future__ import annotations

from four._types import Execute
from four.cli._errors import UsageError
from four.domains._bash import environment


def make_env(
    kind: str, *, image: str | None = None, cwd: str | None = None, timeout: float | None = None
) -> Execute:
    """V2 for ``--env KIND`` (see ``four.domains._bash.environment``); a bad name or a
    missing image is a ``UsageError``.

    >>> make_env("local", cwd="/tmp").cwd
    '/tmp'
    """
    try:
        return environment(kind, image=image, cwd=cwd, timeout=timeout)
    except (TypeError, ValueError) as exc:  # a setting the environment refuses
        raise UsageError(f"cannot make the {kind} environment: {exc}") from None
