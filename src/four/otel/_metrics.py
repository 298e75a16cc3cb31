"""The conventions' two GenAI client metrics, recorded at each model call of a live run:
``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` (histograms with
the buckets the conventions advise), sent by the SDK's periodic reader over OTLP/HTTP
(``OTEL_METRIC_EXPORT_INTERVAL``; ``OTEL_METRICS_EXPORTER=none`` sends none)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)

from four.otel._send import TIMEOUT, quietly, resource, resource_variables, scope_version
from four.otel._spans import SCHEMA_URL, Span, Value

log = logging.getLogger("four.otel")

TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                 16777216, 67108864)  # fmt: skip
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92)  # fmt: skip
KEYS = (
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "error.type",
)
"""The span attributes the metrics carry (few values each: fit for a metric's labels)."""


class Metrics:
    """Records a model call's tokens and duration (``chat``) with ``provider``'s meter."""

    __slots__ = ("_duration", "_tokens", "provider")

    def __init__(self, provider: MeterProvider) -> None:
        self.provider = provider
        meter = provider.get_meter("four", scope_version(), schema_url=SCHEMA_URL)
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=[float(b) for b in TOKEN_BUCKETS],
        )  # fmt: skip
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )  # fmt: skip

    def chat(self, span: Span) -> None:
        found = span.attributes
        labels: Mapping[str, Value] = {k: found[k] for k in KEYS if k in found}
        self._duration.record(max(span.end - span.start, 0.0), labels)
        for key, kind in (("gen_ai.usage.input_tokens", "input"),
                          ("gen_ai.usage.output_tokens", "output")):  # fmt: skip
            tokens = found.get(key)
            if isinstance(tokens, int):
                self._tokens.record(tokens, {**labels, "gen_ai.token.type": kind})


class _Exporter(OTLPMetricExporter):
    """The SDK's exporter, its own messages kept quiet: a loss is said once, by us."""

    def __init__(self, endpoint: str) -> None:
        timeout = None if os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT") else TIMEOUT
        super().__init__(endpoint=endpoint, timeout=timeout)
        self.where, self.failed, self.warned = endpoint, 0, False

    def export(
        self, metrics_data: MetricsData, timeout_millis: float | None = 10000, **kwargs: object
    ) -> MetricExportResult:
        with quietly():
            result = super().export(metrics_data, timeout_millis, **kwargs)
        if result is not MetricExportResult.SUCCESS:
            self.failed += 1
            if not self.warned:
                self.warned = True
                log.warning("four: otel: metrics are lost: %s did not take them (the runs go "
                            "on; OTEL_METRICS_EXPORTER=none sends none)", self.where)  # fmt: skip
        return result


_all: dict[str, Metrics] = {}
_lock = threading.Lock()


def metrics(traces_url: str) -> Metrics | None:
    """The process's metrics next to the traces at ``traces_url`` (its ``/v1/metrics``,
    or ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``); None with ``OTEL_METRICS_EXPORTER=none``."""
    if os.environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() == "none":
        return None
    url = os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or (
        traces_url.removesuffix("/v1/traces") + "/v1/metrics"
    )
    key = f"{url} {resource_variables()}"
    with _lock:
        found = _all.get(key)
        if found is None:
            reader = PeriodicExportingMetricReader(_Exporter(url))
            found = _all[key] = Metrics(MeterProvider([reader], resource=resource()))
        return found
