"""The async form of the G and V2 ``four run`` builds, for ``four batch --processes``:
made from the plain ones, so the settings are theirs; None where there is none (then
``arun`` runs the plain one in a worker thread)."""

from __future__ import annotations

from four._types import AsyncExecute, AsyncInvoke, Execute, Invoke


def awaited_invoke(G: Invoke) -> AsyncInvoke | None:
    """G awaited, with the same wrappers and settings, or None.

    >>> from four.invoke import budget_invoke, litellm_invoke, retry_invoke
    >>> awaited_invoke(budget_invoke(retry_invoke(litellm_invoke("m")), cost_limit=1.0))
    ... # doctest: +ELLIPSIS
    AsyncWrapped(wrapper=BudgetInvoke(...), G=AsyncWrapped(wrapper=RetryInvoke(...), G=...))
    """
    from four.invoke import (
        AsyncLitellmInvoke,
        BudgetInvoke,
        CycleBreakingInvoke,
        LitellmInvoke,
        RetryInvoke,
    )
    from four.invoke._budget import AsyncWrapped

    if type(G) is LitellmInvoke:
        return AsyncLitellmInvoke(G)
    if isinstance(G, BudgetInvoke | RetryInvoke | CycleBreakingInvoke):
        inner = awaited_invoke(G.G)
        return None if inner is None else AsyncWrapped(G, inner)
    return None


def awaited_env(V2: Execute) -> AsyncExecute | None:
    """V2 awaited, with the same settings (not started yet), or None.

    >>> from four.execute import local_env, note_repeats
    >>> type(awaited_env(note_repeats(local_env()))).__name__
    'AsyncNoteRepeats'
    """
    from four.execute import NoteRepeats
    from four.execute._async import AsyncLocalEnv, AsyncShellEnv
    from four.execute._local import LocalEnv
    from four.execute._repeats import AsyncNoteRepeats
    from four.execute._shell import ShellEnv

    if type(V2) is LocalEnv:
        return AsyncLocalEnv(V2)
    if type(V2) is ShellEnv:  # its shell, read on the event loop
        return AsyncShellEnv(V2)
    if isinstance(V2, NoteRepeats):
        inner = awaited_env(V2.inner)
        return None if inner is None else AsyncNoteRepeats(V2, inner)
    return None
