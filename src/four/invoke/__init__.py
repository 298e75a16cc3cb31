"""G: invokes that turn a history into the model's reply.

The litellm-based invokes import litellm at their first call, never at import.
"""

from four.invoke._budget import BudgetInvoke, budget_invoke, spent
from four.invoke._context import (
    ContextAwareInvoke,
    LitellmCounter,
    SummarizingInvoke,
    context_aware_invoke,
    summarizing_invoke,
)
from four.invoke._convert import BASH_TOOL, to_chat, to_responses_input
from four.invoke._litellm import LitellmInvoke, litellm_invoke, litellm_toolcall_invoke
from four.invoke._responses import ResponsesInvoke, http_response_invoke
from four.invoke._retry import RetryInvoke, retry_invoke
from four.invoke._scripted import ScriptedInvoke, replay_invoke, scripted_invoke

__all__ = [
    "BASH_TOOL",
    "BudgetInvoke",
    "ContextAwareInvoke",
    "LitellmCounter",
    "LitellmInvoke",
    "ResponsesInvoke",
    "RetryInvoke",
    "ScriptedInvoke",
    "SummarizingInvoke",
    "budget_invoke",
    "context_aware_invoke",
    "http_response_invoke",
    "litellm_invoke",
    "litellm_toolcall_invoke",
    "replay_invoke",
    "retry_invoke",
    "scripted_invoke",
    "spent",
    "summarizing_invoke",
    "to_chat",
    "to_responses_input",
]
