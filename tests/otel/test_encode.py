"""four's own OTLP/protobuf bytes (``four.otel._encode``) say what the SDK's encoder says
of the same spans, field for field; the SDK's OTLP/HTTP exporter is handed them."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from four import local_env, regex_parse, run, save_trajectory, scripted_invoke
from four.checks import command_check, verify
from four.otel import OtelWatch
from four.otel import _encode as encode
from four.otel._saved import saved_spans
from four.otel._send import Sender, _poster
from four.otel._spans import SCHEMA_URL, Span, SpanEvent
from four.parse import toolcall_parse
from four.trajectory import load_trajectory
from four.types import Assistant, ModelError, ModelErrorKind, ToolCall, Usage


class Keep(SpanExporter):
    def export(self, spans: object) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _ours(spans: list[Span]) -> ExportTraceServiceRequest:
    keeper = Sender(Keep(), "nowhere")
    attributes = dict(keeper._resource.attributes)
    head, scope = encode.resource(attributes), encode.scope("four", keeper._scope.version or "")
    data = encode.request(head, scope, SCHEMA_URL, [encode.span(s) for s in spans])
    request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(data)
    return request


def _sdk(spans: list[Span]) -> ExportTraceServiceRequest:
    keeper = Sender(Keep(), "nowhere")
    return encode_spans([keeper._readable(s) for s in spans])


def _spans_of_runs(tmp_path: Path) -> list[Span]:
    """Every shape four sends: a verified run (verdict events, a timeout, an exit code,
    the run OK) and a tool-call run with contents and a failed model call (ERROR)."""
    work = tmp_path / "work"
    work.mkdir()
    G = scripted_invoke([
        Assistant("done", usage=Usage(120, 4), model="scripted-1"),
        Assistant("```bash\necho 42 > r.txt; exit 3\n```", usage=Usage(150, 9), model="scripted-1"),
        Assistant("```bash\nsleep 5\n```", usage=Usage(170, 5), model="scripted-1"),
        Assistant("done", usage=Usage(180, 2), model="scripted-1"),
    ])  # fmt: skip
    first = run(G, regex_parse(finish_on_plain_text=True), local_env(timeout=0.5, cwd=str(work)),
                save_trajectory(tmp_path / "runs"), prompt="write 42 to r.txt",
                watch=OtelWatch(Sender(Keep(), "nowhere")),
                check=verify(command_check('test "$(cat r.txt)" = 42')))  # fmt: skip
    call = ToolCall("call_1", "bash", json.dumps({"command": "echo hi"}))
    G = scripted_invoke([
        Assistant("", (call,), finish_reason="tool_calls", model="m"),
        ModelError(ModelErrorKind.RATE_LIMIT, "slow down", status=429),
    ])  # fmt: skip
    second = run(G, toolcall_parse(), local_env(), save_trajectory(tmp_path / "runs"),
                 system="be brief", prompt="say hi", watch=OtelWatch(Sender(Keep(), "x")))  # fmt: skip
    return saved_spans(load_trajectory(first)) + saved_spans(load_trajectory(second), True)


def test_the_bytes_are_the_message_the_sdk_makes_of_every_shape_four_sends(
    tmp_path: Path,
) -> None:
    spans = _spans_of_runs(tmp_path)
    assert {s.name for s in spans} == {
        "invoke_agent four", "chat scripted-1", "execute_tool bash", "chat m", "chat",
    }  # fmt: skip
    assert any(s.events for s in spans) and any(s.error for s in spans) and any(s.ok for s in spans)
    assert _ours(spans) == _sdk(spans)


def test_every_kind_of_value_and_a_lone_surrogate() -> None:
    span = Span(
        "x", 2**128 - 1, 2**64 - 1, 1, 1.5, 1e9, "client",
        {"s": "é", "long": "y" * 300, "t": True, "f": False, "i": -7, "big": 2**62,
         "d": 0.25, "a": ("stop", "length"), "none": ()},
        (SpanEvent("e", 2.0, {"k": 1}),), error="why",
    )  # fmt: skip
    assert _ours([span]) == _sdk([span])
    broken = Span("\udcff", 1, 2, None, 0.0, 0.0, "internal", {"k": "a\ud800b"})
    decoded = _ours([broken]).resource_spans[0].scope_spans[0].spans[0]
    assert decoded.name == "\ufffd" * 3  # UTF-8 as protobuf wants it, not a lost request
    assert decoded.attributes[0].value.string_value == "a\ufffd\ufffd\ufffdb"


def test_the_sdk_exporter_is_handed_four_s_bytes() -> None:
    exporter = OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces")
    assert _poster(exporter) is not None  # the SDK in constraints.txt has the seam
    assert Sender(exporter, "nowhere").encodes
    assert not Sender(Keep(), "nowhere").encodes  # another exporter: the SDK's encoding
