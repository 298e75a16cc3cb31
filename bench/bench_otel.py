"""What ``--otel`` costs a run per step, and how fast saved runs are exported.

python bench/run.py otel
python bench/bench_otel.py [STEPS] [ROUNDS] [SAVED_RUNS]
python bench/bench_otel.py instructions     # counted by callgrind: needs valgrind

The spans go over real OTLP/HTTP (the SDK's exporter) to a sink in a process of its own
on 127.0.0.1 that answers every request 200 at once: what is measured is four's side,
not a tracing backend's. The loop is bench_core's: a scripted G, a one-action V1, a
fixed V2, ``save_trajectory`` on (a temporary folder). CPU time: the run's thread's
own, the run's process's whole (the threads that send, or feed the sender's process,
included), and that plus the sender's child process's (as it says it, after each flush);
and wall time.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeAlias

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


class Deaf:
    """A watch that hears each event and does nothing: the loop's own part."""

    def beat(self) -> None:
        pass

    def stopped(self) -> None:
        return None

    def hear(self, event: object) -> None:
        pass


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


Measure: TypeAlias = tuple[float, float, float, float]
"""CPU us a step: the run's thread, the run's process, that and the sender's child; and
wall us a step."""


def per_step(url: str, steps: int, rounds: int) -> dict[str, list[Measure]]:
    """Whole runs without and with a watch, the kinds alternating within each round:
    ``otel_watch`` (what ``--otel`` uses: spans and metrics made and sent by a child
    process), and, for comparison, the same spans and metrics by a sender's thread in
    the run's process (four's encoding, then the SDK's)."""
    from four import run, save_trajectory, scripted_invoke
    from four.otel import OtelWatch, flush, otel_watch
    from four.otel._metrics import Metrics
    from four.otel._send import Sender, make_sender
    from four.otel._senders import sender
    from four.otel._sidecar import Sidecar

    parse, execute = _components()
    child = sender(url)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    class SdkEncoded(OTLPSpanExporter):  # the same exporter, not handed four's bytes
        pass

    here = make_sender(f"{url}/v1/traces")
    sdk = Sender(SdkEncoded(endpoint=f"{url}/v1/traces"), url)
    assert here.encodes and not sdk.encodes
    measures = Metrics(MeterProvider([InMemoryMetricReader()]))

    class Nothing(Sidecar):  # a sender that drops all: what the watch's notes cost alone
        def __init__(self) -> None:
            super().__init__("nowhere", 0, 0.0)

        def put(self, span: object, counts: object = None) -> None:
            pass

    kinds: dict[str, Callable[[], OtelWatch | Deaf | None]] = {
        "off": lambda: None,
        "a watch that hears and does nothing": Deaf,
        "the watch's notes only (nothing sent)": lambda: OtelWatch(Nothing()),
        "`otel_watch()` (`--otel`): a child process sends": lambda: otel_watch(url),
        "a thread of the run's process sends, four's encoding": lambda: OtelWatch(
            here, metrics=measures
        ),
        "a thread of the run's process sends, the SDK's encoding": lambda: OtelWatch(
            sdk, metrics=measures
        ),
    }
    found: dict[str, list[Measure]] = {k: [] for k in kinds}
    replies = [f"echo {i}" for i in range(steps)]
    with tempfile.TemporaryDirectory() as folder:
        emit = save_trajectory(folder)
        run(
            scripted_invoke(["a"]),
            parse,
            execute,
            emit,
            prompt="go",
            max_steps=1,
            watch=otel_watch(url),
        )  # fmt: skip  (the child started, warm)
        for _ in range(rounds):
            for kind, watch in kinds.items():
                G = scripted_invoke(replies)
                for each in (child, here, sdk):  # each measure starts with nothing queued
                    assert each.flush(60)
                cpu, own, wall = time.process_time(), time.thread_time(), time.perf_counter()
                side = child.cpu
                run(G, parse, execute, emit, prompt="go", max_steps=steps, watch=watch())
                own, wall = time.thread_time() - own, time.perf_counter() - wall
                for each in (child, here, sdk):  # their making and sending counted in, too
                    assert each.flush(60)
                cpu = time.process_time() - cpu
                us = 1e6 / steps
                found[kind].append((own * us, cpu * us, (cpu + child.cpu - side) * us, wall * us))
    flush(30)
    return found


def saved(url: str, runs: int) -> tuple[int, float, float, float]:
    """Export ``runs`` saved runs of 3 steps (recorded with ``otel_watch``): spans, wall
    seconds, CPU seconds of ``export_runs``'s process and of the sender's child."""
    from four import run, save_trajectory, scripted_invoke
    from four.otel import OtelWatch, export_runs
    from four.otel._send import Sender
    from four.otel._senders import sender

    parse, execute = _components()
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Nowhere(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    quiet = Sender(Nowhere(), "nowhere")  # the runs are made, not sent
    child = sender(url)
    with tempfile.TemporaryDirectory() as folder:
        emit = save_trajectory(folder)
        paths = []
        for _ in range(runs):
            G = scripted_invoke(["a", "b", "c"])
            watch = OtelWatch(quiet)
            paths.append(run(G, parse, execute, emit, prompt="go", max_steps=3, watch=watch))
        assert child.flush(60)
        side = child.cpu
        wall, cpu = time.perf_counter(), time.process_time()
        done = export_runs(paths, url, timeout=600)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert done.sent and done.runs == runs, done
        return done.spans, wall, cpu, child.cpu - side


KINDS = ("off", "hears", "notes", "queued", "otel")
"""What ``instructions`` counts: the loop alone; with a watch that hears and does
nothing; ``OtelWatch`` with a sender that drops all; with the sidecar's queue, never
sent; ``otel_watch`` (its feeding threads counted, its child not)."""


def instructions(steps: int = 200, runs: int = 3) -> dict[str, float]:
    """Instructions a step, counted by callgrind (valgrind) for each of ``KINDS``: the
    host's load does not move them (a CPU time does). Each kind in a process of its own
    under callgrind, counting only ``runs`` runs (after 2 to warm up)."""
    found: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for kind in KINDS:
            out = Path(folder) / f"{kind}.out"
            subprocess.run(
                ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                 f"--callgrind-out-file={out}", sys.executable, __file__, "--counted", kind,
                 str(steps), str(runs)],
                check=True, capture_output=True,
            )  # fmt: skip
            totals = next(
                line for line in out.read_text().splitlines() if line.startswith("totals:")
            )
            found[kind] = int(totals.split()[1]) / (steps * runs)
    return found


def counted(kind: str, steps: int, runs: int) -> None:
    """``instructions``' part in the process callgrind runs: counting on for ``runs``
    runs of the ``kind``."""
    from four import run, save_trajectory, scripted_invoke
    from four.otel import OtelWatch, otel_watch
    from four.otel._senders import sender
    from four.otel._sidecar import Sidecar

    class Nothing(Sidecar):
        def __init__(self) -> None:
            super().__init__("nowhere", 0, 0.0)

        def put(self, span: object, counts: object = None) -> None:
            pass

    class Queued(Sidecar):  # what --otel's put does on the run's thread, never sent
        def __init__(self) -> None:
            super().__init__("nowhere", 10**9, 0.0)
            self._open = True

    parse, execute = _components()
    queued = Queued()

    def callgrind(on: str) -> None:
        subprocess.run(["callgrind_control", "-i", on, str(os.getpid())], capture_output=True)

    with sink() as url, tempfile.TemporaryDirectory() as folder:
        watches: dict[str, Callable[[], object]] = {
            "off": lambda: None, "hears": Deaf, "notes": lambda: OtelWatch(Nothing()),
            "queued": lambda: OtelWatch(queued), "otel": lambda: otel_watch(url),
        }  # fmt: skip
        emit = save_trajectory(folder)
        for i in range(2 + runs):
            if i == 2:
                callgrind("on")
            G = scripted_invoke([f"echo {i}" for i in range(steps)])
            run(G, parse, execute, emit, prompt="go", max_steps=steps, watch=watches[kind]())  # type: ignore[arg-type]
            queued._queue.clear()
            if kind == "otel":
                assert sender(url).flush(60)
        callgrind("off")


def main(argv: Sequence[str] = ()) -> None:
    if argv and argv[0] == "instructions":
        counts = instructions()
        print("| watch | instructions a step | over the loop's own |\n|---|---:|---:|")
        for kind, value in counts.items():
            print(f"| {kind} | {value:,.0f} | {value / counts['off'] - 1:+.1%} |")
        return
    steps = int(argv[0]) if argv else 200
    rounds = int(argv[1]) if len(argv) > 1 else 11
    runs = int(argv[2]) if len(argv) > 2 else 10_000
    with sink() as url:
        found = per_step(url, steps, rounds)
        off = found["off"]
        print(f"a run of {steps} steps, median of {rounds} rounds, us a step (CPU; wall); "
              "over: the median of the rounds' ratios to the loop's own\n")  # fmt: skip
        print("| sender | the run's thread | over its own | the run's process | over its own "
              "| the process and the child | over the loop's own | wall | over |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for kind, values in found.items():
            cells = []
            for i in range(4):
                value = statistics.median(m[i] for m in values)
                over = statistics.median(m[i] / o[i] for m, o in zip(values, off, strict=True))
                cells.append(f"{value:.1f} | {over - 1:+.0%}")
            print(f"| {kind} | {' | '.join(cells)} |")
        spans, wall, cpu, side = saved(url, runs)
        print(f"\n`four.otel.export_runs` of {runs:,} saved runs ({spans:,} spans): "
              f"{wall:.1f} s wall, {cpu:.1f} s CPU in the process and {side:.1f} s in the "
              f"sender's child, {spans / wall:,.0f} spans/s")  # fmt: skip


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src")]
    if sys.argv[1:2] == ["--counted"]:
        counted(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main(sys.argv[1:])
