"""What ``--otel`` costs a run per step, and how fast saved runs are exported.

python bench/run.py otel
python bench/bench_otel.py [STEPS] [ROUNDS] [SAVED_RUNS]

The spans go over real OTLP/HTTP (the SDK's exporter) to a sink in a process of its own
on 127.0.0.1 that answers every request 200 at once: what is measured is four's side,
not a tracing backend's. The loop is bench_core's: a scripted G, a one-action V1, a
fixed V2, ``save_trajectory`` on (a temporary folder). CPU time is this process's whole
(the sender's thread included).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from returns.result import Result, Success

from four.types import Execute, Parse

SINK = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@contextmanager
def sink() -> Iterator[str]:
    """A local OTLP/HTTP receiver that takes everything (its URL)."""
    process = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{process.stdout.readline().strip()}"
    finally:
        process.terminate()
        process.wait()


def _components() -> tuple[Parse, Execute]:
    from four import Action, ExecutionError, FormatError, Observation, Rejected, Submitted
    from four.types import Reply

    def parse(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
        return Success([Action(reply.content)])

    def execute(action: Action) -> Result[Observation, Submitted | ExecutionError]:
        return Success(Observation("<returncode>0</returncode>\n<output>\nok\n</output>", 0))

    return parse, execute


def per_step(url: str, steps: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """CPU us a step of whole runs, without and with an ``otel_watch`` (its spans, and
    its spans and metrics; and its spans encoded by the SDK, as before four's own
    encoder), the kinds alternating within each round: the process's (the sender's
    thread, its encoding and requests, included) and the run's thread's own."""
    from four import run, save_trajectory, scripted_invoke
    from four.otel import OtelWatch, flush
    from four.otel._metrics import Metrics
    from four.otel._send import Sender, sender

    parse, execute = _components()
    out = sender(url)
    assert out.encodes
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    class SdkEncoded(OTLPSpanExporter):  # the same exporter, not handed four's bytes
        pass

    sdk = Sender(SdkEncoded(endpoint=f"{url}/v1/traces"), url)
    assert not sdk.encodes
    measures = Metrics(MeterProvider([InMemoryMetricReader()]))
    kinds: dict[str, Callable[[], OtelWatch | None]] = {
        "off": lambda: None,
        "spans": lambda: OtelWatch(out),
        "spans + metrics (`--otel`)": lambda: OtelWatch(out, metrics=measures),
        "spans, the SDK's encoding": lambda: OtelWatch(sdk),
    }
    found: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    replies = [f"echo {i}" for i in range(steps)]
    with tempfile.TemporaryDirectory() as folder:
        emit = save_trajectory(folder)
        for _ in range(rounds):
            for kind, watch in kinds.items():
                G = scripted_invoke(replies)
                flush(30)  # each measure starts with nothing queued
                sdk.flush(30)
                cpu, own = time.process_time(), time.thread_time()
                run(G, parse, execute, emit, prompt="go", max_steps=steps, watch=watch())
                own = time.thread_time() - own
                flush(30)  # the spans' making and sending counted in, too
                sdk.flush(30)
                found[kind].append(((time.process_time() - cpu) / steps * 1e6, own / steps * 1e6))
    return found


def saved(url: str, runs: int) -> tuple[int, float, float]:
    """Export ``runs`` saved runs of 3 steps (recorded with ``otel_watch``): spans, wall
    and CPU seconds of ``export_runs``."""
    from four import run, save_trajectory, scripted_invoke
    from four.otel import OtelWatch, export_runs
    from four.otel._send import Sender

    parse, execute = _components()
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Nowhere(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    quiet = Sender(Nowhere(), "nowhere")  # the runs are made, not sent
    with tempfile.TemporaryDirectory() as folder:
        emit = save_trajectory(folder)
        paths = []
        for _ in range(runs):
            G = scripted_invoke(["a", "b", "c"])
            watch = OtelWatch(quiet)
            paths.append(run(G, parse, execute, emit, prompt="go", max_steps=3, watch=watch))
        wall, cpu = time.perf_counter(), time.process_time()
        done = export_runs(paths, url, timeout=600)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert done.sent and done.runs == runs, done
        return done.spans, wall, cpu


def main(argv: Sequence[str] = ()) -> None:
    steps = int(argv[0]) if argv else 100
    rounds = int(argv[1]) if len(argv) > 1 else 7
    runs = int(argv[2]) if len(argv) > 2 else 10_000
    with sink() as url:
        found = per_step(url, steps, rounds)
        base = statistics.median(v for v, _ in found["off"])
        base_own = statistics.median(v for _, v in found["off"])
        print(f"a run of {steps} steps, median of {rounds} rounds, CPU us a step\n")
        print("| watch | process | over the loop's own | the run's thread | over its own |")
        print("|---|---:|---:|---:|---:|")
        for kind, values in found.items():
            value = statistics.median(v for v, _ in values)
            own = statistics.median(v for _, v in values)
            print(f"| {kind} | {value:.1f} | {value / base - 1:+.0%} | {own:.1f} | "
                  f"{own / base_own - 1:+.0%} |")  # fmt: skip
        spans, wall, cpu = saved(url, runs)
        print(f"\n`four.otel.export_runs` of {runs:,} saved runs ({spans:,} spans): "
              f"{wall:.1f} s wall, {cpu:.1f} s CPU, {spans / wall:,.0f} spans/s")  # fmt: skip


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src")]
    main(sys.argv[1:])
