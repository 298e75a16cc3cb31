"""A loopback OpenAI-compatible HTTP server for tests: scripted answers, recorded requests.

It speaks just enough of three APIs to drive real clients (litellm, httpx) over real
HTTP on 127.0.0.1: chat completions (``/v1/chat/completions``), the Responses API
(``/v1/responses``) and Anthropic messages (``/v1/messages``). Every request is
recorded; answers come from a FIFO script (or a ``default`` function when the script
is empty), and may be delayed, hang until the server closes, or be any status, headers
and body (valid JSON or not).

    >>> with LoopbackServer() as server:
    ...     server.push(chat("hello"))
    ...     server.url.startswith("http://127.0.0.1:")
    True

Also here: checkers for the validity of what a client sent (``openai_history_problems``,
``responses_input_problems``, ``anthropic_problems``), so any test can assert that every
request body it caused was a valid history.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeAlias, cast

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"
JSONDict: TypeAlias = dict[str, JSON]

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
PATHS = (CHAT, RESPONSES, MESSAGES)


@dataclass(frozen=True, slots=True)
class Answer:
    """One scripted HTTP answer. ``body`` is JSON, or raw bytes sent as they are.

    ``delay`` waits before answering; ``hang`` never answers (until the server closes).
    """

    body: JSON | bytes = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang: bool = False


@dataclass(frozen=True, slots=True)
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> JSONDict:
        data = json.loads(self.body or b"{}")
        assert isinstance(data, dict), data
        return cast(JSONDict, data)


Responder: TypeAlias = Callable[[Request], Answer]


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 with a free port; a context manager.

    ``url`` is the OpenAI-style base (``http://127.0.0.1:PORT/v1``); ``root`` is without
    ``/v1`` (what Anthropic clients take as ``api_base``).
    """

    def __init__(
        self, default: Responder | None = None, routes: Mapping[str, Answer] | None = None
    ) -> None:
        self.default = default
        self.routes = dict(routes or {})
        """Fixed answers by path, for any method (``/props``, ``/v1/models``...)."""
        self.requests: list[Request] = []
        self._script: deque[Answer] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    def push(self, *answers: Answer) -> None:
        """Queue answers, served in order to whatever requests come next."""
        with self._lock:
            self._script.extend(answers)

    @property
    def pending(self) -> int:
        """Scripted answers not served yet."""
        with self._lock:
            return len(self._script)

    def bodies(self, path: str | None = None) -> list[JSONDict]:
        """The JSON bodies received (on ``path`` only, if given), in order."""
        with self._lock:
            seen = list(self.requests)
        return [r.json() for r in seen if path is None or r.path == path]

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- used by the handler ---

    def _answer(self, request: Request) -> Answer:
        with self._lock:
            self.requests.append(request)
            if request.path in self.routes:
                return self.routes[request.path]
            if request.path not in PATHS:
                return error(404, f"no such path: {request.path}", "not_found_error")
            if self._script:
                return self._script.popleft()
        if self.default is not None:
            return self.default(request)
        return error(500, "the test server's script is empty", "script_exhausted")


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # batch tests open a hundred connections at once


def _handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers
        disable_nagle_algorithm = True  # else ~40 ms per call (Nagle + delayed ACK)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if len(body) < length:  # the client died mid-request (a killed node): no call
                self.close_connection = True
                return
            request = Request(
                "POST",
                self.path.split("?")[0],
                {k.lower(): v for k, v in self.headers.items()},
                body,
            )
            answer = server._answer(request)
            if answer.hang:
                server._closing.wait()
                self.close_connection = True
                return
            if answer.delay and server._closing.wait(answer.delay):
                return
            payload = (
                answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
            )
            try:
                self.send_response(answer.status)
                headers = {"Content-Type": "application/json", **answer.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up
                self.close_connection = True

        def do_GET(self) -> None:
            self.do_POST()

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serve(
    *answers: Answer, default: Responder | None = None, routes: Mapping[str, Answer] | None = None
) -> Iterator[LoopbackServer]:
    """A running server with ``answers`` queued; closed on exit.

    >>> with serve(chat("hi")) as server:
    ...     server.pending
    1
    """
    with LoopbackServer(default, routes) as server:
        server.push(*answers)
        yield server


# --- answers -------------------------------------------------------------------

_ids = itertools.count(1)


def call(name: str = "bash", arguments: JSON = None, id: str | None = None, **kw: JSON) -> JSONDict:
    """A tool call as a chat-completions ``tool_calls`` entry.

    ``arguments`` is JSON text, or any other JSON value (then dumped); keywords are
    taken as the arguments object: ``call(command="ls")``.
    """
    args = arguments if arguments is not None else kw
    return {
        "id": id or f"call_{next(_ids)}",
        "type": "function",
        "function": {
            "name": name,
            "arguments": args if isinstance(args, str) else json.dumps(args),
        },
    }


def chat(
    content: str | None = "",
    tool_calls: Sequence[JSONDict] = (),
    *,
    finish_reason: str | None = None,
    usage: tuple[int, int] | None = (10, 5),
    model: str = "test-model",
    reasoning: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """A chat-completions answer with text and/or tool calls."""
    message: JSONDict = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    body: JSONDict = {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    return Answer(body, headers=dict(headers or {}))


def responses(
    text: str | None = None,
    calls: Sequence[tuple[str, str, str]] = (),
    *,
    reasoning: str | None = None,
    status: str = "completed",
    incomplete: str | None = None,
    usage: tuple[int, int] | None = (10, 5),
    model: str = "test-model",
) -> Answer:
    """A Responses-API answer: optional reasoning, a message, ``(call_id, name, arguments)`` calls."""
    output: list[JSON] = []
    if reasoning is not None:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{next(_ids)}",
                "summary": [{"type": "summary_text", "text": reasoning}],
            }
        )
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_{next(_ids)}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for call_id, name, arguments in calls:
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{next(_ids)}",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    body: JSONDict = {
        "id": f"resp_{next(_ids)}",
        "object": "response",
        "created_at": 1700000000,
        "model": model,
        "status": status,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": output,
    }
    if usage is not None:
        body["usage"] = {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    return Answer(body)


def anthropic(
    text: str | None = None,
    calls: Sequence[tuple[str, str, JSONDict]] = (),
    *,
    thinking: Sequence[tuple[str, str]] = (),
    stop_reason: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-test",
) -> Answer:
    """An Anthropic messages answer: ``(thinking, signature)`` blocks, text, ``(id, name, input)`` calls."""
    content: list[JSON] = [{"type": "thinking", "thinking": t, "signature": s} for t, s in thinking]
    if text is not None:
        content.append({"type": "text", "text": text})
    content.extend({"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls)
    return Answer(
        {
            "id": f"msg_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason or ("tool_use" if calls else "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }
    )


def error(
    status: int,
    message: str = "error",
    type: str = "error",
    *,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """An error answer in the OpenAI error shape."""
    return Answer(
        {"error": {"message": message, "type": type, "param": None, "code": code}},
        status,
        dict(headers or {}),
    )


def malformed(status: int = 200) -> Answer:
    """A body that is not JSON."""
    return Answer(b'{"id": "chatcmpl-1", "choices": [', status)


def hang() -> Answer:
    """Never answer (until the server closes)."""
    return Answer(hang=True)


# --- validity of what clients sent ---------------------------------------------


def openai_history_problems(messages: Sequence[JSON]) -> list[str]:
    """What makes a chat-completions ``messages`` list invalid for OpenAI; [] if valid.

    Every ``tool`` message must answer an id of the nearest preceding assistant
    ``tool_calls``, and every tool call must be answered before the next
    user/assistant/system message (and before the end of the request).

    >>> openai_history_problems([{"role": "user", "content": "hi"}])
    []
    >>> openai_history_problems([{"role": "tool", "tool_call_id": "x", "content": ""}])
    ['message 0: tool result x answers no open tool call']
    """
    problems: list[str] = []
    open_calls: set[str] = set()
    roles = {"system", "developer", "user", "assistant", "tool"}
    for i, raw in enumerate(messages):
        if not isinstance(raw, dict):
            problems.append(f"message {i}: not an object")
            continue
        role = raw.get("role")
        if role not in roles:
            problems.append(f"message {i}: unknown role {role!r}")
            continue
        if role == "tool":
            call_id = raw.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in open_calls:
                problems.append(f"message {i}: tool result {call_id} answers no open tool call")
            else:
                open_calls.discard(call_id)
            if not isinstance(raw.get("content"), str | list):
                problems.append(f"message {i}: tool content missing")
            continue
        if open_calls:
            problems.append(f"message {i}: tool calls {sorted(open_calls)} unanswered before it")
            open_calls = set()
        extra = set(raw) - {"role", "content", "tool_calls", "name"}
        if extra:
            problems.append(f"message {i}: unexpected keys {sorted(extra)}")
        content = raw.get("content")
        calls = raw.get("tool_calls")
        if role == "assistant":
            if content is None and not calls:
                problems.append(f"message {i}: assistant with neither content nor tool calls")
            for c in calls if isinstance(calls, list) else []:
                ok = (
                    isinstance(c, dict)
                    and isinstance(c.get("id"), str)
                    and c.get("type") == "function"
                    and isinstance(c.get("function"), dict)
                    and isinstance(cast(JSONDict, c["function"]).get("arguments"), str)
                )
                if not ok:
                    problems.append(f"message {i}: malformed tool call {c!r}")
                    continue
                open_calls.add(cast(str, cast(JSONDict, c)["id"]))
        elif calls is not None:
            problems.append(f"message {i}: tool_calls on a {role} message")
        elif not isinstance(content, str | list):
            problems.append(f"message {i}: content missing")
    if open_calls:
        problems.append(f"end: tool calls {sorted(open_calls)} unanswered")
    return problems


def responses_input_problems(items: Sequence[JSON]) -> list[str]:
    """What makes a Responses-API ``input`` list invalid; [] if valid.

    Every ``function_call_output`` must have the ``call_id`` of an earlier
    ``function_call``, and every ``function_call`` must be answered.
    """
    problems: list[str] = []
    calls: set[str] = set()
    answered: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(f"item {i}: not an object")
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id or call_id in calls:
                problems.append(f"item {i}: bad or repeated call_id {call_id!r}")
            else:
                calls.add(call_id)
            if not isinstance(item.get("arguments"), str) or not isinstance(item.get("name"), str):
                problems.append(f"item {i}: function_call needs name and arguments text")
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls or call_id in answered:
                problems.append(f"item {i}: output for unknown or answered call {call_id!r}")
            else:
                answered.add(str(call_id))
            if not isinstance(item.get("output"), str):
                problems.append(f"item {i}: output must be text")
        elif kind == "message":
            if item.get("role") not in {"system", "developer", "user", "assistant"}:
                problems.append(f"item {i}: bad role {item.get('role')!r}")
            if not isinstance(item.get("content"), str | list):
                problems.append(f"item {i}: content missing")
        elif kind != "reasoning":
            problems.append(f"item {i}: unknown type {kind!r}")
    if calls - answered:
        problems.append(f"end: calls {sorted(calls - answered)} unanswered")
    return problems


def anthropic_problems(body: Mapping[str, JSON]) -> list[str]:
    """What makes an Anthropic messages request invalid; [] if valid.

    Roles alternate user/assistant starting with user; every ``tool_use`` is answered
    by a ``tool_result`` with its id in the very next (user) message; no orphan results;
    no empty text blocks.
    """
    problems: list[str] = []
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["no messages"]
    expected_role = "user"
    open_ids: set[str] = set()
    for i, raw in enumerate(messages):
        if not isinstance(raw, dict):
            problems.append(f"message {i}: not an object")
            continue
        role = raw.get("role")
        if role != expected_role:
            problems.append(f"message {i}: role {role!r}, expected {expected_role!r}")
        expected_role = "assistant" if role == "user" else "user"
        content = raw.get("content")
        blocks: list[JSON] = (
            content if isinstance(content, list) else [{"type": "text", "text": content}]
        )
        results: set[str] = set()
        uses: set[str] = set()
        for block in blocks:
            if not isinstance(block, dict):
                problems.append(f"message {i}: block not an object")
                continue
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                problems.append(f"message {i}: empty text block")
            elif kind == "tool_use":
                uses.add(str(block.get("id")))
            elif kind == "tool_result":
                results.add(str(block.get("tool_use_id")))
        if role == "user":
            if results != open_ids:
                problems.append(
                    f"message {i}: tool results {sorted(results)} != open tool uses {sorted(open_ids)}"
                )
            open_ids = set()
        else:
            if results:
                problems.append(f"message {i}: tool_result in an assistant message")
            open_ids = uses
    if open_ids:
        problems.append(f"end: tool uses {sorted(open_ids)} unanswered")
    return problems
