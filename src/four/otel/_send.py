"""Spans to an OTLP receiver, from a thread of their own: whoever puts them only puts
them in a bounded queue (never waits), a receiver that is down or slow loses spans,
counted, with one warning line. ``otel_watch`` runs this sender in a process of its own
(``_sidecar``); a ``Sender`` made here with any ``SpanExporter`` runs in this process.

The OTLP/HTTP exporter is the OpenTelemetry SDK's: it reads the standard
``OTEL_EXPORTER_OTLP_*`` variables (endpoint, headers, certificates, timeout,
compression) as every OpenTelemetry program does.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Protocol, TypeAlias

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SdkEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from four.otel import _encode
from four.otel._facts import Facts, Maker
from four.otel._spans import SCHEMA_URL, Span

log = logging.getLogger("four.otel")

MAX_QUEUE = 20_000
"""Spans waiting at most (``OTEL_BSP_MAX_QUEUE_SIZE`` sets another): past it a span is
dropped, not waited for."""
BATCH = 512
"""Spans per request at most (``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``)."""
DELAY = 1.0
"""Seconds a span may wait for others to fill a request (``OTEL_BSP_SCHEDULE_DELAY``, in
milliseconds, sets another); a flush sends at once. Few large requests cost a receiver
less than many small ones."""
TIMEOUT = 10.0
"""Seconds one request may take, its retries included, when ``OTEL_EXPORTER_OTLP_TIMEOUT``
says nothing (a receiver at capacity answers slowly)."""
AT_EXIT = 10.0
"""Seconds a process that ends waits at most for its spans to be sent."""

_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


Made: TypeAlias = Span | Facts
"""What a sender takes: a span, or the facts of one (made into it by the sender's
thread, not the run's)."""


class Counts(Protocol):
    """What counts a model call's span in the metrics (``_metrics.Metrics``)."""

    def chat(self, span: Span, /) -> None: ...


class Sender:
    """Takes finished spans (``put`` a span, or its facts: constant time, never
    blocks) and sends them in batches from its thread. ``sent``, ``dropped`` (the
    queue was full) and ``failed`` (the receiver did not take them, or one could not be
    made) count spans; the first loss is said once, as a warning of the ``four.otel``
    logger.

    The SDK's OTLP/HTTP exporter sends the requests (its variables, retries, headers,
    compression); their bytes are four's own (``_encode``: a tenth of the SDK's encoding
    cost) where the exporter lets them be handed over, else the SDK's (``ReadableSpan``
    and ``encode_spans``, as for any other ``SpanExporter``)."""

    def __init__(
        self,
        exporter: SpanExporter,
        where: str,
        max_queue: int = MAX_QUEUE,
        batch: int = BATCH,
        delay: float = DELAY,
    ) -> None:
        self._exporter, self.where = exporter, where
        self._post = _poster(exporter)
        self._max, self._batch, self._delay = max_queue, batch, delay
        self._flushing = 0  # flushes waiting: send what there is, now
        self._queue: collections.deque[tuple[Made, Counts | None]] = collections.deque()
        self._lock = threading.Condition()
        self._busy = 0  # spans taken off the queue and not yet answered
        self._thread: threading.Thread | None = None
        self._closed = False
        self._resource = resource()
        self._scope = InstrumentationScope("four", scope_version(), SCHEMA_URL)
        self._head: tuple[bytes, bytes] | None = None  # the resource and scope, encoded
        self._maker = Maker()
        self.sent = self.dropped = self.failed = 0
        self.warned = False
        self.said: str | None = None  # why spans were first lost
        self.told: Callable[[], object] | None = None  # called once a batch is answered

    @property
    def encodes(self) -> bool:
        """Whether the requests' bytes are four's own (``_encode``), not the SDK's."""
        return self._post is not None

    def put(self, span: Made, counts: Counts | None = None) -> None:
        """Queue ``span`` (or its facts) to be sent, counted by ``counts`` once made."""
        queue = self._queue
        if len(queue) < self._max - 1 and self._thread is not None and not self._closed:
            queue.append((span, counts))  # the run's usual way: no lock (appends are atomic)
            if len(queue) == self._batch:  # else the thread wakes by itself (``DELAY``)
                with self._lock:
                    self._lock.notify()
            return
        with self._lock:
            if len(queue) >= self._max or self._closed:
                self.dropped += 1
                self._warn("the queue is full: not taken fast enough")
                return
            queue.append((span, counts))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="four-otel", daemon=True)
                self._thread.start()
            if len(queue) == self._batch:
                self._lock.notify()

    def flush(self, timeout: float) -> bool:
        """Wait until every span put so far is answered (sent or lost), ``timeout``
        seconds at most; whether it was."""
        with self._lock:
            self._flushing += 1
            self._lock.notify_all()
            try:
                return self._lock.wait_for(lambda: not self._queue and not self._busy, timeout)
            finally:
                self._flushing -= 1

    def close(self, timeout: float = AT_EXIT) -> None:
        """Flush, then stop taking spans (what comes later is dropped)."""
        self.flush(timeout)
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(  # a full request, or what there is now and then
                    lambda: len(self._queue) >= self._batch or self._flushing or self._closed,
                    self._delay,
                )
                if not self._queue:
                    if self._closed:
                        return
                    continue
                taken = [self._queue.popleft() for _ in range(min(self._batch, len(self._queue)))]
                self._busy = len(taken)
            spans, unmade = self._made(taken)
            problem = ""
            try:
                if spans:
                    with quietly():
                        done = self._send(spans)
                    problem = "" if done else "not taken (down, slow or refusing)"
            except Exception as exc:  # an exporter's bug must not end the thread
                problem = f"{type(exc).__name__}: {exc}"
            with self._lock:
                if problem:
                    self.failed += len(spans)
                    self._warn(problem)
                else:
                    self.sent += len(spans)
                self.failed += unmade
                self._busy = 0
                self._lock.notify_all()
            if self.told is not None:
                self.told()

    def _made(self, taken: Sequence[tuple[Made, Counts | None]]) -> tuple[list[Span], int]:
        """The spans of ``taken`` (those queued as facts made now, and counted), and how
        many could not be made (a bug: counted as lost, never raised)."""
        spans: list[Span] = []
        unmade = 0
        for item, counts in taken:
            try:
                span = item if isinstance(item, Span) else self._maker.span(item)
                if counts is not None:
                    counts.chat(span)
            except Exception as exc:
                unmade += 1
                log.debug("four: otel: a span could not be made: %s", exc)
                continue
            spans.append(span)
        return spans, unmade

    def _send(self, spans: Sequence[Span]) -> bool:
        """One request of ``spans``; whether the receiver took it."""
        if self._post is None:
            result = self._exporter.export([self._readable(s) for s in spans])
            return result is SpanExportResult.SUCCESS
        if self._head is None:
            self._head = (
                _encode.resource(dict(self._resource.attributes)),
                _encode.scope(self._scope.name, self._scope.version or ""),
            )
        head, scope = self._head
        return self._post(_encode.request(head, scope, SCHEMA_URL, map(_encode.span, spans)))

    def _warn(self, why: str) -> None:
        if not self.warned:
            self.warned, self.said = True, why
            log.warning(
                "four: otel: spans lost: %s by %s (the runs go on; later losses are counted, "
                "not said)", why, self.where,
            )  # fmt: skip

    def _readable(self, span: Span) -> ReadableSpan:
        context = SpanContext(span.trace_id, span.span_id, False, _SAMPLED)
        parent = (
            None
            if span.parent_id is None
            else SpanContext(span.trace_id, span.parent_id, False, _SAMPLED)
        )
        if span.error is not None:
            status = Status(StatusCode.ERROR, span.error)
        else:
            status = Status(StatusCode.OK if span.ok else StatusCode.UNSET)
        events = [SdkEvent(e.name, dict(e.attributes), _ns(e.time)) for e in span.events]
        return ReadableSpan(
            name=span.name, context=context, parent=parent, resource=self._resource,
            attributes=dict(span.attributes), events=events, kind=_KINDS[span.kind],
            status=status, start_time=_ns(span.start), end_time=_ns(span.end),
            instrumentation_scope=self._scope,
        )  # fmt: skip


def _poster(exporter: SpanExporter) -> Callable[[bytes], bool] | None:
    """How to hand ``exporter`` a request's bytes: the SDK's OTLP/HTTP exporter sends
    them with its client (``_client.export``: its retries, headers, compression and
    timeout), an inner part of the SDK that its versions may change. None where the
    exporter is another, or the SDK no longer has that part: then the SDK encodes."""
    if type(exporter) is not OTLPSpanExporter:
        return None
    client = getattr(exporter, "_client", None)
    export = getattr(client, "export", None)
    if not callable(export):
        return None

    def post(data: bytes) -> bool:
        return bool(getattr(export(data), "success", False))

    return post


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def resource() -> Resource:
    """The standard resource (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), named
    ``four`` when the user names no service."""
    resource = Resource.create()
    named = str(resource.attributes.get("service.name", ""))
    if named.startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "four"}))
    return resource


def scope_version() -> str:
    try:
        return version("four-loop")
    except PackageNotFoundError:
        return "0"


class _Quiet(logging.Filter):
    """Drops the SDK exporters' messages while four exports (``quietly``): their retries
    and failures are said once, by four."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self.local, "on", False)


_quiet = _Quiet()
for _name in (
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
):
    logging.getLogger(_name).addFilter(_quiet)


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """The SDK exporters' messages dropped in this thread meanwhile."""
    _quiet.local.on = True
    try:
        yield
    finally:
        _quiet.local.on = False


def endpoint_of(endpoint: str | None) -> str:
    """Where spans go: ``endpoint`` (a base URL or the full ``.../v1/traces``), else the
    standard variables', else the OTLP default.

    >>> endpoint_of("http://127.0.0.1:4318")
    'http://127.0.0.1:4318/v1/traces'
    """
    if endpoint is None:
        traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        if traces:
            return traces
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"
    return endpoint if endpoint.rstrip("/").endswith("/v1/traces") else (
        endpoint.rstrip("/") + "/v1/traces"
    )  # fmt: skip


def make_sender(url: str) -> Sender:
    """A sender in this process to the OTLP/HTTP receiver at ``url`` (its
    ``/v1/traces``), set as the standard variables say."""
    timeout = None if os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") else TIMEOUT
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout)
    return Sender(
        exporter, url, max_queue(), _int_env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", BATCH),
        delay(),
    )  # fmt: skip


def max_queue() -> int:
    """Spans waiting at most (``OTEL_BSP_MAX_QUEUE_SIZE``, else ``MAX_QUEUE``)."""
    return _int_env("OTEL_BSP_MAX_QUEUE_SIZE", MAX_QUEUE)


def delay() -> float:
    """Seconds a span may wait for others (``OTEL_BSP_SCHEDULE_DELAY``, else ``DELAY``)."""
    return _int_env("OTEL_BSP_SCHEDULE_DELAY", round(DELAY * 1000)) / 1000


def resource_variables() -> str:
    """What the standard variables say of the resource (a sender is made for each)."""
    return f"{os.environ.get('OTEL_SERVICE_NAME', '')} {os.environ.get('OTEL_RESOURCE_ATTRIBUTES', '')}"


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else default
