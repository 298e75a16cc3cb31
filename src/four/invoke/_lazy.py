"""litellm, imported at the first model call and never at ``import four``: the import takes
2-3 s and, unless told otherwise, fetches litellm's price map from the network."""

from __future__ import annotations

import functools
import os
from types import ModuleType


@functools.cache
def litellm_module() -> ModuleType:
    """The litellm module, imported once (offline price map unless the user chose otherwise)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banner
    module: ModuleType = litellm  # untyped: named a module here
    return module


async def close_async_clients() -> None:
    """Close (and forget) the async HTTP clients litellm keeps, if litellm is loaded; they
    belong to the event loop that made them."""
    import sys

    litellm = sys.modules.get("litellm")
    if litellm is None:
        return
    close = getattr(litellm, "close_litellm_async_clients", None)
    if close is not None:
        await close()
    cache = getattr(litellm, "in_memory_llm_clients_cache", None)
    flush = getattr(cache, "flush_cache", None)
    if callable(flush):
        flush()
