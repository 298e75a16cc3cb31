"""The extension API: every type a user needs to write, or type, a component of ``four``.

A component is a plain function (or an object with ``__call__``) of the right shape;
nothing needs to inherit from anything. These are the shapes, as Protocols that
``mypy --strict`` checks (the returns plugin is not needed)::

    from returns.result import Failure, Result, Success
    from four.types import Action, Execute, ExecutionError, Observation, Submitted

    def echo_env(action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return Success(Observation(action.command, returncode=0))

    V2: Execute = echo_env          # checked by mypy

The Protocols and records: docs/loop.md.
"""

from four._events import ActionRan, Event, Judged, ModelCalled, RunBegan, RunEnded
from four._grammar import Alt, Chars, Constrained, Grammar, Lit, Ref, Rep, Seq
from four._outcomes import Component, Outcome
from four._types import (
    EXIT_SIGNAL,
    JSON,
    Action,
    Assistant,
    AsyncCloseable,
    AsyncExecute,
    AsyncInvoke,
    AsyncSink,
    Closeable,
    CycleBreak,
    Emit,
    Execute,
    ExecutionError,
    Feedback,
    FinishReason,
    FormatError,
    Invoke,
    Judge,
    Message,
    ModelError,
    ModelErrorKind,
    Observation,
    Parse,
    Recorder,
    Rejected,
    Reply,
    RunInfo,
    RunStats,
    Sampled,
    Sampling,
    Sink,
    Submitted,
    System,
    ToolCall,
    ToolResult,
    ToolResultKind,
    Usage,
    User,
    UserKind,
    Verify,
    Watch,
)

__all__ = [
    "EXIT_SIGNAL",
    "JSON",
    "Action",
    "ActionRan",
    "Alt",
    "Assistant",
    "AsyncCloseable",
    "AsyncExecute",
    "AsyncInvoke",
    "AsyncSink",
    "Chars",
    "Closeable",
    "Component",
    "Constrained",
    "CycleBreak",
    "Emit",
    "Event",
    "Execute",
    "ExecutionError",
    "Feedback",
    "FinishReason",
    "FormatError",
    "Grammar",
    "Invoke",
    "Judge",
    "Judged",
    "Lit",
    "Message",
    "ModelCalled",
    "ModelError",
    "ModelErrorKind",
    "Observation",
    "Outcome",
    "Parse",
    "Recorder",
    "Ref",
    "Rejected",
    "Rep",
    "Reply",
    "RunBegan",
    "RunEnded",
    "RunInfo",
    "RunStats",
    "Sampled",
    "Sampling",
    "Seq",
    "Sink",
    "Submitted",
    "System",
    "ToolCall",
    "ToolResult",
    "ToolResultKind",
    "Usage",
    "User",
    "UserKind",
    "Verify",
    "Watch",
]
