"""Runs as OpenTelemetry traces, in the GenAI semantic conventions (``four-loop[otel]``).

otel_watch(...)          the ``watch=`` of ``run``/``arun``: each step sent as a span as
                         it ends, the trace's ids kept in the trajectory
export_runs(paths, ...)  saved runs sent after the fact, with their recorded times
flush(timeout)           wait for the spans put so far to be sent
step_span_id(trace, i)   the span id of a run's step i (of ``stats.otel.steps``)
"""

from four.otel._api import export_runs, flush, otel_watch
from four.otel._spans import SEMCONV, step_span_id
from four.otel._watch import OtelWatch

__all__ = ["SEMCONV", "OtelWatch", "export_runs", "flush", "otel_watch", "step_span_id"]
