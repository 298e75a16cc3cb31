"""What a model's endpoint says of itself: an OpenAI-compatible server's models, how many
requests it serves at once and its context window; a hosted provider's reachability."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from four._types import JSON
from four.observe._check import Check


@dataclass(frozen=True, slots=True)
class Server:
    """What an OpenAI-compatible server says of itself: its models, and (llama.cpp's
    ``/props`` and ``/slots``, vLLM's ``/v1/models``) how many requests it serves at once
    and its context window."""

    base: str
    reached: bool
    problem: str = ""
    models: tuple[str, ...] = ()
    slots: int | None = None
    slots_from: str = ""
    context_window: int | None = None
    latency: float | None = None  # of GET /models


def _get(url: str, key: str | None, timeout: float) -> tuple[int, JSON]:
    """GET ``url``: its status and JSON body (None when it is not JSON)."""
    request = urllib.request.Request(url)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read(2**20)
    except urllib.error.HTTPError as exc:
        return exc.code, None
    try:
        data: JSON = json.loads(raw or b"null")
    except ValueError:
        data = None
    return status, data


def read_server(api_base: str, api_key: str | None = None, timeout: float = 5.0) -> Server:
    """Ask the server at ``api_base`` what it serves (``/models``) and, where it says,
    how many requests at once (llama.cpp: ``/props`` ``total_slots``, or ``/slots``;
    vLLM: ``max_num_seqs`` if ``/v1/models`` exposes it) and its context window."""
    base = api_base.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    started = time.monotonic()
    try:
        status, data = _get(f"{base}/models", api_key, timeout)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Server(base, False, f"cannot reach --api-base {api_base}: {reason}")
    latency = time.monotonic() - started
    models: list[str] = []
    slots: int | None = None
    slots_from, window = "", None
    listed = data.get("data") if isinstance(data, dict) else None
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, dict) and entry.get("id"):
            models.append(str(entry["id"]))
            seqs, length = entry.get("max_num_seqs"), entry.get("max_model_len")
            if isinstance(seqs, int) and slots is None:
                slots, slots_from = seqs, "/v1/models max_num_seqs"
            if isinstance(length, int) and window is None:
                window = length
    if slots is None:
        slots, slots_from, n_ctx = _llama_slots(root, api_key, timeout)
        window = window or n_ctx
    problem = "" if status < 400 or status == 404 else f"GET {base}/models answered {status}"
    return Server(base, True, problem, tuple(models), slots, slots_from, window, latency)


def _llama_slots(root: str, key: str | None, timeout: float) -> tuple[int | None, str, int | None]:
    """llama.cpp's parallel slots and context: ``/props`` first, then ``/slots``."""
    try:
        _, props = _get(f"{root}/props", key, timeout)
        if isinstance(props, dict):
            total = props.get("total_slots")
            settings = props.get("default_generation_settings")
            n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
            window = n_ctx if isinstance(n_ctx, int) else None
            if isinstance(total, int):
                return total, "/props total_slots", window
        _, slots = _get(f"{root}/slots", key, timeout)
        if isinstance(slots, list) and slots:
            first = slots[0]
            n_ctx = first.get("n_ctx") if isinstance(first, dict) else None
            return len(slots), "/slots", n_ctx if isinstance(n_ctx, int) else None
    except (urllib.error.URLError, OSError, ValueError):
        pass
    return None, "", None


def endpoint(model: str, server: Server) -> Check:
    """The server answers and serves ``model`` (when it lists its models)."""
    if not server.reached:
        return Check("endpoint", "NO-GO", server.problem, "start the server, or fix --api-base")
    if server.problem:
        return Check("endpoint", "WARN", server.problem, "check --api-base and FOUR_API_KEY")
    bare = model.split("/", 1)[1] if model.startswith("openai/") else model
    took = f" in {server.latency * 1000:.0f} ms" if server.latency is not None else ""
    if server.models and bare not in server.models and model not in server.models:
        return Check(
            "endpoint",
            "NO-GO",
            f"unknown model {bare!r} at {server.base}; it serves: {', '.join(server.models[:10])}",
            f"--model openai/{server.models[0]}",
        )
    return Check("endpoint", "GO", f"{server.base} answered{took}")


_HOSTS: Mapping[str, str] = {
    "openai": "api.openai.com",
    "anthropic": "api.anthropic.com",
    "gemini": "generativelanguage.googleapis.com",
    "mistral": "api.mistral.ai",
    "groq": "api.groq.com",
    "deepseek": "api.deepseek.com",
    "openrouter": "openrouter.ai",
    "together_ai": "api.together.xyz",
}


def reach(host: str, port: int = 443, timeout: float = 5.0) -> Check:
    """A TCP connection to a hosted provider's API opens (to the HTTPS proxy instead,
    when one is set: that is where the requests go)."""
    proxy = urllib.request.getproxies().get("https")
    via = ""
    if proxy and not urllib.request.proxy_bypass(host):
        parsed = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if parsed.hostname:
            via = f" (through the proxy {parsed.hostname})"
            host, port = parsed.hostname, parsed.port or 80
    started = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout):
            took = time.monotonic() - started
    except OSError as exc:
        return Check(
            "endpoint",
            "NO-GO",
            f"cannot connect to {host}:{port}{via}: {exc.strerror or exc}",
            "check the network (a proxy, a firewall)",
        )
    return Check("endpoint", "GO", f"{host}:{port} connected in {took * 1000:.0f} ms{via}")


def provider_host(model: str) -> str | None:
    """The API host of a hosted model's provider, when we know it."""
    provider = model.split("/", 1)[0] if "/" in model else ""
    if not provider:
        from four.invoke._lazy import litellm_module

        try:
            provider = str(litellm_module().get_llm_provider(model)[1])
        except Exception:
            return None
    return _HOSTS.get(provider)


def parallel(workers: int, server: Server | None) -> Check:
    """A batch's workers against how many requests the endpoint serves at once."""
    if server is None:
        return Check("parallel", "GO", f"{workers} workers; the provider's rate limits apply")
    if server.slots is None:
        return Check(
            "parallel",
            "WARN" if workers > 1 else "GO",
            f"{workers} workers; {server.base} does not say how many requests it serves at once",
            "check the server's parallel setting (llama.cpp --parallel, vLLM --max-num-seqs)",
        )
    said = f"{server.base} serves {server.slots} at once ({server.slots_from})"
    if workers > server.slots:
        return Check(
            "parallel",
            "WARN",
            f"{workers} workers, but {said}: {workers - server.slots} wait at any time, and "
            "each waits its turn on the --stall-timeout and --timeout clocks",
            f"-w {server.slots}, or restart the server with --parallel {workers}",
        )
    return Check("parallel", "GO", f"{workers} workers; {said}")
