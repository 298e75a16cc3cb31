"""four: an LLM agent as a loop of four typed functions.

    G (invoke)  : history -> Result[Reply, ModelError]
    V1 (parse)  : Reply   -> Result[actions, FormatError | Submitted]
    V2 (execute): Action  -> Result[Observation, Submitted | ExecutionError]
    emit        : (history, Outcome) -> T

``import four`` never imports litellm. The types a user needs to write a component of
their own are in ``four.types``.
"""

from typing import TYPE_CHECKING

from four._lazy import lazy
from four._outcomes import (
    Accepted,
    Blocked,
    CostLimitReached,
    Crashed,
    ExecutionFailed,
    Finished,
    Held,
    Interrupted,
    ModelFailed,
    Outcome,
    RepeatedFormatError,
    Stalled,
    StepsExhausted,
    Stopped,
    TimeLimitReached,
)
from four._types import (
    Action,
    Assistant,
    Emit,
    Execute,
    ExecutionError,
    Feedback,
    FormatError,
    Invoke,
    Message,
    ModelError,
    ModelErrorKind,
    Observation,
    Parse,
    Rejected,
    Reply,
    Submitted,
    System,
    ToolCall,
    ToolResult,
    Usage,
    User,
)

if TYPE_CHECKING:  # run and the components load on first use, so `import four` stays cheap
    from four._loop import arun, run
    from four.batch import RayPool, RunContext, RunResult, ThreadPool, iter_runs, run_many
    from four.checks import Claim, all_of, audit, command_check, file_check, verify
    from four.execute import docker_env, local_env, sandbox_env, shell_env, super_env
    from four.invoke import (
        alitellm_invoke,
        alitellm_toolcall_invoke,
        budget_invoke,
        context_aware_invoke,
        http_response_invoke,
        litellm_invoke,
        litellm_toolcall_invoke,
        local_invoke,
        replay_invoke,
        retry_invoke,
        scripted_invoke,
        summarizing_invoke,
    )
    from four.parse import regex_parse, toolcall_parse
    from four.trajectory import Trajectory, load_trajectory, save_trajectory

__version__ = "0.1.0"

_LAZY = {
    "run": "four._loop",
    "arun": "four._loop",
    "RayPool": "four.batch",
    "RunContext": "four.batch",
    "RunResult": "four.batch",
    "ThreadPool": "four.batch",
    "iter_runs": "four.batch",
    "run_many": "four.batch",
    "docker_env": "four.execute",
    "sandbox_env": "four.execute",
    "alitellm_invoke": "four.invoke",
    "alitellm_toolcall_invoke": "four.invoke",
    "budget_invoke": "four.invoke",
    "context_aware_invoke": "four.invoke",
    "http_response_invoke": "four.invoke",
    "litellm_invoke": "four.invoke",
    "litellm_toolcall_invoke": "four.invoke",
    "local_invoke": "four.invoke",
    "retry_invoke": "four.invoke",
    "summarizing_invoke": "four.invoke",
    "local_env": "four.execute",
    "shell_env": "four.execute",
    "super_env": "four.execute",
    "regex_parse": "four.parse",
    "toolcall_parse": "four.parse",
    "replay_invoke": "four.invoke",
    "scripted_invoke": "four.invoke",
    "Trajectory": "four.trajectory",
    "load_trajectory": "four.trajectory",
    "save_trajectory": "four.trajectory",
    "Claim": "four.checks",
    "all_of": "four.checks",
    "audit": "four.checks",
    "command_check": "four.checks",
    "file_check": "four.checks",
    "verify": "four.checks",
}


__all__ = [
    "Accepted",
    "Action",
    "Assistant",
    "Blocked",
    "Claim",
    "CostLimitReached",
    "Crashed",
    "Emit",
    "Execute",
    "ExecutionError",
    "ExecutionFailed",
    "Feedback",
    "Finished",
    "FormatError",
    "Held",
    "Interrupted",
    "Invoke",
    "Message",
    "ModelError",
    "ModelErrorKind",
    "ModelFailed",
    "Observation",
    "Outcome",
    "Parse",
    "RayPool",
    "Rejected",
    "RepeatedFormatError",
    "Reply",
    "RunContext",
    "RunResult",
    "Stalled",
    "StepsExhausted",
    "Stopped",
    "Submitted",
    "System",
    "ThreadPool",
    "TimeLimitReached",
    "ToolCall",
    "ToolResult",
    "Trajectory",
    "Usage",
    "User",
    "alitellm_invoke",
    "alitellm_toolcall_invoke",
    "all_of",
    "arun",
    "audit",
    "budget_invoke",
    "command_check",
    "context_aware_invoke",
    "docker_env",
    "file_check",
    "http_response_invoke",
    "iter_runs",
    "litellm_invoke",
    "litellm_toolcall_invoke",
    "load_trajectory",
    "local_env",
    "local_invoke",
    "regex_parse",
    "replay_invoke",
    "retry_invoke",
    "run",
    "run_many",
    "sandbox_env",
    "save_trajectory",
    "scripted_invoke",
    "shell_env",
    "summarizing_invoke",
    "super_env",
    "toolcall_parse",
    "verify",
]

__getattr__, __dir__ = lazy("four", _LAZY, __all__)
