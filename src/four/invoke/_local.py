"""G on an embedded llama.cpp server (docs/install.md), talked to through litellm like any
OpenAI-compatible server. The server is a child process (``_llama_child.py``), not a
server inside this process: a child can be stopped and its 2 GB given back at any time,
and a crash in llama.cpp cannot take the run down with it. PR_SET_PDEATHSIG would tie it
to the *thread* that started it, and a batch starts it from a worker thread.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Final

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import Checked, checked
from four._grammar import Grammar
from four._types import NO_USAGE, Message, ModelError, ModelErrorKind, Reply, Sampling
from four.invoke._budget import add_usage
from four.invoke._chat import DEFAULT_TIMEOUT, LitellmInvoke

DEFAULT_CTX: Final = 8192
"""Tokens of context per slot."""
DEFAULT_MAX_TOKENS: Final = 1024
"""Tokens per reply at most: a small model that rambles stops here."""
DEFAULT_START_TIMEOUT: Final = 300.0
"""Seconds the server may take to load the model (about 5 s on an idle machine)."""

_CHILD = Path(__file__).with_name("_llama_child.py")
_INSTALL_HINT = "pip install 'four-loop[local]'"


@dataclass(frozen=True, slots=True)
class LocalServer(Checked):
    """A running llama.cpp server child: its settings, process, address and log file."""

    settings: LocalInvoke  # see ``LocalInvoke.settings``
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 5.0) -> None:
        """End the server: close its lifeline, then kill it if it lingers."""
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LocalServer({self.url}, pid={self.pid}, model={self.settings.model})"


def start_server(
    settings: LocalInvoke, timeout: float = DEFAULT_START_TIMEOUT
) -> Result[LocalServer, ModelError]:
    """Start a server child and wait until it answers (at most ``timeout`` seconds)."""
    fd, name = tempfile.mkstemp(prefix="four-llama-", suffix=".log")
    log = Path(name)
    # the thread count is chosen now, so runs started while the server works share it
    # rather than each asking for a server of its own
    child = {**asdict(settings), "threads": settings.threads or default_threads()}
    try:
        process = subprocess.Popen(
            [sys.executable, str(_CHILD), json.dumps(child)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=fd,
            start_new_session=True,  # Ctrl-C goes to us; we stop it
        )
    except OSError as exc:
        log.unlink(missing_ok=True)
        return Failure(ModelError(ModelErrorKind.OTHER, f"cannot start the local server: {exc}"))
    finally:
        os.close(fd)
    server = LocalServer(settings, process, "", log)
    try:
        answer = _ready_line(process, timeout)
    except BaseException:  # Ctrl-C while the model loads: no server is left loading
        server.stop()
        raise
    address = answer.get("address")
    if isinstance(address, str) and _healthy(address):
        return Success(replace(server, url=address))
    reason = answer.get("error") or _tail(log) or "it exited"
    server.stop()
    kind = ModelErrorKind.TIMEOUT if answer.get("timeout") else ModelErrorKind.OTHER
    why = f"the local server for {settings.model} did not start: {reason}"
    return Failure(ModelError(kind, why))


def _ready_line(process: subprocess.Popen[bytes], timeout: float) -> dict[str, object]:
    """The child's first line (its address or its error), or why there is none."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if selector.select(min(left, 1.0)):
                line = process.stdout.readline()
                try:
                    value = json.loads(line) if line else {}
                except ValueError:
                    value = {}
                return value if isinstance(value, dict) else {}
            if process.poll() is not None:
                return {}
    return {"timeout": True, "error": f"no answer in {timeout:.0f} s"}


def _healthy(address: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(address + "/health", timeout=10) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    useful = [line.strip() for line in lines if "error" in line.lower()] or lines[-1:]
    return useful[-1].strip() if useful else ""


_lock = threading.Lock()
_servers: dict[LocalInvoke, LocalServer] = {}


def stop_local_servers() -> None:
    """Stop every server this process started (also done at exit)."""
    with _lock:
        for server in _servers.values():
            server.stop()
        _servers.clear()


atexit.register(stop_local_servers)


@dataclass(frozen=True, slots=True)
class LocalInvoke(Checked):
    """G on an embedded llama.cpp server. See ``local_invoke``."""

    model: str
    path: str
    ctx: int = DEFAULT_CTX
    threads: int | None = None
    parallel: int = 1
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    seed: int = 0
    timeout: float = DEFAULT_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT
    grammar: str | None = None  # GBNF every reply is decoded under

    @property
    def settings(self) -> LocalInvoke:
        """What its server is started with (runs with equal settings share a server): this
        G less what each request sends for itself (sampling, grammar, timeouts), named by
        the model's alias."""
        alias = Path(self.model).stem if self.model.endswith(".gguf") else self.model
        return LocalInvoke(
            alias, self.path, self.ctx, self.threads, self.parallel, max_tokens=self.max_tokens
        )

    @property
    def sampling(self) -> Sampling:
        return Sampling(self.temperature, self.seed)

    def sampled(self, sampling: Sampling, /) -> LocalInvoke:
        """This G with ``sampling``'s temperature and seed (the same server)."""
        return replace(
            self,
            temperature=self.temperature if sampling.temperature is None else sampling.temperature,
            seed=self.seed if sampling.seed is None else sampling.seed,
        )

    def server(self) -> Result[LocalServer, ModelError]:
        """The process's server for these settings: started on first use, again if it died."""
        settings = self.settings
        with _lock:
            server = _servers.get(settings)
            if server is not None and server.process.poll() is None:  # running
                return Success(server)
            if server is not None:
                _servers.pop(settings).stop()
            started = start_server(settings, self.start_timeout)
            if isinstance(started, Success):
                _servers[settings] = started.unwrap()
            return started

    def chat(self, server: LocalServer, cache: bool = True) -> LitellmInvoke:
        """The litellm G that talks to ``server``: any OpenAI-compatible server's path.
        ``cache``: whether the server may reuse the prompt it has cached."""
        body: dict[str, object] = {} if self.grammar is None else {"grammar": self.grammar}
        if not cache:
            body["cache_prompt"] = False
        return LitellmInvoke(
            f"openai/{server.settings.model}",
            api_base=server.url + "/v1",
            api_key="none",
            timeout=self.timeout,
            prices=(0.0, 0.0),  # a model on this machine costs no money
            kwargs={
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "seed": self.seed,
                # llama.cpp's own fields: only this server is ever sent them
                **({"extra_body": body} if body else {}),
            },
        )

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        return self.server().bind(lambda server: self.reply_from(server, messages))

    def reply_from(
        self, server: LocalServer, messages: Sequence[Message]
    ) -> Result[Reply, ModelError]:
        """``server``'s reply to ``messages``; under a grammar, one cut off at the token limit
        is decoded once more without the prompt cache (why: docs/search.md)."""
        drawn = self.chat(server)(messages)
        if self.grammar is None or not isinstance(drawn, Success) or not drawn.unwrap().truncated:
            return drawn
        return add_usage(self.chat(server, cache=False)(messages), drawn.unwrap().usage or NO_USAGE)


def default_threads() -> int:
    """Threads for llama.cpp: the cores this process may use (at most 8), less those other
    work keeps busy now. llama.cpp's threads wait for each other at every step, so one
    thread more than the free cores makes it several times slower, not faster."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    try:
        busy = int(os.getloadavg()[0])
    except OSError:  # no load average here
        busy = 0
    return max(1, min(cores, 8) - busy)


@checked
def local_invoke(
    model: str | None = None,
    *,
    ctx: int = DEFAULT_CTX,
    threads: int | None = None,
    parallel: int = 1,
    temperature: float = 0.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    seed: int = 0,
    timeout: float = DEFAULT_TIMEOUT,
    start_timeout: float = DEFAULT_START_TIMEOUT,
    folder: Path | None = None,
    grammar: Grammar | None = None,
) -> LocalInvoke:
    """G on a model run here, with no API key and no network: an embedded llama.cpp server
    (its settings: docs/install.md, "A model on this machine").

    >>> V1 = regex_parse()  # doctest: +SKIP
    >>> G = local_invoke("/models/qwen.gguf", grammar=V1.grammar())  # doctest: +SKIP
    >>> run(G, V1, local_env(), save_trajectory(), prompt="...")  # doctest: +SKIP
    """
    from four.models import DEFAULT_MODEL, find_model

    for name, value in (("ctx", ctx), ("parallel", parallel), ("max_tokens", max_tokens)):
        check.count("local_invoke", name, value, minimum=1)
    check.count("local_invoke", "threads", threads, minimum=1, optional=True)
    check.amount("local_invoke", "temperature", temperature)
    chosen = model or DEFAULT_MODEL
    found = find_model(chosen, folder)
    if isinstance(found, Failure):
        raise ValueError(f"local_invoke(model={chosen!r}): {found.failure().message}")
    if importlib.util.find_spec("xllamacpp") is None:
        raise ImportError(f"local_invoke needs the xllamacpp package: {_INSTALL_HINT}")
    return LocalInvoke(
        chosen,
        str(found.unwrap()),
        ctx,
        threads,
        parallel,
        temperature,
        max_tokens,
        seed,
        timeout,
        start_timeout,
        None if grammar is None else grammar.gbnf(),
    )
