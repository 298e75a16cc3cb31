"""V2 for ``arun``: ``local_env`` and ``shell_env`` awaited, by the same code
(``LocalEnv.execute``, ``ShellEnv.execute``) waiting on the event loop's readers.
Cancelling the task that awaits a command kills it with every process it started.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from four._types import Action, Checked
from four.execute._local import LocalEnv, local_env, shell_env
from four.execute._output import Executed
from four.execute._process import awaited
from four.execute._shell import ShellEnv

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class AsyncLocalEnv(Checked):
    """``local`` awaited; ``aclose()`` (``arun`` calls it) ends its launcher."""

    local: LocalEnv

    async def aclose(self) -> None:
        """End the launcher, if one runs (and any command still running with it)."""
        await asyncio.to_thread(self.local.close)

    async def __call__(self, action: Action, /) -> Executed:
        return await self.local.execute(action, awaited)


def _settings_of(
    settings: Callable[P, object],
) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Give an async factory the parameters of ``settings``, for mypy and ``help()``."""

    def share(factory: Callable[..., R]) -> Callable[P, R]:
        returns = inspect.signature(factory).return_annotation
        factory.__signature__ = inspect.signature(settings).replace(  # type: ignore[attr-defined]
            return_annotation=returns
        )
        return factory

    return share


@_settings_of(shell_env)
def alocal_env(*args: Any, **kwargs: Any) -> AsyncLocalEnv:
    """``local_env`` for ``arun``: the same parameters and guarantees, awaited (cancelling
    kills); ``arun`` calls ``aclose``.

    >>> import asyncio
    >>> from four import Action
    >>> asyncio.run(alocal_env()(Action("echo hi"))).unwrap().content
    '<returncode>0</returncode>\\n<output>\\nhi\\n</output>'
    """
    return AsyncLocalEnv(local_env(*args, **kwargs))


@dataclass(eq=False, slots=True)
class AsyncShellEnv(Checked):
    """``shell`` awaited: its one persistent bash, read on the event loop. ``aclose()``
    ends it. ``restarts`` is the shell's."""

    shell: ShellEnv
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def restarts(self) -> int:
        return self.shell.restarts

    async def __aenter__(self) -> AsyncShellEnv:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the shell and everything it started, and delete its private folder."""
        async with self._lock:
            self.shell.close()

    async def __call__(self, action: Action, /) -> Executed:
        async with self._lock:  # commands one at a time, as ``shell``'s own lock keeps them
            return await self.shell.execute(action, awaited)


@_settings_of(shell_env)
def ashell_env(*args: Any, **kwargs: Any) -> AsyncShellEnv:
    """``shell_env`` for ``arun``: the same parameters, one persistent bash, awaited;
    ``arun`` calls ``aclose``.

    >>> import asyncio
    >>> from four import Action
    >>> async def main() -> str:
    ...     async with ashell_env() as env:
    ...         _ = await env(Action("cd /tmp"))
    ...         return (await env(Action("pwd"))).unwrap().content.splitlines()[2]
    >>> asyncio.run(main())
    '/tmp'
    """
    return AsyncShellEnv(shell_env(*args, **kwargs))
