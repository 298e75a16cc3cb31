"""G over litellm: any litellm model string, or any OpenAI-compatible server via ``api_base``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, ParamSpec

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import checked
from four._secrets import is_secret
from four._types import (
    JSON,
    Assistant,
    Checked,
    Message,
    ModelError,
    ModelErrorKind,
    Reply,
    Sampling,
    ToolCall,
    Usage,
    finish_reason,
)
from four.invoke._convert import to_chat, with_bash
from four.invoke._errors import classify_litellm
from four.invoke._lazy import close_async_clients, litellm_module

DEFAULT_TIMEOUT: Final = 600.0
"""Seconds per request (litellm's own default is 6000); the OpenAI SDK's default too."""

_THINKING_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai", "vertex_ai_beta"})

Prices = tuple[float, float]
"""USD per prompt token and per completion token."""


@dataclass(frozen=True, slots=True)
class LitellmInvoke(Checked):
    """G that sends the history to ``litellm.completion`` and reads the reply, one request
    a call (docs/components.md)."""

    model: str
    tools: tuple[Mapping[str, JSON], ...] = ()
    api_base: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    prices: Prices | None = None
    cache_control: bool = False
    kwargs: Mapping[str, object] = field(default_factory=dict)
    api_key: str | None = field(default=None, repr=False)
    secrets: Mapping[str, object] = field(default_factory=dict, repr=False)
    send_thinking: bool | None = None

    @property
    def sends_thinking(self) -> bool:
        """Whether thinking blocks go back: ``send_thinking``, or by default for providers
        that sign them (Anthropic, Bedrock, Vertex AI): others may reject the unknown key."""
        if self.send_thinking is not None:
            return self.send_thinking
        provider = self.model.split("/", 1)[0] if "/" in self.model else ""
        return provider in _THINKING_PROVIDERS or self.model.startswith("claude")

    @property
    def sampling(self) -> Sampling:
        """The temperature and seed sent (None: the provider's default, no seed)."""
        temperature, seed = self.kwargs.get("temperature"), self.kwargs.get("seed")
        return Sampling(
            float(temperature) if isinstance(temperature, int | float) else None,
            seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        )

    def sampled(self, sampling: Sampling, /) -> LitellmInvoke:
        """This G sending ``sampling``'s temperature and seed, each where the provider
        takes it (litellm's list of its parameters: Anthropic takes no seed)."""
        litellm = litellm_module()
        try:
            name, provider, _, _ = litellm.get_llm_provider(self.model)
            takes = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
        except Exception:  # a model litellm cannot place: send neither
            takes = ()
        kwargs = dict(self.kwargs)
        for name, value in (("temperature", sampling.temperature), ("seed", sampling.seed)):
            if value is not None and name in (takes or ()):
                kwargs[name] = value
        return replace(self, kwargs=kwargs)

    def request(self, messages: Sequence[Message]) -> dict[str, object]:
        """The keyword arguments of the ``litellm.completion`` call for ``messages``."""
        request: dict[str, object] = {
            **self.kwargs,
            **self.secrets,
            "model": self.model,
            "messages": to_chat(messages, self.cache_control, self.sends_thinking),
            "timeout": self.timeout,
            "max_retries": 0,  # the OpenAI SDK's retries
            "num_retries": 0,  # litellm's own
        }
        if self.tools:
            request["tools"] = [dict(t) for t in self.tools]
        optional = {"api_base": self.api_base, "api_key": self.api_key}
        return request | {name: value for name, value in optional.items() if value is not None}

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        litellm = litellm_module()
        try:
            response = litellm.completion(**self.request(messages))
        except Exception as exc:
            return Failure(classify_litellm(exc))
        return self.read(response)

    def read(self, response: object) -> Result[Reply, ModelError]:
        """The reply in ``response`` (tool calls kept only when tools were offered)."""
        offered = bool(self.tools) or "tools" in self.kwargs
        return read_chat(response, self.model, self.prices, keep_tool_calls=offered)


@dataclass(frozen=True, slots=True)
class AsyncLitellmInvoke(Checked):
    """``invoke``, awaited: the same request through ``litellm.acompletion``, for ``arun``."""

    invoke: LitellmInvoke

    @property
    def sampling(self) -> Sampling:
        return self.invoke.sampling

    def sampled(self, sampling: Sampling, /) -> AsyncLitellmInvoke:
        """The awaited ``invoke.sampled(sampling)``."""
        return AsyncLitellmInvoke(self.invoke.sampled(sampling))

    async def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        litellm = litellm_module()
        try:
            response = await litellm.acompletion(**self.invoke.request(messages))
        except Exception as exc:
            return Failure(classify_litellm(exc))
        return self.invoke.read(response)

    async def aclose(self) -> None:
        """Close the HTTP clients litellm made on this event loop: call it before the loop ends
        (``four.testing``'s async laws and ``AsyncPool`` do), or their sockets stay open."""
        await close_async_clients()


def litellm_invoke(
    model: str,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    prices: Prices | None = None,
    cache_control: bool = False,
    send_thinking: bool | None = None,
    **kwargs: object,
) -> LitellmInvoke:
    """G for plain text replies, through litellm (imported at the first call); the
    settings: docs/components.md.

    >>> G = litellm_invoke("openai/qwen", api_base="http://127.0.0.1:8080/v1", temperature=0)
    >>> G.kwargs
    {'temperature': 0}
    """
    check.model_options("litellm_invoke", model, api_base, api_key, timeout, prices)
    public = {k: v for k, v in kwargs.items() if not is_secret(k)}
    secret = {k: v for k, v in kwargs.items() if is_secret(k)}
    return LitellmInvoke(
        model, (), api_base, timeout, prices, cache_control, public, api_key, secret, send_thinking
    )


def litellm_toolcall_invoke(
    model: str,
    *,
    tools: Sequence[Mapping[str, JSON]] = (),
    bash_tool: bool = True,
    api_base: str | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    prices: Prices | None = None,
    cache_control: bool = False,
    send_thinking: bool | None = None,
    **kwargs: object,
) -> LitellmInvoke:
    """G for tool-call replies: the calls land in ``Assistant.tool_calls``, text kept; a
    ``bash`` tool plus the caller's ``tools``. Other arguments as ``litellm_invoke``.

    >>> G = litellm_toolcall_invoke("anthropic/claude-sonnet-4-5", max_tokens=4096)
    >>> [t["function"]["name"] for t in G.tools]
    ['bash']
    """
    check.model_options("litellm_toolcall_invoke", model, api_base, api_key, timeout, prices)
    check.flag("litellm_toolcall_invoke", "bash_tool", bash_tool)
    G = litellm_invoke(
        model,
        api_base=api_base,
        api_key=api_key,
        timeout=timeout,
        prices=prices,
        cache_control=cache_control,
        send_thinking=send_thinking,
        **kwargs,
    )
    return replace(G, tools=with_bash(tools) if bash_tool else tuple(tools))


# --- reading litellm's reply (Any at the boundary) into our records ---------------


def read_chat(
    response: object, model: str, prices: Prices | None, *, keep_tool_calls: bool = True
) -> Result[Reply, ModelError]:
    """A litellm ``ModelResponse`` as our ``Assistant``, or an error if it has no choice."""
    raw = getattr(response, "usage", None)
    hidden = getattr(response, "_hidden_params", None)
    known = hidden.get("response_cost") if isinstance(hidden, dict) else None
    tokens = getattr(raw, "prompt_tokens", None), getattr(raw, "completion_tokens", None)
    usage = Usage(0, 0, None) if raw is None else usage_of(*tokens, prices, known)
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        return Failure(ModelError(ModelErrorKind.SERVER, "the reply has no choices", usage=usage))
    choice = choices[0]
    message = getattr(choice, "message", None)
    calls = getattr(message, "tool_calls", None) if keep_tool_calls else None
    finish = getattr(choice, "finish_reason", None)
    served = getattr(response, "model", None)
    return Success(
        Assistant(
            _text(getattr(message, "content", None)),
            tuple(_tool_call(c) for c in calls or ()),
            _text(getattr(message, "reasoning_content", None)),
            tuple(_block(b) for b in getattr(message, "thinking_blocks", None) or ()),
            finish_reason(finish),
            usage,
            served if isinstance(served, str) and served else model,
        )
    )


def usage_of(prompt: object, completion: object, prices: Prices | None, cost: object) -> Usage:
    """The tokens a provider reported, and their cost: at ``prices`` if given, else
    ``cost`` as the provider reported it (None if it did not).

    >>> round(usage_of(1000, 100, (3e-06, 1.5e-05), None).cost, 6)
    0.0045
    """
    p, c = (
        n if isinstance(n, int) and not isinstance(n, bool) else 0 for n in (prompt, completion)
    )
    if prices is not None:
        return Usage(p, c, p * prices[0] + c * prices[1])
    known = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    return Usage(p, c, known)


def _tool_call(raw: object) -> ToolCall:
    function = getattr(raw, "function", None)
    return tool_call(
        getattr(raw, "id", None),
        getattr(function, "name", None),
        getattr(function, "arguments", None),
    )


def tool_call(call_id: object, name: object, arguments: object) -> ToolCall:
    """A provider's tool call as ours: an id made when it has none, the arguments as JSON
    text (a client may have decoded them)."""
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else f"call_{uuid.uuid4().hex[:24]}",
        name if isinstance(name, str) else "",
        arguments if isinstance(arguments, str) else json.dumps(to_json(arguments)),
    )


def _block(raw: object) -> Mapping[str, JSON]:
    value = to_json(raw)
    return value if isinstance(value, dict) else {"type": "unknown", "value": value}


def to_json(value: object) -> JSON:
    """A provider object (dict, list, pydantic model) as plain JSON values."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return to_json(dump())
    return str(value)


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        texts = (
            p.get("text") if isinstance(p, Mapping) else getattr(p, "text", None) for p in value
        )
        return "".join(t for t in texts if isinstance(t, str))
    return ""


P = ParamSpec("P")


def _awaited(make: Callable[P, LitellmInvoke]) -> Callable[P, AsyncLitellmInvoke]:
    def made(*args: P.args, **kwargs: P.kwargs) -> AsyncLitellmInvoke:
        return AsyncLitellmInvoke(make(*args, **kwargs))

    made.__name__ = made.__qualname__ = f"a{make.__name__}"
    made.__wrapped__ = make  # type: ignore[attr-defined]  # its signature is make's
    made.__doc__ = (
        f"``{make.__name__}``, awaited (``litellm.acompletion``), for ``arun``; the same "
        f"arguments.\n\n    >>> G = a{make.__name__}('openai/gpt-4o')\n"
    )
    return made


alitellm_invoke = _awaited(litellm_invoke)
alitellm_toolcall_invoke = _awaited(litellm_toolcall_invoke)
