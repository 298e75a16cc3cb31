"""``four audit TRAJ|DIR``: check runs against their seals (and signatures, and receipts)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from four._types import JSON
from four.checks._audit import Audit
from four.cli._errors import UsageError
from four.cli._remote import local_paths
from four.search._group import is_record

if TYPE_CHECKING:
    from four.search import GroupAudit


def main(args: argparse.Namespace) -> int:
    """Audit ``args.trajectory``; print the result as text or, with ``--json``, JSON."""
    from four.checks._audit import runs_under
    from four.trajectory._sign import SigningError, load_public_key

    key: str | None = None
    if args.public_key:
        try:
            key = load_public_key(str(args.public_key))
        except SigningError as exc:
            raise UsageError(f"--public-key: {exc}") from None
    (target_path,) = local_paths([str(args.trajectory)])
    target = Path(target_path)
    if target.is_dir():
        if not any(True for _ in runs_under(target)):
            raise UsageError(f"nothing to audit: {target} is a folder holding no trajectory")
        launch = _launch(target)
        return _fleet(target, sorted(runs_under(target)), key, bool(args.json), launch)
    if is_record(target):
        return _group(target, key, bool(args.json))
    result = _audit(target, key)
    if result is None or not result.trajectory:
        reason = result.errors[0] if result else "cannot be read"
        raise UsageError(f"nothing to audit: {target}: {reason}")
    if args.json:
        print(json.dumps(_json(result), indent=2))
    else:
        print(_text(result))
    return 0 if result.valid else 1


def _audit(path: Path, key: str | None) -> Audit | None:
    from four.checks import audit
    from four.trajectory import TrajectoryError

    try:
        return audit(path, public_key=key)
    except TrajectoryError as exc:
        raise UsageError(str(exc)) from None


def _text(result: Audit) -> str:
    if not result.valid:
        return "\n".join([f"invalid: {result.path}", *(f"  - {e}" for e in result.errors)])
    if result.finished:
        lines = [
            f"valid: {result.path}",
            f"  sealed: {result.messages} messages, outcome {result.outcome}, "
            f"seal {result.digest[:16]}",
        ]
    else:
        lines = [
            f"valid, unfinished: {result.path}",
            f"  a sealed prefix of {result.messages} messages and no end record "
            "(the run was killed, or is still going)",
        ]
    lines.append(f"  {_signature(result)}")
    if result.verified:
        lines.append(
            f"  verdicts: {result.evaluations} evaluations, rank {result.initial_rank} -> "
            f"{result.final_rank}, {result.receipts} receipts, head {result.head.hex()[:16]}"
        )
    return "\n".join(lines)


def _signature(result: Audit) -> str:
    if result.key_checked:
        return f"signed by the given key {result.signer}"
    if result.signature == "valid":
        return f"signed by {result.signer} (give --public-key to check it is the key you trust)"
    if result.signature == "unchecked":
        return f"signed by {result.signer}; not checked: pip install 'four-loop[sign]'"
    return "unsigned: the seal catches accidents and careless edits, not a forger"


def _head(result: Audit | GroupAudit) -> dict[str, JSON]:
    """What a run's audit and a search's say alike."""
    return {
        "path": str(result.path),
        "status": result.status,
        "valid": result.valid,
        "finished": result.finished,
        "errors": list(result.errors),
    }


def _json(result: Audit) -> dict[str, JSON]:
    return {
        **_head(result),
        "outcome": result.outcome,
        "messages": result.messages,
        "seal": result.digest,
        "signer": result.signer,
        "signature": result.signature,
        "key_checked": result.key_checked,
        "verified": result.verified,
        "evaluations": result.evaluations,
        "initial_rank": result.initial_rank,
        "final_rank": result.final_rank,
        "receipts": result.receipts,
        "head": result.head.hex(),
    }


def _group(path: Path, key: str | None, as_json: bool) -> int:
    """A search's group record and every attempt it names (``four.search.audit_group``)."""
    from four.search import audit_group

    result = audit_group(path, public_key=key)
    if as_json:
        print(json.dumps(_group_json(result), indent=2))
    else:
        print(_group_text(result))
    return 0 if result.valid else 1


def _group_text(result: GroupAudit) -> str:
    if not result.valid:
        return "\n".join([f"invalid: {result.path}", *(f"  - {e}" for e in result.errors)])
    head = "valid" if result.finished else "valid, unfinished"
    said = "accepted" if result.accepted else "none accepted"
    return (
        f"{head}: {result.path}\n  a search of {result.members} attempts of {result.of}: "
        f"{said}, the result attempt {result.result} ({result.ended}); every attempt sealed "
        f"and linked; {result.evaluations} evaluations of the check, at most {result.bound}"
    )


def _group_json(result: GroupAudit) -> dict[str, JSON]:
    return {
        **_head(result),
        "attempts": result.members,
        "of": result.of,
        "result": result.result,
        "accepted": result.accepted,
        "ended": result.ended,
        "evaluations": result.evaluations,
        "bound": result.bound,
    }


def _launch(folder: Path) -> list[str]:
    """A launch folder's problems beyond its seal (a file added since): see ``four plan``."""
    if not (folder / "tasks.jsonl").is_file():
        return []
    from four.domains.plan import launch_problems

    return launch_problems(folder)


def _fleet(
    folder: Path, paths: list[Path], key: str | None, as_json: bool, launch: list[str]
) -> int:
    from four.checks._audit import audit_all
    from four.search import audit_group

    counts: Counter[str] = Counter()
    rows: list[JSON] = []
    groups = [p for p in paths if is_record(p)]
    paths = [p for p in paths if not is_record(p)]
    for group in map(lambda p: audit_group(p, public_key=key), groups):
        counts["group " + group.status] += 1
        if as_json:
            rows.append(_group_json(group))
        else:
            brief = group.errors[0] if group.errors else f"{group.members} attempts, {group.ended}"
            print(f"{'group ' + group.status:<10} {group.path.relative_to(folder)}  {brief}")
    for result in audit_all(paths, public_key=key):
        path = result.path
        counts[result.status] += 1
        if result.trajectory and not result.signed:
            counts["unsigned"] += 1
        if as_json:
            rows.append(_json(result))
        else:
            print(f"{result.status:<10} {path.relative_to(folder)}  {_brief(result)}")
    runs = sum(counts[s] for s in ("valid", "invalid", "unfinished"))
    summary = (
        f"{runs} runs: {counts['valid']} valid, {counts['invalid']} invalid, "
        f"{counts['unfinished']} unfinished, {counts['unsigned']} unsigned"
    )
    if groups:
        summary += (
            f"; {len(groups)} searches: {counts['group valid']} valid, "
            f"{counts['group invalid']} invalid, {counts['group unfinished']} unfinished"
        )
    if counts["skipped"]:
        summary += f"; {counts['skipped']} other files skipped"
    if as_json:
        print(json.dumps({"runs": rows, "summary": dict(counts), "launch": launch}, indent=2))
    else:
        for problem in launch:
            print(f"{'invalid':<10} {problem}")
        print(summary + (f"; the launch: {len(launch)} problems" if launch else ""))
    return 1 if counts["invalid"] or counts["group invalid"] or launch else 0


def _brief(result: Audit) -> str:
    if result.status == "skipped":
        return "not a four trajectory"
    if not result.valid:
        more = len(result.errors) - 1
        return result.errors[0] + (f" (and {more} more)" if more > 0 else "")
    signed = "signed" if result.signed else "unsigned"
    if not result.finished:
        return f"{result.messages} messages so far, {signed}"
    return f"{result.outcome}, {signed}"
