"""G: invokes that turn a history into the model's reply: models (``litellm_invoke``,
``http_response_invoke``, ``local_invoke``...) and wrappers, each a G of a G (the typical
stack, outermost first, and each G's settings: docs/components.md)."""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # the names, each once (loaded on first use)
    from four.invoke._budget import BudgetInvoke as BudgetInvoke
    from four.invoke._budget import budget_invoke as budget_invoke
    from four.invoke._budget import spent as spent
    from four.invoke._chat import AsyncLitellmInvoke as AsyncLitellmInvoke
    from four.invoke._chat import LitellmInvoke as LitellmInvoke
    from four.invoke._chat import alitellm_invoke as alitellm_invoke
    from four.invoke._chat import alitellm_toolcall_invoke as alitellm_toolcall_invoke
    from four.invoke._chat import litellm_invoke as litellm_invoke
    from four.invoke._chat import litellm_toolcall_invoke as litellm_toolcall_invoke
    from four.invoke._context import ContextAwareInvoke as ContextAwareInvoke
    from four.invoke._context import LitellmCounter as LitellmCounter
    from four.invoke._context import SummarizingInvoke as SummarizingInvoke
    from four.invoke._context import context_aware_invoke as context_aware_invoke
    from four.invoke._context import summarizing_invoke as summarizing_invoke
    from four.invoke._convert import BASH_TOOL as BASH_TOOL
    from four.invoke._convert import to_chat as to_chat
    from four.invoke._convert import to_responses_input as to_responses_input
    from four.invoke._cycles import CycleBreakingInvoke as CycleBreakingInvoke
    from four.invoke._cycles import cycle_breaking_invoke as cycle_breaking_invoke
    from four.invoke._local import LocalInvoke as LocalInvoke
    from four.invoke._local import LocalServer as LocalServer
    from four.invoke._local import local_invoke as local_invoke
    from four.invoke._local import stop_local_servers as stop_local_servers
    from four.invoke._responses import ResponsesInvoke as ResponsesInvoke
    from four.invoke._responses import http_response_invoke as http_response_invoke
    from four.invoke._retry import RetryInvoke as RetryInvoke
    from four.invoke._retry import retry_invoke as retry_invoke
    from four.invoke._scripted import ScriptedInvoke as ScriptedInvoke
    from four.invoke._scripted import replay_invoke as replay_invoke
    from four.invoke._scripted import scripted_invoke as scripted_invoke

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
