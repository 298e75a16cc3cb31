"""A run as spans in the OpenTelemetry GenAI conventions: plain records, no SDK.

The live watch (``_watch``) and the export of saved runs (``_saved``) both describe a
step by the same facts (``Chat``, ``Tool``, ``Verdicts``) and turn them into spans here,
so a saved run exported later gives the tree the live run gave.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from four._checked import checked
from four._outcomes import outcome_tag
from four._types import JSON, Assistant, Message, System, ToolResult, Usage, User

SEMCONV = "1.44.0"
"""The version of the semantic conventions the spans follow (GenAI: in development),
as in ``opentelemetry-semantic-conventions`` 0.66b."""
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV}"
AGENT = "four"

Value: TypeAlias = str | bool | int | float | tuple[str, ...]
Kind: TypeAlias = Literal["internal", "client"]

SUCCEEDED = frozenset({"exit:task_complete", "accepted"})
"""Outcomes whose run span has status OK; every other is an error named by its tag."""
_TOLD_BY_TAG = frozenset({"held", "blocked"})
"""Outcomes whose text carries the check's words: their status says only the tag (the
text is in the trajectory; what the check says goes out as its feedback level allows)."""

SCORES: Mapping[str, float] = {"YES": 1.0, "NO": 0.0}
"""Score values of verdicts; MAYBE and IFF (not decided yet) have a label only."""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    time: float
    attributes: Mapping[str, Value]


@dataclass(frozen=True, slots=True)
class Span:
    """One span, its times in seconds since the epoch; ``error`` sets status ERROR with
    that description, ``ok`` status OK (else the status is unset)."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start: float
    end: float
    kind: Kind
    attributes: Mapping[str, Value]
    events: tuple[SpanEvent, ...] = ()
    error: str | None = None
    ok: bool = False


@dataclass(frozen=True, slots=True)
class Agent:
    """The run's fixed facts: its trace, its span, its model, where content goes."""

    trace_id: int
    span_id: int
    started: float
    model: str
    provider: str
    content: bool


@dataclass(frozen=True, slots=True)
class Chat:
    """One model call: its reply, or its error (``error`` a ``ModelErrorKind``)."""

    span_id: int
    start: float
    end: float
    reply: Assistant | None
    error: str | None = None
    detail: str = ""
    inputs: Sequence[Message] = ()


@dataclass(frozen=True, slots=True)
class Tool:
    """One action: its command and call, exit code and output, or why it failed
    (``timeout``, ``execution_error``)."""

    span_id: int
    start: float
    end: float
    command: str
    call_id: str | None
    name: str
    returncode: int | None
    output: str | None
    error: str | None = None
    detail: str = ""


@checked
def step_span_id(trace_id: int, step: int) -> int:
    """The span id of the run's step ``step`` (its index in the trajectory's
    ``stats.otel.steps``): the first 8 bytes of the SHA-256 of the trace id (16 bytes)
    and the index (8 bytes), big-endian; 1 for 0. Live and exported alike, and for any
    reader of the trajectory, with nothing kept per step.

    >>> f"{step_span_id(1, 0):016x}"
    '71faa70e1da00be5'
    """
    data = trace_id.to_bytes(16, "big") + step.to_bytes(8, "big")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big") or 1


def agent_of(
    components: Mapping[str, JSON], started: float, trace_id: int, span_id: int, content: bool
) -> Agent:
    """A run's ``Agent``: its model and provider read off its G's recorded settings."""
    G = components.get("G")
    settings = G if isinstance(G, dict) else {}
    model = settings.get("model")
    name = settings.get("name")
    model_name = model if isinstance(model, str) else ""
    component = name if isinstance(name, str) and not model_name else ""
    return Agent(
        trace_id, span_id, started, model_name, provider_of(model_name, component), content
    )


def chat_span(agent: Agent, chat: Chat) -> Span:
    """A ``chat {model}`` span: the request, the reply's usage and finish reason, or the
    error's kind as ``error.type``."""
    reply = chat.reply
    model = agent.model or (reply.model if reply is not None else "")
    attributes: dict[str, Value] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": agent.provider,
        "gen_ai.request.model": model,
    }
    if reply is not None:
        if reply.model:
            attributes["gen_ai.response.model"] = reply.model
        if reply.finish_reason is not None:
            attributes["gen_ai.response.finish_reasons"] = (reply.finish_reason,)
        if reply.usage is not None:
            attributes["gen_ai.usage.input_tokens"] = reply.usage.prompt_tokens
            attributes["gen_ai.usage.output_tokens"] = reply.usage.completion_tokens
        if agent.content:
            attributes["gen_ai.output.messages"] = _json([_part_message(reply)])
    if chat.error is not None:
        attributes["error.type"] = chat.error
    if agent.content and chat.inputs:
        system = [m.content for m in chat.inputs if isinstance(m, System)]
        if system:
            attributes["gen_ai.system_instructions"] = _json(
                [{"type": "text", "content": text} for text in system]
            )
        messages: list[JSON] = [_part_message(m) for m in chat.inputs if not isinstance(m, System)]
        attributes["gen_ai.input.messages"] = _json(messages)
    return Span(
        f"chat {model}".rstrip(), agent.trace_id, chat.span_id, agent.span_id,
        chat.start, chat.end, "client", attributes,
        error=None if chat.error is None else chat.detail or chat.error,
    )  # fmt: skip


def tool_span(agent: Agent, tool: Tool) -> Span:
    """An ``execute_tool {name}`` span: the command, its exit code (``process.exit.code``),
    a timeout or a broken environment as an error."""
    attributes: dict[str, Value] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool.name,
        "gen_ai.tool.type": "function",
        "four.command": tool.command,
    }
    if tool.call_id:
        attributes["gen_ai.tool.call.id"] = tool.call_id
    if tool.returncode is not None:
        attributes["process.exit.code"] = tool.returncode
    if tool.error is not None:
        attributes["error.type"] = tool.error
    if agent.content and tool.output is not None:
        attributes["gen_ai.tool.call.result"] = tool.output
    return Span(
        f"execute_tool {tool.name}", agent.trace_id, tool.span_id, agent.span_id,
        tool.start, tool.end, "internal", attributes,
        error=None if tool.error is None else tool.detail or tool.error,
    )  # fmt: skip


def evaluations(log: Sequence[JSON], at: float) -> list[SpanEvent]:
    """The verdicts of one judgement (entries of the judge's log) as
    ``gen_ai.evaluation.result`` events: the verdict as the score's label, and as its
    explanation only what the check's feedback level lets be shown.

    >>> [e.attributes["gen_ai.evaluation.score.label"] for e in evaluations(
    ...     [{"verdict": "NO", "shown": "failure 1"}, {"verdict": "YES"}], 0.0)]
    ['NO', 'YES']
    """
    events: list[SpanEvent] = []
    for entry in log:
        if not isinstance(entry, dict) or not isinstance(verdict := entry.get("verdict"), str):
            continue
        attributes: dict[str, Value] = {
            "gen_ai.evaluation.name": "four.check",
            "gen_ai.evaluation.score.label": verdict,
        }
        if verdict in SCORES:
            attributes["gen_ai.evaluation.score.value"] = SCORES[verdict]
        if isinstance(shown := entry.get("shown"), str) and shown:
            attributes["gen_ai.evaluation.explanation"] = shown
        if isinstance(action := entry.get("action"), str):
            attributes["four.check.action"] = action
        if entry.get("judged_at_end"):
            attributes["four.check.at_end"] = True
        events.append(SpanEvent("gen_ai.evaluation.result", at, attributes))
    return events


def agent_span(
    agent: Agent,
    end: float,
    outcome: str,
    steps: int,
    usage: Usage,
    events: Sequence[SpanEvent],
) -> Span:
    """The run's ``invoke_agent four`` span: its outcome as status and ``four.outcome``,
    its steps and its usage, and the check's verdicts as its events."""
    tag = outcome_tag(outcome)
    attributes: dict[str, Value] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT,
        "gen_ai.provider.name": agent.provider,
        "gen_ai.request.model": agent.model,
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "four.outcome": tag,
        "four.steps": steps,
    }
    ok = tag in SUCCEEDED
    if not ok:
        attributes["error.type"] = tag
    return Span(
        f"invoke_agent {AGENT}", agent.trace_id, agent.span_id, None, agent.started, end,
        "internal", attributes, tuple(events),
        error=None if ok else (tag if tag in _TOLD_BY_TAG else outcome), ok=ok,
    )  # fmt: skip


_PROVIDERS = {
    "anthropic": "anthropic",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "cohere": "cohere",
    "deepseek": "deepseek",
    "gemini": "gcp.gemini",
    "groq": "groq",
    "mistral": "mistral_ai",
    "openai": "openai",
    "perplexity": "perplexity",
    "vertex_ai": "gcp.vertex_ai",
    "watsonx": "ibm.watsonx.ai",
    "xai": "x_ai",
}


def provider_of(model: str, component: str = "") -> str:
    """``gen_ai.provider.name`` for a model as litellm names it (its prefix), or for
    four's own G (``scripted``, ``local``).

    >>> provider_of("anthropic/claude-sonnet-4"), provider_of("gpt-4o"), provider_of("", "local")
    ('anthropic', 'openai', 'four.local')
    """
    prefix, slash, _ = model.partition("/")
    if slash and prefix in _PROVIDERS:
        return _PROVIDERS[prefix]
    if component:
        return f"four.{component}"
    if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
        return "openai"
    return prefix if slash else "unknown"


# --- content, in the conventions' message shape (only when content capture is on) ------


def _part_message(message: Message) -> dict[str, JSON]:
    if isinstance(message, Assistant):
        parts: list[JSON] = []
        if message.reasoning:
            parts.append({"type": "reasoning", "content": message.reasoning})
        if message.content:
            parts.append({"type": "text", "content": message.content})
        parts.extend(
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
            for c in message.tool_calls
        )
        shaped: dict[str, JSON] = {"role": "assistant", "parts": parts}
        if message.finish_reason is not None:
            shaped["finish_reason"] = message.finish_reason
        return shaped
    if isinstance(message, ToolResult):
        response = {"type": "tool_call_response", "id": message.tool_call_id}
        return {"role": "tool", "parts": [{**response, "response": message.content}]}
    role = "user" if isinstance(message, User) else "system"
    return {"role": role, "parts": [{"type": "text", "content": message.content}]}


def _json(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
