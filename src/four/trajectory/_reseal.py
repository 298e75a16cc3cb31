"""Sealing the stream of a run whose driver is gone: the end record and the document a
live driver would have written, with the outcome the caller gives (``stopped: ...``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import cast

from four._outcomes import Outcome
from four._types import JSON, NO_USAGE, Assistant, Message, RunStats
from four.trajectory._load import read_text, stream_records
from four.trajectory._record import message_from_json
from four.trajectory._save import TrajectorySink
from four.trajectory._seal import Chain, canonical_text, check_stream
from four.trajectory._sign import SigningKey


class NotResealable(ValueError):
    """The stream cannot be sealed here: finished already, damaged, or signed by a key
    that was not given."""


def seal_stream(jsonl: Path, outcome: Outcome, key: SigningKey | None = None) -> Path:
    """Seal the ``.jsonl`` of an unfinished run as ``outcome``: its end record is
    appended (a last line cut short is dropped first) and its ``.json`` written, so
    ``four audit`` checks both. Its driver must be gone: nothing else may write it.
    A signed stream needs its signing ``key``. Returns the document's path."""
    text = read_text(jsonl)
    found = check_stream(text, None)
    if found.errors:
        raise NotResealable(f"{jsonl}: {found.errors[0]}")
    if found.finished:
        raise NotResealable(f"{jsonl} is sealed already")
    if found.signer is not None and (key is None or key.public != found.signer):
        raise NotResealable(f"{jsonl} is signed by {found.signer[:16]}: give its key (--sign)")
    whole = text[: text.rfind("\n") + 1]  # up to the last whole line
    chain = Chain()
    messages: list[str] = []
    times: list[float] = []
    history: list[Message] = []
    info: dict[str, JSON] = {}
    seal: dict[str, JSON] = {}
    for record in stream_records(whole):
        kind = record.get("type")
        if kind == "start":
            info = cast(dict[str, JSON], record["info"])
            seal = cast(dict[str, JSON], record["seal"])
            chain.start(record["format"], seal, info)
        elif kind == "message":
            data = cast(dict[str, JSON], record["message"])
            chain.message(len(messages), record["t"], data)
            messages.append(canonical_text(data))
            times.append(float(cast(float, record["t"])))
            message = message_from_json(data)
            if message is not None:
                history.append(message)
    started = info.get("started_at")
    begun = float(started) if isinstance(started, int | float) else time.time()
    usage = NO_USAGE
    for m in history:
        if isinstance(m, Assistant) and m.usage is not None:
            usage = usage + m.usage
    steps = sum(1 for m in history if isinstance(m, Assistant))
    size = len(whole.encode())
    sink = TrajectorySink.reopen(jsonl, info, seal, chain, messages, times, size, key)
    return sink.close(history, outcome, RunStats(steps, usage, begun, time.time()))
