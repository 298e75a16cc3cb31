"""The conventions' token and duration metrics, one record per model call, read back
from the SDK's own in-memory reader."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from four import local_env, regex_parse, run, save_trajectory, scripted_invoke
from four.otel import OtelWatch
from four.otel._metrics import Metrics, metrics
from four.otel._send import Sender
from four.types import Assistant, ModelError, ModelErrorKind, Usage


def test_each_model_call_counts_its_tokens_and_its_duration(tmp_path: Path) -> None:
    reader = InMemoryMetricReader()
    out = Sender(InMemorySpanExporter(), "memory")
    watch = OtelWatch(out, metrics=Metrics(MeterProvider([reader])))
    G = scripted_invoke([
        Assistant("```bash\ntrue\n```", usage=Usage(100, 7), model="m"),
        Assistant("```bash\ntrue\n```", usage=Usage(300, 5), model="m"),
        ModelError(ModelErrorKind.TIMEOUT, "no answer"),
    ])  # fmt: skip
    run(G, regex_parse(), local_env(), save_trajectory(tmp_path), prompt="go", watch=watch)
    assert out.flush(30)  # counted as the spans are made: by the sender's thread
    data = reader.get_metrics_data()
    assert data is not None
    found = {m.name: m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    tokens = found["gen_ai.client.token.usage"]
    assert tokens.unit == "{token}"
    by_type: dict[object, HistogramDataPoint] = {}
    for point in tokens.data.data_points:
        assert isinstance(point, HistogramDataPoint)
        assert point.attributes is not None and point.attributes["gen_ai.request.model"] == "m"
        by_type[point.attributes["gen_ai.token.type"]] = point
    assert (by_type["input"].count, by_type["input"].sum) == (2, 400)
    assert (by_type["output"].count, by_type["output"].sum) == (2, 12)
    durations = found["gen_ai.client.operation.duration"]
    assert durations.unit == "s"
    points = [p for p in durations.data.data_points if isinstance(p, HistogramDataPoint)]
    failed = [p for p in points if p.attributes and p.attributes.get("error.type") == "timeout"]
    assert sum(p.count for p in points) == 3
    assert len(failed) == 1  # the failed call counts, with its error's kind


def test_no_metrics_when_the_standard_variable_says_none() -> None:
    assert metrics("http://127.0.0.1:9/v1/traces") is None  # (conftest sets none)
