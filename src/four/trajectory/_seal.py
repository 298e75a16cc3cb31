"""The seal: the hash chain of ``four._chain`` over a run's whole record, link by link as
it is written, from ``sha256(b"four.seal/1")``. The links, in order:

- ``format``; ``seal`` (the algorithm and, when signed, the signer's public key);
  ``info`` (the run's settings: components, limits, the check command);
- ``messages[i]``: ``{"t": seconds since the start or null, "message": ...}``, one a
  message, in order;
- ``outcome``; ``outcome_detail`` (the submission); ``stats`` (steps, usage, the verdict
  record: config, head, receipts, log, slots); ``stream``;
- ``end``: ``{"messages": count, "receipts": count, "head": the receipts' head}``;
- in the sealed document only, ``parts``: the list of the parts' short digests (below).

Between a stream's records, heartbeats (``{"type": "beat", "t": ...}``, written by a
live driver) carry ``sha256(digest + canonical(["beat", "value", {"t": t}]))`` off the
running digest, which they leave as it is: a heartbeat is checked (and signed) where it
stands, but it is no part of the record, and the document has none.

The stream's records carry the digest after their links (start, each message, end), so
a stream cut short is a valid prefix. The sealed document carries the final digest, the
first 16 hex digits of each link's digest (``links``), and of each part's (``parts``:
``info``, ``outcome_detail`` and ``stats`` taken apart, two levels deep: an object is a
part of its sorted key list, then one per key), so that an audit names the first field
that does not match; ``parts`` is under the seal through its own link.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from four._chain import canonical, canonical_text, chain, link_text, start
from four._types import JSON

__all__ = ["ALGORITHM", "Chain", "canonical", "canonical_text", "check_document", "check_stream"]

ALGORITHM = "four.seal/1"
_GENESIS = start(ALGORITHM)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX128 = re.compile(r"[0-9a-f]{128}")
DOCUMENT_FIELDS = (
    "format",
    "outcome",
    "outcome_detail",
    "info",
    "stats",
    "stream",
    "timestamps",
    "seal",
    "messages",
)
_RECORD_FIELDS = {
    "start": frozenset({"type", "format", "info", "seal", "digest", "signature"}),
    "message": frozenset({"type", "t", "message", "digest", "signature"}),
    "beat": frozenset({"type", "t", "digest", "signature"}),
    "end": frozenset(
        {"type", "outcome", "outcome_detail", "stats", "stream", "digest", "signature"}
    ),
}


class Chain:
    """The running digest, and each link's label and (short) digest."""

    __slots__ = ("digest", "labels", "links")

    def __init__(self) -> None:
        self.digest = _GENESIS
        self.labels: list[str] = []
        self.links: list[str] = []

    def copy(self) -> Chain:
        other = Chain()
        other.digest, other.labels, other.links = self.digest, [*self.labels], [*self.links]
        return other

    def link(self, label: str, value: JSON) -> None:
        self.link_encoded(label, canonical_text(label), canonical_text(value))

    def link_encoded(self, label: str, label_text: str, value_text: str) -> str:
        """``link`` from the label and value already encoded (``canonical`` text: the
        writer encodes each message once, for the link, the stream and the document).
        Returns the new digest in hex."""
        self.digest = link_text(self.digest, label_text, value_text)
        text = self.digest.hex()
        self.labels.append(label)
        self.links.append(text[:16])
        return text

    def beat(self, t: str) -> bytes:
        """A heartbeat's digest at time ``t`` (its canonical text): off the running
        digest, which does not change."""
        return link_text(self.digest, '"beat"', f'{{"t":{t}}}')

    def start(self, fmt: JSON, seal: JSON, info: JSON) -> None:
        self.start_encoded(fmt, seal, canonical_text(info))

    def start_encoded(self, fmt: JSON, seal: JSON, info: str) -> None:
        """``start`` with the info already encoded."""
        self.link("format", fmt)
        self.link("seal", seal)
        self.link_encoded("info", '"info"', info)

    def message(self, index: int, t: JSON, message: JSON) -> None:
        self.link(f"messages[{index}]", {"t": t, "message": message})

    def end(self, outcome: JSON, detail: JSON, stats: JSON, stream: JSON, messages: int) -> None:
        texts = canonical_text(outcome), canonical_text(detail), canonical_text(stats)
        self.end_encoded(*texts, canonical_text(stream), messages, verdict_facts(stats))

    def end_encoded(
        self,
        outcome: str,
        detail: str,
        stats: str,
        stream: str,
        messages: int,
        verdicts: tuple[int, str | None],
    ) -> None:
        """``end`` with the values already encoded, and the stats' ``verdict_facts``."""
        self.link_encoded("outcome", '"outcome"', outcome)
        self.link_encoded("outcome_detail", '"outcome_detail"', detail)
        self.link_encoded("stats", '"stats"', stats)
        self.link_encoded("stream", '"stream"', stream)
        receipts, head = verdicts
        self.link("end", {"messages": messages, "receipts": receipts, "head": head})

    def close(self, parts: list[str]) -> None:
        """The document's last link: its parts' digests."""
        self.link("parts", cast(JSON, parts))


_PARTS = (("info", 2), ("outcome_detail", 1), ("stats", 2))


def parts(document: Mapping[str, JSON]) -> list[tuple[str, str]]:
    """The labels and short digests of a document's parts (see the module docstring)."""
    out: list[tuple[str, str]] = []
    for name, depth in _PARTS:
        encode_parts(name, document.get(name), depth, out)
    return out


def encode_parts(label: str, value: JSON, depth: int, out: list[tuple[str, str]]) -> str:
    """``canonical_text(value)``, and the parts of ``value`` (the field ``label`` taken
    apart ``depth`` levels deep) appended to ``out``: each piece is encoded once, for its
    own part and for the whole (the writer's values are encoded once a run).

    >>> found = []
    >>> encode_parts("stats", {"steps": 2}, 2, found)
    '{"steps":2}'
    >>> [label for label, _ in found]
    ['stats', 'stats.steps']
    """
    name = canonical_text(label)
    if not (depth and isinstance(value, dict)):
        text = canonical_text(value)
        out.append((label, _short(f'[{name},"value",{text}]')))
        return text
    if depth == 1 and not any(isinstance(v, dict | list) for v in value.values()):
        # an object of scalars: the same recur run after run (driver, usage...); one that
        # holds lists or objects (a run's otel record: a line a step) is taken apart
        # once, not kept (its text would be a cache key a run long)
        text = canonical_text(value)  # (the text the parts would build: test_seal checks)
        known = _RECURRING.get((label, text))
        if known is None:
            known = []
            _encode_object(label, name, value, 1, known)
            if len(_RECURRING) >= 1024:
                _RECURRING.clear()
            _RECURRING[label, text] = known
        out.extend(known)
        return text
    return _encode_object(label, name, value, depth, out)


_RECURRING: dict[tuple[str, str], list[tuple[str, str]]] = {}
"""The parts of objects of leaves seen lately, by label and canonical text."""


def _encode_object(
    label: str, name: str, value: dict[str, JSON], depth: int, out: list[tuple[str, str]]
) -> str:
    keys = sorted(value)
    if not all(type(key) is str for key in keys):  # not from JSON: let json say how
        out.append((label, _short(f'[{name},"object",{canonical_text(list[JSON](keys))}]')))
        for key in keys:
            encode_parts(f"{label}.{key}", value[key], depth - 1, out)
        return canonical_text(value)
    names = [canonical_text(key) for key in keys]
    out.append((label, _short(f'[{name},"object",[{",".join(names)}]]')))
    texts = [encode_parts(f"{label}.{key}", value[key], depth - 1, out) for key in keys]
    return "{" + ",".join(f"{n}:{t}" for n, t in zip(names, texts, strict=True)) + "}"


def _short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def recompute(document: Mapping[str, JSON]) -> Chain:
    """A document's chain from its fields, up to (not including) its parts link."""
    seal = document.get("seal")
    settings = (
        {k: v for k, v in seal.items() if k in ("algorithm", "signer")}
        if isinstance(seal, dict)
        else seal
    )
    messages = cast(list[JSON], document.get("messages"))
    times = cast(list[JSON], document.get("timestamps")) or [None] * len(messages)
    stats = document.get("stats")
    receipts, head = verdict_facts(stats)
    links: list[tuple[str, JSON]] = [
        ("format", document.get("format")),
        ("seal", settings),
        ("info", document.get("info")),
        *(
            (f"messages[{i}]", {"t": t, "message": message})
            for i, (t, message) in enumerate(zip(times, messages, strict=True))
        ),
        ("outcome", document.get("outcome")),
        ("outcome_detail", document.get("outcome_detail")),
        ("stats", stats),
        ("stream", document.get("stream")),
        ("end", {"messages": len(messages), "receipts": receipts, "head": head}),
    ]
    out = Chain()
    out.digest, out.links = chain(out.digest, links)
    out.labels = [label for label, _ in links]
    return out


def verdict_facts(stats: JSON) -> tuple[int, str | None]:
    """The receipt count and head a stats record holds (0 and None for none)."""
    verdicts = stats.get("verdicts") if isinstance(stats, dict) else None
    if not isinstance(verdicts, dict):
        return 0, None
    document = verdicts.get("receipts")
    entries = document.get("receipts") if isinstance(document, dict) else None
    head = verdicts.get("head")
    return (len(entries) if isinstance(entries, list) else 0), head if isinstance(
        head, str
    ) else None


Verifier = Callable[[str, bytes, str], bool | None]
"""Checks a signature: (public key hex, digest, signature hex) -> whether it holds, or
None when it cannot be checked here (no ``cryptography``)."""


@dataclass(frozen=True, slots=True)
class SealCheck:
    """What the seal of one file says. ``signature`` is "valid" (it verifies against
    ``signer``), "unchecked" (no ``cryptography`` here) or "none" (unsigned, or it did
    not verify: then ``errors`` says so)."""

    errors: tuple[str, ...]
    finished: bool
    messages: int
    digest: str
    signer: str | None
    signature: Literal["valid", "unchecked", "none"]
    record: Mapping[str, JSON]  # the document, or the stream's fields (outcome, stats, ...)


def _settings(seal: JSON, where: str, errors: list[str]) -> tuple[str | None, bool]:
    """The signer a seal names, and whether its settings can be read."""
    if not isinstance(seal, dict):
        errors.append(f"{where}: the seal is not an object")
        return None, False
    if seal.get("algorithm") != ALGORITHM:
        errors.append(f"{where}: seal algorithm {seal.get('algorithm')!r}, not {ALGORITHM!r}")
        return None, False
    signer = seal.get("signer")
    if signer is not None and not (isinstance(signer, str) and _HEX64.fullmatch(signer)):
        errors.append(f"{where}: seal.signer is not a public key (64 hex digits)")
        return None, False
    return signer, True


def _signature(
    value: JSON, signer: str | None, digest: bytes, where: str, verify: Verifier | None
) -> tuple[Literal["valid", "unchecked", "none"], str | None]:
    """The state of one signature, and the error it makes (if any)."""
    if signer is None:
        if value is not None:
            return "none", f"{where}: a signature but no signer in the seal"
        return "none", None
    if not (isinstance(value, str) and _HEX128.fullmatch(value)):
        return "none", f"{where}: signed by {signer[:16]}, but the signature is missing"
    holds = None if verify is None else verify(signer, digest, value)
    if holds is None:
        return "unchecked", None
    if not holds:
        return "none", f"{where}: the signature does not verify against its signer"
    return "valid", None


def check_document(data: Mapping[str, JSON], verify: Verifier | None) -> SealCheck:
    """Recompute a sealed document's chain and compare it with its seal."""
    errors: list[str] = []
    fields = set(data)
    if "seal" not in fields:
        return _broken("not sealed: the document has no seal", data)
    errors += [f"field {k!r} is missing" for k in DOCUMENT_FIELDS if k not in fields]
    errors += [
        f"unexpected field {k!r}: not under the seal" for k in sorted(fields - set(DOCUMENT_FIELDS))
    ]
    seal = data["seal"]
    signer, readable = _settings(seal, "seal", errors)
    messages, timestamps = data.get("messages"), data.get("timestamps")
    if not isinstance(messages, list):
        errors.append("messages is not a list")
    elif not isinstance(timestamps, list) or len(timestamps) not in (0, len(messages)):
        errors.append(
            f"timestamps: {len(timestamps) if isinstance(timestamps, list) else 'none'} "
            f"for {len(messages)} messages"
        )
    if errors or not readable or not isinstance(messages, list):
        return _broken(errors, data)
    seal = cast(dict[str, JSON], seal)
    recorded = seal.get("digest")
    links = seal.get("links")
    if not (isinstance(recorded, str) and _HEX64.fullmatch(recorded)):
        return _broken("seal.digest is not a digest (64 hex digits)", data)
    if not (isinstance(links, list) and all(isinstance(x, str) for x in links)):
        return _broken("seal.links is not a list of digests", data)
    stored = seal.get("parts")
    if not (isinstance(stored, list) and all(isinstance(x, str) for x in stored)):
        return _broken("seal.parts is not a list of digests", data)
    chain = recompute(data)
    links_now = list(chain.links)
    chain.close(cast(list[str], stored))
    receipts, _ = verdict_facts(data["stats"])
    for name, actual in (("messages", len(messages)), ("receipts", receipts)):
        claimed = seal.get(name)
        if claimed != actual:
            errors.append(f"the seal covers {claimed} {name}, the record has {actual}")
    if chain.digest.hex() != recorded or links != links_now:
        errors.append(_first_difference(data, chain, links_now, cast(list[str], links)))
    state, problem = _signature(seal.get("signature"), signer, chain.digest, "seal", verify)
    if problem:
        errors.append(problem)
    extra = set(seal) - {
        "algorithm",
        "signer",
        "messages",
        "receipts",
        "links",
        "parts",
        "digest",
        "signature",
    }
    errors += [f"unexpected field 'seal.{k}': not under the seal" for k in sorted(extra)]
    return SealCheck(tuple(errors), True, len(messages), recorded, signer, state, data)


def _first_difference(
    data: Mapping[str, JSON], chain: Chain, links: list[str], stored: list[str]
) -> str:
    """What does not match: the first link that differs, and in it the first part."""
    for label, ours, theirs in zip(chain.labels, links, stored, strict=False):
        if ours != theirs:
            return f"{_deepest(data, label)} does not match the seal"
    if len(links) > len(stored):
        return f"{chain.labels[len(stored)]} is not under the seal (appended)"
    if len(links) < len(stored):
        return "the seal has more links than the record: something was dropped at the end"
    recorded = cast(dict[str, JSON], data["seal"]).get("parts")
    if [short for _, short in parts(data)] != recorded:
        return "seal.parts were edited (the record matches its links)"
    return "seal.digest does not match the record (the digest itself was edited)"


def _deepest(data: Mapping[str, JSON], label: str) -> str:
    """The first part under ``label`` whose digest differs from the recorded one."""
    recorded = cast(dict[str, JSON], data["seal"]).get("parts")
    if not isinstance(recorded, list):
        return label
    for (name, ours), theirs in zip(parts(data), recorded, strict=False):
        if (name == label or name.startswith(f"{label}.")) and ours != theirs:
            return name  # an object's part differs when its keys do
    return label


def check_stream(text: str, verify: Verifier | None) -> SealCheck:
    """Recompute a ``.jsonl`` stream's chain record by record. A last line without its
    newline is the write in flight when the process died, and is left out; a stream
    without its end record is a valid, unfinished prefix."""
    lines = text.split("\n")
    lines.pop()  # "" after the last newline, or the line in flight
    errors: list[str] = []
    chain = Chain()
    signer: str | None = None
    signature: Literal["valid", "unchecked", "none"] = "none"
    fields: dict[str, JSON] = {}
    messages = 0
    finished = False
    for number, line in enumerate(lines, 1):
        where = f"line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{where} is not JSON: {exc.msg}")
            break
        except RecursionError:
            errors.append(f"{where} is nested too deeply to read")
            break
        kind = record.get("type") if isinstance(record, dict) else None
        if finished:
            errors.append(f"{where}: a record after the end record")
            break
        if kind not in _RECORD_FIELDS or (number == 1) != (kind == "start"):
            expected = "a start record" if number == 1 else "a message or end record"
            errors.append(f"{where}: {kind!r} record where {expected} belongs")
            break
        record = cast(dict[str, JSON], record)
        if extra := set(record) - _RECORD_FIELDS[kind]:
            errors.append(f"{where}: unexpected field {sorted(extra)[0]!r}: not under the seal")
            break
        if missing := sorted(_RECORD_FIELDS[kind] - {"signature"} - set(record)):
            errors.append(
                "not sealed: the stream has no running digest"
                if number == 1 and "digest" in missing and "seal" in missing
                else f"{where}: field {missing[0]!r} is missing"
            )
            break
        if kind == "beat":
            digest = chain.beat(canonical_text(record["t"]))
            if record["digest"] != digest.hex():
                errors.append(f"{where} (heartbeat) does not match its digest")
                break
            _, problem = _signature(
                record.get("signature"), signer, digest, f"{where} (heartbeat)", verify
            )
            if problem:
                errors.append(problem)
                break
            continue
        if kind == "start":
            signer, readable = _settings(record["seal"], where, errors)
            if not readable:
                break
            fields = {"format": record["format"], "info": record["info"]}
            chain.start(record["format"], record["seal"], record["info"])
            label = "start"
        elif kind == "message":
            chain.message(messages, record["t"], record["message"])
            label = f"messages[{messages}]"
            messages += 1
        else:
            chain.end(
                record["outcome"],
                record["outcome_detail"],
                record["stats"],
                record["stream"],
                messages,
            )
            fields.update({k: record[k] for k in ("outcome", "outcome_detail", "stats", "stream")})
            label, finished = "end", True
        if record["digest"] != chain.digest.hex():
            errors.append(f"{where} ({label}) does not match its digest")
            break
        signature, problem = _signature(
            record.get("signature"), signer, chain.digest, f"{where} ({label})", verify
        )
        if problem:
            errors.append(problem)
            break
    if not lines:
        errors.append("the stream is empty")
    return SealCheck(
        tuple(errors), finished, messages, chain.digest.hex(), signer, signature, fields
    )


def _broken(errors: str | list[str], data: Mapping[str, JSON]) -> SealCheck:
    found = (errors,) if isinstance(errors, str) else tuple(errors)
    return SealCheck(found, True, 0, "", None, "none", data)
