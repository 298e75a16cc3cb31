"""four: an LLM agent as a loop of four typed functions (README.md, docs/loop.md).

``import four`` loads none of its names (``_lazy``), and never litellm; the types a
component of your own needs are in ``four.types``.
"""

from typing import TYPE_CHECKING

from four._lazy import lazy

if TYPE_CHECKING:  # the public names, each once (loaded on first use)
    from four._loop import arun as arun
    from four._loop import run as run
    from four._outcomes import Accepted as Accepted
    from four._outcomes import Blocked as Blocked
    from four._outcomes import CostLimitReached as CostLimitReached
    from four._outcomes import Crashed as Crashed
    from four._outcomes import ExecutionFailed as ExecutionFailed
    from four._outcomes import Finished as Finished
    from four._outcomes import Held as Held
    from four._outcomes import Interrupted as Interrupted
    from four._outcomes import ModelFailed as ModelFailed
    from four._outcomes import Outcome as Outcome
    from four._outcomes import RepeatedFormatError as RepeatedFormatError
    from four._outcomes import Stalled as Stalled
    from four._outcomes import StepsExhausted as StepsExhausted
    from four._outcomes import Stopped as Stopped
    from four._outcomes import TimeLimitReached as TimeLimitReached
    from four._types import Action as Action
    from four._types import Assistant as Assistant
    from four._types import Emit as Emit
    from four._types import Execute as Execute
    from four._types import ExecutionError as ExecutionError
    from four._types import Feedback as Feedback
    from four._types import FormatError as FormatError
    from four._types import Invoke as Invoke
    from four._types import Message as Message
    from four._types import ModelError as ModelError
    from four._types import ModelErrorKind as ModelErrorKind
    from four._types import Observation as Observation
    from four._types import Parse as Parse
    from four._types import Rejected as Rejected
    from four._types import Reply as Reply
    from four._types import Submitted as Submitted
    from four._types import System as System
    from four._types import ToolCall as ToolCall
    from four._types import ToolResult as ToolResult
    from four._types import Usage as Usage
    from four._types import User as User
    from four.batch import RayPool as RayPool
    from four.batch import RunContext as RunContext
    from four.batch import RunResult as RunResult
    from four.batch import ThreadPool as ThreadPool
    from four.batch import iter_runs as iter_runs
    from four.batch import run_many as run_many
    from four.checks import Claim as Claim
    from four.checks import all_of as all_of
    from four.checks import audit as audit
    from four.checks import command_check as command_check
    from four.checks import file_check as file_check
    from four.checks import verify as verify
    from four.execute import docker_env as docker_env
    from four.execute import local_env as local_env
    from four.execute import sandbox_env as sandbox_env
    from four.execute import shell_env as shell_env
    from four.execute import super_env as super_env
    from four.invoke import alitellm_invoke as alitellm_invoke
    from four.invoke import alitellm_toolcall_invoke as alitellm_toolcall_invoke
    from four.invoke import budget_invoke as budget_invoke
    from four.invoke import context_aware_invoke as context_aware_invoke
    from four.invoke import http_response_invoke as http_response_invoke
    from four.invoke import litellm_invoke as litellm_invoke
    from four.invoke import litellm_toolcall_invoke as litellm_toolcall_invoke
    from four.invoke import local_invoke as local_invoke
    from four.invoke import replay_invoke as replay_invoke
    from four.invoke import retry_invoke as retry_invoke
    from four.invoke import scripted_invoke as scripted_invoke
    from four.invoke import summarizing_invoke as summarizing_invoke
    from four.otel import otel_watch as otel_watch
    from four.parse import regex_parse as regex_parse
    from four.parse import toolcall_parse as toolcall_parse
    from four.trajectory import Trajectory as Trajectory
    from four.trajectory import load_trajectory as load_trajectory
    from four.trajectory import save_trajectory as save_trajectory

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy(__name__, __file__)
