"""``audit_group``: a whole search checked against its group record.

Valid when the record's own seal (and signature) matches it, and every attempt it names
is a valid, finished trajectory whose seal is the one recorded, whose link names this
group, this task, its number, its seed and temperature (by the search's rule) and how
the attempt before it ended; when the numbers run 1, 2, ... with none missing, the
result is the one the rule gives (the first accepted, else the last), and no trajectory
beside them claims a place in the group that the record does not give it. A search cut
short by a kill is a valid, unfinished prefix: the attempts that ended, and at most the
ones that were running (each an unfinished stream).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from four._chain import unique
from four._checked import Checked, checked
from four._files import Unreadable, read_regular
from four._types import JSON, User
from four.search._group import FORMAT, SUFFIX, digest_of
from four.search._link import AttemptLink, link_of, task_digest
from four.search._recap import told

_FIELDS: dict[str, tuple[type, ...]] = {
    "format": (str,), "group": (str,), "task": (str,), "of": (int,), "seed": (int,),
    "temperature": (int, float), "first_temperature": (int, float), "workers": (int,),
    "budget": (dict,), "workspace": (str, type(None)), "members": (list,),
    "result": (int, type(None)), "accepted": (bool,), "ended": (str, type(None)),
    "finished": (bool,), "started_at": (int, float), "ended_at": (int, float, type(None)),
    "seal": (dict,),
}  # fmt: skip
_MEMBER: dict[str, tuple[type, ...]] = {
    "outcome": (str,), "trajectory": (str, type(None)), "seal": (str, type(None)),
    "steps": (int,), "tokens": (int,), "cost": (int, float), "seconds": (int, float),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class GroupAudit(Checked):
    """What ``audit_group`` found. ``evaluations`` is the checks' count over all
    attempts, ``bound`` the sum of each attempt's ``initial_rank + 1`` (never less)."""

    path: Path
    valid: bool
    errors: tuple[str, ...]
    finished: bool = False
    members: int = 0
    of: int = 0
    result: int | None = None
    accepted: bool = False
    ended: str | None = None
    evaluations: int = 0
    bound: int = 0
    signed: bool = False

    @property
    def status(self) -> str:
        if not self.valid:
            return "invalid"
        return "valid" if self.finished else "unfinished"


@checked
def audit_group(
    path: str | os.PathLike[str], *, public_key: str | os.PathLike[str] | None = None
) -> GroupAudit:
    """Check the search recorded in ``path`` (a ``*.attempts.json``) and every attempt it
    names (see the module's docstring). ``public_key``: the record and every attempt
    must be signed by it.

    >>> audit_group("missing.attempts.json").errors
    ('cannot read missing.attempts.json: No such file or directory',)
    """
    from four.trajectory._sign import wanted_key

    where = Path(path)
    wanted = wanted_key(public_key)
    try:
        data = read_regular(where)  # not a FIFO, a device, nor over the limit
    except Unreadable as exc:
        return GroupAudit(where, False, (str(exc),))
    try:
        record = json.loads(data, object_pairs_hook=unique)
    except (ValueError, RecursionError) as exc:
        return GroupAudit(where, False, (f"{where} is not JSON: {exc}",))
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return GroupAudit(where, False, (f"{where} is not a group record ({FORMAT})",))
    errors = _shape(record)
    if errors:
        return GroupAudit(where, False, tuple(errors))
    errors += _seal(record, wanted)
    check = _Members(where, record, wanted)
    errors += check.errors()
    members = record["members"]
    assert isinstance(members, list)
    return GroupAudit(
        where,
        not errors,
        tuple(errors),
        finished=bool(record["finished"]) and not check.running,
        members=len(members),
        of=int(record["of"]),
        result=record["result"] if isinstance(record["result"], int) else None,
        accepted=bool(record["accepted"]),
        ended=record["ended"] if isinstance(record["ended"], str) else None,
        evaluations=check.evaluations,
        bound=check.bound,
        signed=isinstance(record["seal"], dict) and "signature" in record["seal"],
    )


def _shape(record: Mapping[str, JSON]) -> list[str]:
    errors: list[str] = []
    for name, kinds in _FIELDS.items():
        value = record.get(name, ...)
        if value is ...:
            errors.append(f"field {name!r} is missing")
        elif (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            errors.append(f"field {name!r} is {value!r:.40}")
    extra = sorted(set(record) - set(_FIELDS))
    if extra:
        errors.append(f"fields the format does not have: {extra}")
    members = record.get("members")
    for i, member in enumerate(members if isinstance(members, list) else []):
        if not isinstance(member, dict):
            errors.append(f"members[{i}] is not an object")
            continue
        for name, kinds in _MEMBER.items():
            value = member.get(name, ...)
            if value is ... or isinstance(value, bool) or not isinstance(value, kinds):
                errors.append(
                    f"members[{i}].{name} is {'missing' if value is ... else repr(value)}"
                )
        try:
            AttemptLink.from_json({k: member.get(k) for k in _LINK if k in member})
        except ValueError as exc:
            errors.append(f"members[{i}]: {exc}")
        if set(member) - set(_MEMBER) - set(_LINK):
            errors.append(f"members[{i}] has fields the format does not have")
    return errors


_LINK = ("group", "task", "index", "of", "seed", "temperature", "after")


def _seal(record: Mapping[str, JSON], wanted: str | None) -> list[str]:
    from four.trajectory._sign import have_cryptography, verify_signature

    seal = record["seal"]
    assert isinstance(seal, dict)
    digest = digest_of(record)
    errors: list[str] = []
    if seal.get("algorithm") != "sha256" or seal.get("digest") != digest.hex():
        errors.append("the record's seal does not match it: a field was edited, added or dropped")
    signer, signature = seal.get("signer"), seal.get("signature")
    if signature is not None or signer is not None:
        if not (isinstance(signer, str) and isinstance(signature, str)):
            errors.append("the record's signature is malformed")
        elif have_cryptography() and not verify_signature(signer, digest, signature):
            errors.append("the record's signature does not verify")
    if wanted is not None and signer != wanted:
        errors.append(f"the record is not signed by the given key {wanted[:16]}")
    return errors


class _Members:
    """Every attempt of the record checked against its trajectory, and the folders
    around them for trajectories that claim a place the record does not give."""

    def __init__(self, where: Path, record: Mapping[str, JSON], wanted: str | None) -> None:
        self.where, self.record, self.wanted = where, record, wanted
        self.evaluations = self.bound = 0
        self.running: list[str] = []

    def errors(self) -> list[str]:
        record = self.record
        members = record["members"]
        assert isinstance(members, list)
        group, task, of = record["group"], record["task"], int(str(record["of"]))
        workers = int(str(record["workers"]))
        errors: list[str] = []
        if len(members) > of:
            errors.append(f"the record names {len(members)} attempts of {of}")
        listed: set[Path] = set()
        previous: str | None = None
        accepted: list[int] = []
        for position, member in enumerate(members, 1):
            assert isinstance(member, dict)
            index = member["index"]
            if index != position:
                errors.append(f"attempt {position} is numbered {index}: one is missing or moved")
            expected = AttemptLink(
                str(group), str(task), position, of, int(str(record["seed"])) + position - 1,
                float(str(record["first_temperature"] if position == 1 else record["temperature"])),
                previous if workers == 1 else None,
            )  # fmt: skip
            stored = AttemptLink.from_json({k: member[k] for k in _LINK})
            if stored != expected:
                errors.append(f"attempt {position}'s link is {_diff(stored, expected)}")
            if member["outcome"] == "accepted":
                accepted.append(position)
            previous = str(member["outcome"])
            errors += self._trajectory(position, member, expected, listed)
        if workers == 1 and accepted and accepted[0] != len(members):
            errors.append(f"attempt {accepted[0]} was accepted, yet attempts ran after it")
        want_result = accepted[0] if accepted else (len(members) or None)
        if record["result"] != want_result:
            errors.append(f"the result is attempt {record['result']}, the rule gives {want_result}")
        if bool(record["accepted"]) != bool(accepted):
            errors.append(
                f"accepted is {record['accepted']}, the attempts' outcomes say {bool(accepted)}"
            )
        if record["finished"]:
            if record["ended"] is None:
                errors.append("a finished search says nothing of why it ended")
            elif record["ended"] == "attempts spent" and len(members) != of:
                errors.append(
                    f"the search says its attempts were spent after {len(members)} of {of}"
                )
        errors += self._strays(listed, len(members), workers)
        return errors

    def _trajectory(
        self, position: int, member: Mapping[str, JSON], link: AttemptLink, listed: set[Path]
    ) -> list[str]:
        from four.checks import audit
        from four.trajectory import TrajectoryError, load_trajectory

        name = member["trajectory"]
        if name is None:
            return [f"attempt {position} names no trajectory"]
        path = (self.where.parent / str(name)).resolve()
        listed.add(path)
        try:
            found = audit(path, public_key=self.wanted)
            saved = load_trajectory(path)
        except (OSError, TrajectoryError) as exc:
            return [f"attempt {position}: {exc}"]
        errors = [f"attempt {position}: {e}" for e in found.errors]
        if not found.finished:
            errors.append(f"attempt {position}: its trajectory is not sealed")
        if found.digest != member["seal"]:
            errors.append(f"attempt {position}: its trajectory's seal is not the one recorded")
        if found.outcome != member["outcome"]:
            errors.append(
                f"attempt {position}: its trajectory ended {found.outcome!r}, the record says "
                f"{member['outcome']!r}"
            )
        try:
            stored = AttemptLink.from_json(link_of(saved.info))
        except ValueError as exc:
            errors.append(f"attempt {position}: {exc}")
        else:
            if stored != link:
                errors.append(f"attempt {position}: its trajectory's link is {_diff(stored, link)}")
        tasks = [m.content for m in saved.messages if isinstance(m, User) and m.kind == "task"]
        task, recapped = told(tasks[0]) if tasks else ("", [])
        if not tasks or task_digest(task) != link.task:
            errors.append(f"attempt {position}: its task is not the group's")
        elif any(n >= position for n in recapped):  # told of an attempt not yet ended
            errors.append(f"attempt {position}: its recap names attempts {recapped}")
        self.evaluations += found.evaluations
        self.bound += found.initial_rank + 1 if found.verified else 0
        return errors

    def _strays(self, listed: set[Path], count: int, workers: int) -> list[str]:
        """Trajectories beside the members whose link names this group, unlisted."""
        from four.trajectory._load import TrajectoryError, load_head

        group = self.record["group"]
        folders = {self.where.parent.resolve(), *(p.parent for p in listed)}
        errors: list[str] = []
        for path in sorted(p for folder in folders for p in _runs(folder)):
            if path.resolve() in listed:
                continue
            try:
                head = load_head(path)
            except (OSError, TrajectoryError):
                continue
            value = link_of(head.info)
            if not isinstance(value, dict) or value.get("group") != group:
                continue
            index = value.get("index")
            unfinished = head.outcome is None
            if (
                not self.record["finished"] and unfinished and isinstance(index, int)
                and count < index <= count + workers
            ):  # fmt: skip
                self.running.append(path.name)  # an attempt that was running at the kill
                continue
            errors.append(
                f"{path.name} claims to be attempt {index} of the group, which the record does not list"
            )
        return errors


def _runs(folder: Path) -> Iterator[Path]:
    """The trajectories in ``folder`` (not below): sealed ``.json``, and ``.jsonl`` with
    no ``.json`` beside them."""
    try:
        names = set(os.listdir(folder))
    except OSError:
        return
    for name in names:
        if name.endswith(SUFFIX):
            continue
        if name.endswith(".json") or (name.endswith(".jsonl") and name[:-1] not in names):
            yield folder / name


def _diff(stored: AttemptLink, expected: AttemptLink) -> str:
    wrong = [
        f"{name} {getattr(stored, name)!r} (expected {getattr(expected, name)!r})"
        for name in _LINK
        if getattr(stored, name) != getattr(expected, name)
    ]
    return "wrong: " + ", ".join(wrong)
