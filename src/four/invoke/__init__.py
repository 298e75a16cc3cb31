"""G: invokes that turn a history into the model's reply: models (``litellm_invoke``,
``http_response_invoke``, ``local_invoke``...) and wrappers, each a G of a G (the typical
stack, outermost first, and each G's settings: docs/components.md)."""

from four.invoke._budget import BudgetInvoke, budget_invoke, spent
from four.invoke._chat import (
    AsyncLitellmInvoke,
    LitellmInvoke,
    alitellm_invoke,
    alitellm_toolcall_invoke,
    litellm_invoke,
    litellm_toolcall_invoke,
)
from four.invoke._context import (
    ContextAwareInvoke,
    LitellmCounter,
    SummarizingInvoke,
    context_aware_invoke,
    summarizing_invoke,
)
from four.invoke._convert import BASH_TOOL, to_chat, to_responses_input
from four.invoke._cycles import CycleBreakingInvoke, cycle_breaking_invoke
from four.invoke._local import LocalInvoke, LocalServer, local_invoke, stop_local_servers
from four.invoke._responses import ResponsesInvoke, http_response_invoke
from four.invoke._retry import RetryInvoke, retry_invoke
from four.invoke._scripted import ScriptedInvoke, replay_invoke, scripted_invoke

__all__ = [
    "BASH_TOOL",
    "AsyncLitellmInvoke",
    "BudgetInvoke",
    "ContextAwareInvoke",
    "CycleBreakingInvoke",
    "LitellmCounter",
    "LitellmInvoke",
    "LocalInvoke",
    "LocalServer",
    "ResponsesInvoke",
    "RetryInvoke",
    "ScriptedInvoke",
    "SummarizingInvoke",
    "alitellm_invoke",
    "alitellm_toolcall_invoke",
    "budget_invoke",
    "context_aware_invoke",
    "cycle_breaking_invoke",
    "http_response_invoke",
    "litellm_invoke",
    "litellm_toolcall_invoke",
    "local_invoke",
    "replay_invoke",
    "retry_invoke",
    "scripted_invoke",
    "spent",
    "stop_local_servers",
    "summarizing_invoke",
    "to_chat",
    "to_responses_input",
]
