"""``otel_watch``, ``export_runs`` and ``flush``: what a user of the library calls."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from four._checked import checked
from four._types import Watch
from four.otel._saved import saved_spans
from four.otel._send import AT_EXIT
from four.otel._senders import flush_all, sender
from four.otel._sidecar import COUNTED
from four.otel._watch import OtelWatch
from four.trajectory import TrajectoryError, load_trajectory
from four.trajectory._load import MAX_BYTES

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventions' opt-in to message contents in spans (``true``)."""


def content_wanted(content: bool | None) -> bool:
    """``content`` if given, else what ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
    says (off unless ``true``)."""
    if content is not None:
        return content
    return os.environ.get(CONTENT_VARIABLE, "").strip().lower() in ("true", "1")


@checked
def otel_watch(
    endpoint: str | None = None, *, content: bool | None = None, then: Watch | None = None
) -> OtelWatch:
    """A watch that sends one run as OpenTelemetry spans (GenAI conventions) while it
    goes: ``run(..., watch=otel_watch())``, for ``run`` and ``arun`` alike; one per run.

    ``endpoint``: an OTLP/HTTP receiver (None: the standard ``OTEL_*`` variables);
    ``content``: message contents in the spans (None: the conventions' opt-in variable);
    ``then``: another watch this one stands in front of (a batch's supervisor). A
    receiver that is down or slow never slows the run (docs/otel.md).

    >>> watch = otel_watch("http://127.0.0.1:4318")
    >>> watch.sender.where, watch.trace_id
    ('http://127.0.0.1:4318/v1/traces', None)
    """
    return OtelWatch(sender(endpoint), content_wanted(content), then, COUNTED)


@dataclass(frozen=True, slots=True)
class Exported:
    """What ``export_runs`` did: runs read, spans put, whether all were sent (``lost``:
    how many were not), and the files it could not read (path and why)."""

    runs: int
    spans: int
    sent: bool
    lost: int = 0
    unreadable: tuple[tuple[str, str], ...] = ()


@checked
def export_runs(
    paths: Iterable[str | os.PathLike[str]],
    endpoint: str | None = None,
    *,
    content: bool | None = None,
    timeout: float = AT_EXIT,
    max_bytes: int = MAX_BYTES,
) -> Exported:
    """Send saved runs (their ``.json``, or a stream ``.jsonl`` cut short) as spans with
    their recorded times: a run recorded with ``otel_watch`` gives the spans, ids
    included, that it gave live. Waits ``timeout`` seconds at most for them to be sent
    (``sent``: all were taken by the receiver). A file that is no trajectory (or larger
    than ``max_bytes``) is skipped, named in ``unreadable`` with why.

    >>> export_runs([], "http://127.0.0.1:4318").runs
    0
    """
    out = sender(endpoint)
    wanted = content_wanted(content)
    failed_before = out.failed + out.dropped
    runs = spans = 0
    unreadable: list[tuple[str, str]] = []
    for path in paths:
        try:
            run = load_trajectory(path, max_bytes=max_bytes)
        except (TrajectoryError, OSError) as exc:
            unreadable.append((str(path), str(exc)))
            continue
        runs += 1
        for span in saved_spans(run, wanted):
            out.put(span)
            spans += 1
    done = out.flush(timeout)
    lost = out.failed + out.dropped - failed_before
    return Exported(runs, spans, done and not lost, lost, tuple(unreadable))


@checked
def flush(timeout: float = AT_EXIT) -> bool:
    """Wait until every span put so far is sent or lost (``timeout`` seconds at most per
    receiver); whether none is waiting still. A process flushes on its way out anyway."""
    return all(s.flush(0) for s in flush_all(timeout))
