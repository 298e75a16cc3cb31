"""G over the OpenAI Responses API, posted with httpx (imported at the first call): one
POST with a small JSON schema needs neither litellm's 2-3 s import nor its conversions."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import checked
from four._types import (
    JSON,
    Assistant,
    Checked,
    FinishReason,
    Message,
    ModelError,
    ModelErrorKind,
    Reply,
    ToolCall,
    Usage,
)
from four.invoke._chat import DEFAULT_TIMEOUT, Prices, tool_call, usage_of
from four.invoke._convert import responses_tool, to_responses_input, with_bash
from four.invoke._errors import kind_of_status, kind_of_transport, retry_after

if TYPE_CHECKING:
    import httpx

K = ModelErrorKind
_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})


class _Client:
    """One keep-alive httpx client per G, made at the first call."""

    __slots__ = ("_client", "_lock")

    def __init__(self) -> None:
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def get(self) -> httpx.Client:
        with self._lock:  # a lock a call is nothing beside its request
            if self._client is None:
                import httpx

                self._client = httpx.Client()
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    __del__ = close  # a dropped G leaves no open sockets behind


@dataclass(frozen=True, slots=True)
class ResponsesInvoke(Checked):
    """G that posts the history to ``{api_base}/responses`` (see ``http_response_invoke``)."""

    model: str
    api_base: str
    tools: tuple[Mapping[str, JSON], ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    prices: Prices | None = None
    reasoning_items: bool = True
    kwargs: Mapping[str, JSON] = field(default_factory=dict)
    api_key: str | None = field(default=None, repr=False)
    _client: _Client = field(default_factory=_Client, repr=False, compare=False)

    def request(self, messages: Sequence[Message]) -> dict[str, JSON]:
        """The JSON body posted for ``messages``."""
        body: dict[str, JSON] = {
            **self.kwargs,
            "model": self.model,
            "input": list[JSON](to_responses_input(messages, self.reasoning_items)),
        }
        if self.tools:
            body["tools"] = [responses_tool(t) for t in self.tools]
        return body

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = self._client.get().post(
                f"{self.api_base.rstrip('/')}/responses",
                json=self.request(messages),
                headers=headers,
                timeout=self.timeout,
            )
        except Exception as exc:
            kind = kind_of_transport(exc) or K.OTHER
            return Failure(ModelError(kind, f"{type(exc).__name__}: {exc}"))
        return read_response(
            response.status_code,
            response.content,
            {k.lower(): v for k, v in response.headers.items()},
            self.model,
            self.prices,
        )

    def close(self) -> None:
        """Close the keep-alive connections (a new call opens them again)."""
        self._client.close()


def http_response_invoke(
    model: str,
    api_base: str,
    api_key: str | None = None,
    *,
    tools: Sequence[Mapping[str, JSON]] = (),
    bash_tool: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    prices: Prices | None = None,
    reasoning_items: bool = True,
    **kwargs: JSON,
) -> ResponsesInvoke:
    """G for the OpenAI Responses API (OpenAI, vLLM, llama.cpp ``/v1/responses``), stateless:
    the whole history as ``input`` items each call (docs/components.md).

    >>> G = http_response_invoke("gpt-5-mini", "http://127.0.0.1:8080/v1", max_output_tokens=4096)
    >>> G.request([])["tools"][0]["name"]
    'bash'
    """
    check.model_options("http_response_invoke", model, api_base, api_key, timeout, prices)
    check.text("http_response_invoke", "api_base", api_base)
    return ResponsesInvoke(
        model,
        api_base,
        with_bash(tools) if bash_tool else tuple(tools),
        timeout,
        prices,
        reasoning_items,
        dict(kwargs),
        api_key,
    )


def read_response(
    status: int,
    content: bytes,
    headers: Mapping[str, str],
    model: str,
    prices: Prices | None,
) -> Result[Reply, ModelError]:
    """An HTTP answer from a Responses endpoint as our reply, or a typed error."""
    try:
        data: JSON = json.loads(content)
    except ValueError:
        data = None
    body = data if isinstance(data, dict) else {}
    if status >= 400:
        error = body.get("error")
        detail = error if isinstance(error, dict) else {}
        message = detail.get("message")
        context = detail.get("code") in _CONTEXT_CODES
        failed = K.CONTEXT_WINDOW if context else kind_of_status(status) or K.OTHER
        said = message if isinstance(message, str) else content[:500].decode("utf-8", "replace")
        return Failure(ModelError(failed, f"HTTP {status}: {said}", status, retry_after(headers)))
    if not isinstance(data, dict):
        return Failure(ModelError(K.SERVER, f"the reply is not a JSON object: {content[:200]!r}"))
    raw = body.get("usage")
    tokens = (raw.get("input_tokens"), raw.get("output_tokens")) if isinstance(raw, dict) else None
    usage = Usage(0, 0, None) if tokens is None else usage_of(*tokens, prices, None)
    if body.get("status") == "failed":
        why = f"the response failed: {body.get('error')}"
        return Failure(ModelError(K.SERVER, why, usage=usage))
    text: list[str] = []
    reasoning: list[str] = []
    thinking: list[Mapping[str, JSON]] = []
    calls: list[ToolCall] = []
    output = body.get("output")
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            text.extend(_texts(item.get("content"), "output_text"))
        elif kind == "function_call":
            call_id = item.get("call_id") or item.get("id")
            calls.append(tool_call(call_id, item.get("name"), item.get("arguments")))
        elif kind == "reasoning":
            thinking.append(item)
            reasoning.extend(_texts(item.get("summary"), "summary_text"))
            reasoning.extend(_texts(item.get("content"), "reasoning_text"))
    finish: FinishReason = "tool_calls" if calls else "stop"
    if body.get("status") == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        finish = "length" if reason in (None, "max_output_tokens") else "other"
    served = body.get("model")
    return Success(
        Assistant(
            "".join(text),
            tuple(calls),
            "\n".join(reasoning),
            tuple(thinking),
            finish,
            usage,
            served if isinstance(served, str) and served else model,
        )
    )


def _texts(parts: JSON, kind: str) -> list[str]:
    if not isinstance(parts, list):
        return []
    found = (p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == kind)
    return [t for t in found if isinstance(t, str)]
