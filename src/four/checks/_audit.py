"""four.audit: check a run's seal, its signature, and the verdict receipts it holds."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Literal

from four._chain import decode
from four._checked import checked
from four._files import walk
from four._types import JSON, Checked
from four.checks._judge import config_from_json
from four.quaternary import (
    AuditResult,
    ComputeNeed,
    ControllerAction,
    EvaluationReceipt,
    QICTConfig,
    TransitionReceipt,
    audit_trace,
)
from four.quaternary._canonical import EVENT_FIELDS, FORMAT_VERSION, STATE_FIELDS
from four.quaternary._receipts import receipts_from_json
from four.trajectory import Trajectory
from four.trajectory._artifacts import artifact_problems
from four.trajectory._load import read_text
from four.trajectory._seal import SealCheck, canonical_text, check_document, check_stream
from four.trajectory._sign import have_cryptography, verify_signature, wanted_key

_HEX64 = re.compile(r"[0-9a-f]{64}")
_RECEIPTS = "four.quaternary.receipts"
_FIELDS: dict[str, tuple[str, ...]] = {
    "evaluation": ("verdict", "payload", "arcs", "action", "index", "after", "digest"),
    "event": ("event", "action", "after", "digest"),
}


@dataclass(frozen=True, slots=True)
class Audit(Checked):
    """What ``four.audit`` found in one file (its fields: docs/seal.md)."""

    path: Path
    valid: bool
    errors: tuple[str, ...]
    finished: bool = True
    trajectory: bool = True  # False: the file is not a four trajectory at all
    outcome: str | None = None
    messages: int = 0
    signer: str | None = None
    signature: Literal["valid", "unchecked", "none"] = "none"
    key_checked: bool = False
    verified: bool = False
    evaluations: int = 0
    initial_rank: int = 0
    final_rank: int = 0
    head: bytes = b""
    receipts: int = 0
    digest: str = ""

    @property
    def signed(self) -> bool:
        """The record carries a signature that verifies against its signer."""
        return self.signature == "valid"

    @property
    def status(self) -> Literal["valid", "unfinished", "invalid", "skipped"]:
        if not self.trajectory:
            return "skipped"
        if not self.valid:
            return "invalid"
        return "valid" if self.finished else "unfinished"


@checked
def audit(
    trajectory: str | os.PathLike[str] | Trajectory,
    *,
    public_key: str | os.PathLike[str] | None = None,
) -> Audit:
    """Check a saved run, its sealed ``.json`` or its ``.jsonl`` stream, against its seal,
    its verdict receipts and, with ``public_key``, its signer (docs/seal.md).

    >>> audit("missing.json")
    Traceback (most recent call last):
    ...
    four.trajectory._load.TrajectoryError: cannot read missing.json: No such file or directory
    """
    path = trajectory.path if isinstance(trajectory, Trajectory) else Path(trajectory)
    return _audit_path(path, wanted_key(public_key))


def _audit_path(path: Path, wanted: str | None) -> Audit:
    """``audit`` of a path, with the key already read (``audit_all``'s arguments need no
    checking a file)."""
    text = read_text(path)  # a regular file within the size limit, or TrajectoryError
    if path.suffix == ".jsonl":
        first = text.split("\n", 1)[0]
        if not _ours(_loads(first), "start"):
            return Audit(path, False, ("not a four trajectory stream",), trajectory=False)
        return _finish(path, check_stream(text, _verify), wanted)
    data = _loads(text)
    if not isinstance(data, dict):
        problem = "not JSON (cut short, or not a trajectory)" if data is None else "not an object"
        return Audit(path, False, (f"the document is {problem}",), trajectory=data is None)
    if not _ours(data, None):
        return Audit(path, False, ("not a four trajectory",), trajectory=False)
    return _finish(path, check_document(data, _verify), wanted)


def audit_all(
    paths: Sequence[Path], *, public_key: str | None = None, jobs: int | None = None
) -> Iterator[Audit]:
    """``audit`` of each path, in order; an unreadable file is an invalid result. Many
    files (256 or more) are audited by ``jobs`` processes (default: one a core, at most 8).
    ``public_key`` is a key as ``load_public_key`` returns it (hex)."""
    workers = jobs or min(os.cpu_count() or 1, 8)
    if workers == 1 or len(paths) < 256:
        yield from (_audit_one(path, public_key) for path in paths)
        return
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        chunk = max(16, min(256, len(paths) // (workers * 4)))
        yield from pool.map(_audit_one, paths, repeat(public_key), chunksize=chunk)


def _audit_one(path: Path, public_key: str | None) -> Audit:
    try:
        return _audit_path(path, wanted_key(public_key))
    except (OSError, ValueError) as exc:  # unreadable: TrajectoryError is a ValueError
        return Audit(path, False, (str(exc),))


def runs_under(folder: str | os.PathLike[str]) -> Iterator[Path]:
    """Every run saved under ``folder`` (recursively), in name order: each sealed
    ``.json``, and each ``.jsonl`` with no ``.json`` beside it (a run still going, or
    killed). Other files ending in ``.json`` or ``.jsonl`` come too (audit skips them)."""
    for listing in walk(folder):  # no recursion: a folder thousands deep is walked too
        names = listing.names()
        for name in sorted(names):  # a FIFO or a link comes too: audit names what it is
            if name.endswith(".json") or (
                name.endswith(".jsonl") and f"{name.removesuffix('.jsonl')}.json" not in names
            ):
                yield listing.folder / name


def _verify(public: str, digest: bytes, signature: str) -> bool | None:
    """A signature checked, importing ``cryptography`` only for a record that is signed."""
    return verify_signature(public, digest, signature) if have_cryptography() else None


def _loads(text: str) -> JSON:
    try:
        return decode(text)
    except (ValueError, RecursionError):  # not JSON, or nested beyond the parser's depth
        return None


def _ours(data: JSON, kind: str | None) -> bool:
    if not isinstance(data, dict) or (kind is not None and data.get("type") != kind):
        return False
    fmt = data.get("format")
    return "seal" in data or (isinstance(fmt, str) and fmt.startswith("four.trajectory"))


def _finish(path: Path, seal: SealCheck, wanted: str | None) -> Audit:
    errors = list(seal.errors)
    record = seal.record
    stats = record.get("stats")
    verdicts = stats.get("verdicts") if isinstance(stats, dict) else None
    detail = record.get("outcome_detail")
    problems, result, count = _verdicts(verdicts, detail) if verdicts is not None else ([], None, 0)
    errors += problems  # also under a broken seal: say what else is wrong
    if verdicts is None and isinstance(detail, dict) and detail.get("kind") == "accepted":
        errors.append("the outcome is 'accepted' but the run holds no verdicts to show it")
    if isinstance(stats, dict) and "artifacts" in stats:  # files beside it, sealed by digest
        errors += artifact_problems(path.parent, stats["artifacts"])
    if wanted is not None:
        if seal.signer is None:
            errors.append(f"not signed: the audit asked for a signature by {wanted[:16]}")
        elif seal.signer != wanted:
            errors.append(f"signed by {seal.signer[:16]}, not by the given key {wanted[:16]}")
        elif seal.signature == "unchecked":
            errors.append("the signature cannot be checked: pip install 'four-loop[sign]'")
    outcome = record.get("outcome")
    return Audit(
        path,
        not errors,
        tuple(errors),
        finished=seal.finished,
        outcome=outcome if isinstance(outcome, str) else None,
        messages=seal.messages,
        signer=seal.signer,
        signature=seal.signature,
        key_checked=wanted is not None and seal.signature == "valid" and seal.signer == wanted,
        verified=verdicts is not None,
        evaluations=result.evaluations if result else 0,
        initial_rank=result.initial_rank if result else 0,
        final_rank=result.final_rank if result else 0,
        head=result.head if result else b"",
        receipts=count,
        digest=seal.digest,
    )


def _verdicts(record: JSON, detail: JSON) -> tuple[list[str], AuditResult | None, int]:
    """Replay a verified run's receipts; the errors (each naming its field), the
    replay's result, and the receipt count."""
    if not isinstance(record, dict):
        return ["stats.verdicts is not an object"], None, 0
    errors: list[str] = []
    config = None
    try:
        config = _config(canonical_text(record.get("config")))
    except ValueError as exc:
        errors.append(f"stats.verdicts.config: {exc}")
    head = record.get("head")
    if head is None:
        errors.append("stats.verdicts.head is missing")
    elif not (isinstance(head, str) and _HEX64.fullmatch(head)):
        errors.append("stats.verdicts.head is not a digest (64 hex digits)")
    document = record.get("receipts")
    errors += _receipt_errors(document)
    if errors or config is None or not isinstance(document, dict):
        return errors, None, 0
    try:
        receipts = receipts_from_json(document)
    except ValueError as exc:
        return [f"stats.verdicts.receipts: {exc}"], None, 0
    version = 1 if document.get("version") == 1 else FORMAT_VERSION  # (load_receipts read it)
    result = audit_trace(config, receipts, head=bytes.fromhex(str(head)), version=version)
    errors += [f"receipts: {e}" for e in result.errors]
    for name, replayed in (
        ("evaluations", result.evaluations),
        ("initial_rank", result.initial_rank),
    ):
        if record.get(name) != replayed:
            errors.append(
                f"stats.verdicts.{name} is {record.get(name)!r}, the receipts give {replayed}"
            )
    errors += _log_errors(record, receipts)
    accepted = isinstance(detail, dict) and detail.get("kind") == "accepted"
    last = _action(receipts[-1]) if receipts else None
    if accepted != (last == ControllerAction.EXIT_ACCEPT.value):
        errors.append(
            f"the outcome is {detail.get('kind') if isinstance(detail, dict) else None!r} "
            f"but the last receipt's action is {last!r}"
        )
    return errors, result, len(receipts)


def _action(receipt: TransitionReceipt) -> str:
    """A receipt's action as text (a tampered document may hold one outside the enum)."""
    action: object = receipt.action
    return action.value if isinstance(action, ControllerAction) else str(action)


@functools.lru_cache(maxsize=64)
def _config(text: str) -> QICTConfig:
    """A config from its canonical JSON: one object for the many runs of a fleet that
    share it (so the replay reuses its fingerprint)."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("config is missing")
    return config_from_json(value)


def _receipt_errors(document: JSON) -> list[str]:
    """Structural errors of a receipts document, each naming the receipt and field."""
    where = "stats.verdicts.receipts"
    if not isinstance(document, dict):
        return [f"{where} is not a receipts document"]
    if document.get("format") != _RECEIPTS:
        return [f"{where}.format is {document.get('format')!r}, not {_RECEIPTS!r}"]
    entries = document.get("receipts")
    if not isinstance(entries, list):
        return [f"{where}.receipts is not a list"]
    errors: list[str] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            errors.append(f"receipt {i} is not an object")
            continue
        kind = entry.get("type")
        if kind not in _FIELDS:
            errors.append(f"receipt {i}: type is {kind!r}, not 'evaluation' or 'event'")
            continue
        errors += _missing(f"receipt {i} ({kind})", "", _FIELDS[kind], entry)
        digest = entry.get("digest")
        if "digest" in entry and not (isinstance(digest, str) and _HEX64.fullmatch(digest)):
            errors.append(f"receipt {i}: field 'digest' is not a digest (64 hex digits)")
        for name, shape in (("after", dict), ("action", str), ("arcs", list), ("event", dict)):
            if name in entry and not isinstance(entry[name], shape):
                errors.append(f"receipt {i}: field {name!r} is not {_NAMES[shape]}")
        if kind == "event" and isinstance(event := entry.get("event"), dict):
            errors += _missing(f"receipt {i}", "event.", EVENT_FIELDS, event)
        before = entry.get("before")
        if i == 0 and before is None:
            errors.append(
                "receipt 0: field 'before' is missing (the first receipt holds the full state)"
            )
        elif isinstance(before, dict):
            errors += _missing(f"receipt {i}", "before.", STATE_FIELDS, before)
        elif before is not None:
            errors.append(f"receipt {i}: field 'before' is not an object")
        if len(errors) >= 10:
            break
    return errors


_NAMES: dict[type, str] = {dict: "an object", str: "a string", list: "a list"}


def _missing(where: str, prefix: str, names: Iterable[str], found: Mapping[str, JSON]) -> list[str]:
    return [f"{where}: field '{prefix}{k}' is missing" for k in names if k not in found]


def _log_errors(record: Mapping[str, JSON], receipts: list[TransitionReceipt]) -> list[str]:
    """The verdict log against the receipts: one entry per evaluation, the same action,
    and each NO's reason the text of its slot."""
    log = record.get("log")
    evaluations = [r for r in receipts if isinstance(r, EvaluationReceipt)]
    if not isinstance(log, list):
        return ["stats.verdicts.log is not a list"]
    if len(log) != len(evaluations):
        return [f"stats.verdicts.log has {len(log)} entries for {len(evaluations)} evaluations"]
    slots = record.get("slots")
    errors: list[str] = []
    for i, (entry, receipt) in enumerate(zip(log, evaluations, strict=True)):
        if not isinstance(entry, dict):
            errors.append(f"stats.verdicts.log[{i}] is not an object")
            continue
        if entry.get("action") != _action(receipt):
            errors.append(
                f"stats.verdicts.log[{i}].action is {entry.get('action')!r}, "
                f"receipt says {_action(receipt)!r}"
            )
        slot = entry.get("slot")
        if slot is None:
            continue
        payload = receipt.payload
        symbol = payload.step if isinstance(payload, ComputeNeed) else payload
        text = entry.get("reason", entry.get("needed"))
        if slot != symbol or not isinstance(slots, dict) or slots.get(str(slot)) != text:
            errors.append(
                f"stats.verdicts.log[{i}]: slot {slot!r} does not match the receipt's "
                f"{symbol!r} and its text in stats.verdicts.slots"
            )
    return errors
