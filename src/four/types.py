"""The extension API: every type a user needs to write, or type, a component of ``four``
(a plain function of the right shape: the Protocols and records, docs/loop.md)."""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # the names, each once (loaded on first use)
    from four._grammar import Alt as Alt
    from four._grammar import Chars as Chars
    from four._grammar import Constrained as Constrained
    from four._grammar import Grammar as Grammar
    from four._grammar import Lit as Lit
    from four._grammar import Ref as Ref
    from four._grammar import Rep as Rep
    from four._grammar import Seq as Seq
    from four._loop import LoopOptions as LoopOptions
    from four._outcomes import Component as Component
    from four._outcomes import Outcome as Outcome
    from four._types import EXIT_SIGNAL as EXIT_SIGNAL
    from four._types import JSON as JSON
    from four._types import Action as Action
    from four._types import ActionRan as ActionRan
    from four._types import Assistant as Assistant
    from four._types import AsyncCloseable as AsyncCloseable
    from four._types import AsyncExecute as AsyncExecute
    from four._types import AsyncInvoke as AsyncInvoke
    from four._types import AsyncSink as AsyncSink
    from four._types import Closeable as Closeable
    from four._types import CycleBreak as CycleBreak
    from four._types import Emit as Emit
    from four._types import Event as Event
    from four._types import Execute as Execute
    from four._types import ExecutionError as ExecutionError
    from four._types import Feedback as Feedback
    from four._types import FinishReason as FinishReason
    from four._types import FormatError as FormatError
    from four._types import Invoke as Invoke
    from four._types import Judge as Judge
    from four._types import Judged as Judged
    from four._types import Message as Message
    from four._types import ModelCalled as ModelCalled
    from four._types import ModelError as ModelError
    from four._types import ModelErrorKind as ModelErrorKind
    from four._types import Observation as Observation
    from four._types import Parse as Parse
    from four._types import Recorder as Recorder
    from four._types import Rejected as Rejected
    from four._types import Reply as Reply
    from four._types import RunBegan as RunBegan
    from four._types import RunEnded as RunEnded
    from four._types import RunInfo as RunInfo
    from four._types import RunStats as RunStats
    from four._types import Sampled as Sampled
    from four._types import Sampling as Sampling
    from four._types import Sink as Sink
    from four._types import Submitted as Submitted
    from four._types import System as System
    from four._types import ToolCall as ToolCall
    from four._types import ToolResult as ToolResult
    from four._types import ToolResultKind as ToolResultKind
    from four._types import Usage as Usage
    from four._types import User as User
    from four._types import UserKind as UserKind
    from four._types import Verify as Verify
    from four._types import Watch as Watch

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
