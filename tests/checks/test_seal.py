"""The seal over a run's whole record: any single edit of a sealed trajectory or of its
stream, of any field at any depth, is reported; an unedited one is valid; a stream cut
at a line is a valid, unfinished prefix; a signature tells a recomputed record from the
real one; malformed verdict records give errors naming the receipt and field."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from four import Assistant, ToolCall, Usage, audit, run, save_trajectory, scripted_invoke
from four.checks import Claim, command_check, verify
from four.quaternary import CheckResult, ComputeNeed, EvidenceNeed, maybe, no, yes
from four.trajectory import SigningKey
from four.trajectory._seal import canonical_text, encode_parts, parts, recompute, verdict_facts
from tests._doubles import FakeEnv, line_parse

ROOT = Path(__file__).resolve().parents[2]
KEY = SigningKey.generate()


def _verdicts(*results: CheckResult) -> Callable[[Claim], CheckResult]:
    calls = iter(results)
    return lambda claim: next(calls)


def _runs(folder: Path) -> dict[str, Path]:
    """A verified run (NO, MAYBE for evidence and for more work, then YES), an
    unverified run with tool calls and usage, and a signed verified run."""
    turn = Assistant("calling", (ToolCall("c1", "bash", "ls"),), usage=Usage(10, 2, 0.5), model="m")
    judged = verify(
        _verdicts(
            no("tests fail"),
            maybe(EvidenceNeed("logs")),
            yes(),
        ),
        evidence={"logs": "cat log"},
        compute=1,
    )
    compute = verify(_verdicts(maybe(ComputeNeed("write docs")), yes()), compute=1)
    return {
        "verified": run(
            scripted_invoke(["$ a", "DONE one", "DONE two"]),
            line_parse,
            FakeEnv(),
            save_trajectory(folder / "verified"),
            "s",
            "p",
            check=judged,
        ),
        "compute": run(
            scripted_invoke(["DONE one", "DONE two"]),
            line_parse,
            FakeEnv(),
            save_trajectory(folder / "compute"),
            "s",
            "p",
            check=compute,
        ),
        "plain": run(
            scripted_invoke([turn, "DONE out"]),
            line_parse,
            FakeEnv(),
            save_trajectory(folder / "plain"),
            "s",
            "p",
        ),
        "signed": run(
            scripted_invoke(["DONE one", "DONE two"]),
            line_parse,
            FakeEnv(),
            save_trajectory(folder / "signed", signing_key=KEY),
            "s",
            "p",
            check=verify(_verdicts(no("nope"), yes())),
        ),
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _runs(tmp_path_factory.mktemp("sealed"))


Edit = tuple[str, tuple[Any, ...], Any]


def edits(value: Any, path: tuple[Any, ...] = ()) -> list[Edit]:
    """Every single edit of a JSON value: each leaf changed, each key dropped, a key
    added to each object, each list item dropped or duplicated, neighbours swapped."""
    out: list[Edit] = []
    if isinstance(value, dict):
        out.append(("add", path, "extra"))
        for k, v in value.items():
            out.append(("drop", (*path, k), None))
            out += edits(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += [("drop", (*path, i), None), ("duplicate", (*path, i), None)]
            if i and value[i - 1] != v:
                out.append(("swap", (*path, i), None))
            out += edits(v, (*path, i))
    elif isinstance(value, bool):
        out.append(("set", path, not value))
    elif isinstance(value, int | float):
        out.append(("set", path, value + 1))
    elif isinstance(value, str):
        out.append(("set", path, value + "x"))
    else:
        out.append(("set", path, 0))
    return out


def applied(value: Any, edit: Edit) -> Any:
    kind, path, new = edit
    copy = json.loads(json.dumps(value))
    if kind == "add":
        target = copy
        for key in path:
            target = target[key]
        target["unexpected"] = new
        return copy
    *parents, last = path
    target = copy
    for key in parents:
        target = target[key]
    if kind == "set":
        target[last] = new
    elif kind == "drop":
        del target[last]
    elif kind == "duplicate":
        target.insert(last, target[last])
    else:
        target[last - 1], target[last] = target[last], target[last - 1]
    return copy


def test_unedited_runs_are_valid(runs: dict[str, Path]) -> None:
    for name, path in runs.items():
        for file in (path, path.with_suffix(".jsonl")):
            result = audit(file)
            assert result.valid and result.finished, (name, file.suffix, result.errors)
            assert result.signed == (name == "signed")
    verified = audit(runs["verified"])
    assert verified.verified and verified.evaluations == 3 and verified.receipts == 4
    assert audit(runs["plain"]).verified is False
    assert audit(runs["signed"], public_key=KEY.public).key_checked


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()  # NaN and the infinities too: json spells them its own way
    | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


class Level(IntEnum):
    HIGH = 3


class Tag(StrEnum):
    RED = "r\u00e9d"


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@settings(max_examples=500, deadline=None)
@given(JSON_VALUES, st.integers(0, 3))
def test_the_canonical_text_is_jsons_with_sorted_keys_and_no_spaces(value: Any, depth: int) -> None:
    assert canonical_text(value) == _json(value)
    found: list[tuple[str, str]] = []
    assert encode_parts("info", value, depth, found) == _json(value)  # the whole, from its parts
    assert found and found[0][0] == "info"


def _reference_parts(label: str, value: Any, depth: int) -> list[tuple[str, str]]:
    """The parts as the seal's docstring defines them, spelled out plainly."""
    import hashlib

    def short(x: Any) -> str:
        return hashlib.sha256(_json(x).encode()).hexdigest()[:16]

    if not (depth and isinstance(value, dict)):
        return [(label, short([label, "value", value]))]
    found = [(label, short([label, "object", sorted(value)]))]
    for key in sorted(value):
        found += _reference_parts(f"{label}.{key}", value[key], depth - 1)
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=4), max_size=4),
       st.integers(0, 3))  # fmt: skip
def test_each_part_is_the_digest_the_seal_defines_however_often_it_recurs(
    objects: list[dict[str, Any]], depth: int
) -> None:
    """Objects recur run after run (a driver, a usage record): their parts are the same
    whether seen for the first time or again, inside another object or alone."""
    for value in [*objects, *objects, {"a": objects}, {"a": objects}]:
        for label in ("stats", "stats.usage"):
            found: list[tuple[str, str]] = []
            assert encode_parts(label, value, depth, found) == _json(value)
            assert found == _reference_parts(label, value, depth)


def test_the_canonical_text_of_enum_members_is_their_value() -> None:
    for value in (Level.HIGH, Tag.RED, [Level.HIGH, Tag.RED], {"k": Level.HIGH}):
        assert canonical_text(value) == _json(value)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_single_edit_of_a_sealed_document_is_reported(
    runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(sorted(runs)))
    document = json.loads(runs[name].read_text())
    edit = data.draw(st.sampled_from(edits(document)))
    target = tmp_path_factory.mktemp("edited") / "run.json"
    target.write_text(json.dumps(applied(document, edit)))
    result = audit(target)
    assert not result.valid, (name, edit)
    assert result.errors and all(isinstance(e, str) and e for e in result.errors)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_single_edit_of_a_stream_is_reported(
    runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(sorted(runs)))
    records = [
        json.loads(line) for line in runs[name].with_suffix(".jsonl").read_text().splitlines()
    ]
    edit = data.draw(st.sampled_from(edits(records)))
    if edit[0] == "drop" and len(edit[1]) == 1 and edit[1][0] == len(records) - 1:
        return  # dropping the last record is a cut: tested as a valid prefix below
    edited = applied(records, edit)
    target = tmp_path_factory.mktemp("edited") / "run.jsonl"
    target.write_text("".join(json.dumps(r) + "\n" for r in edited))
    assert not audit(target).valid, (name, edit)


def test_a_stream_cut_at_any_line_is_a_valid_unfinished_prefix(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    lines = runs["signed"].with_suffix(".jsonl").read_text().splitlines(keepends=True)
    for n in range(1, len(lines)):
        cut = tmp_path / f"cut{n}.jsonl"
        cut.write_text("".join(lines[:n]) + lines[n][: len(lines[n]) // 2])
        result = audit(cut, public_key=KEY.public)
        assert result.valid and not result.finished and result.status == "unfinished", n
        assert result.messages == n - 1 and result.key_checked and result.outcome is None


def reseal(document: dict[str, Any]) -> dict[str, Any]:
    """What a forger without the key can do: recompute the unkeyed chain."""
    chain = recompute(document)
    links = list(chain.links)
    shorts = [short for _, short in parts(document)]
    chain.close(shorts)
    document["seal"].update(
        messages=len(document["messages"]),
        receipts=verdict_facts(document["stats"])[0],
        links=links,
        parts=shorts,
        digest=chain.digest.hex(),
    )
    return document


def test_a_recomputed_seal_fools_the_unkeyed_audit_but_not_the_key(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    document = json.loads(runs["signed"].read_text())
    document["messages"][-1]["content"] = "DONE forged"
    document["outcome_detail"]["output"] = "forged"
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(reseal(document)))
    result = audit(forged)
    assert not result.valid
    assert result.errors == ("seal: the signature does not verify against its signer",)
    stripped = reseal({**document, "seal": {"algorithm": "four.seal/1"}})
    forged.write_text(json.dumps(stripped))
    assert audit(forged).valid  # unkeyed: a recomputed chain is not detectable
    result = audit(forged, public_key=KEY.public)
    assert not result.valid and result.errors[0].startswith("not signed: the audit asked")
    other = SigningKey.generate()
    assert "not by the given key" in audit(runs["signed"], public_key=other.public).errors[0]


def test_a_killed_signed_run_audits_as_a_valid_prefix(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    from four.trajectory._sign import write_key_pair

    _, public = write_key_pair(key)
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path[:0] = [{str(ROOT / "src")!r}, {str(ROOT)!r}]
        from four import run, save_trajectory, scripted_invoke
        from tests._doubles import FakeEnv, line_parse

        class Killer(FakeEnv):
            def __call__(self, action):
                if action.command == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                return super().__call__(action)

        run(scripted_invoke(["$ one", "$ two", "$ kill"]), line_parse, Killer(),
            save_trajectory({str(tmp_path / "runs")!r}, signing_key={str(key)!r}), "s", "p")
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    (stream,) = (tmp_path / "runs").glob("*.jsonl")
    result = audit(stream, public_key=public)
    assert result.valid and not result.finished and result.key_checked, result.errors
    assert result.messages == 7  # system, task, three turns, two observations


def _verified_document(runs: dict[str, Path]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(runs["verified"].read_text())
    return document


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda v: v.pop("head"), "stats.verdicts.head is missing"),
        (lambda v: v.update(head="xyz"), "stats.verdicts.head is not a digest (64 hex digits)"),
        (
            lambda v: v["receipts"]["receipts"][1].update(type="evaluationx"),
            "receipt 1: type is 'evaluationx', not 'evaluation' or 'event'",
        ),
        (
            lambda v: v["receipts"]["receipts"][1].update(type="event"),
            "receipt 1 (event): field 'event' is missing",
        ),
        (
            lambda v: v["receipts"]["receipts"][2].pop("digest"),
            "receipt 2 (event): field 'digest' is missing",
        ),
        (
            lambda v: v["receipts"]["receipts"][0].pop("before"),
            "receipt 0: field 'before' is missing (the first receipt holds the full state)",
        ),
        (
            lambda v: v["receipts"]["receipts"][0]["before"].pop("clock"),
            "receipt 0: field 'before.clock' is missing",
        ),
        (lambda v: v["config"].pop("lease_ticks"), "stats.verdicts.config: malformed QICT config"),
        (lambda v: v["log"].pop(), "stats.verdicts.log has 2 entries for 3 evaluations"),
        (
            lambda v: v["log"][0].update(action="exit_accept"),
            "stats.verdicts.log[0].action is 'exit_accept', receipt says 'exclude_retry'",
        ),
        (
            lambda v: v["slots"].update({"no:1": "something else"}),
            "stats.verdicts.log[0]: slot 'no:1' does not match",
        ),
        (lambda v: v.update(evaluations=2), "stats.verdicts.evaluations is 2, the receipts give 3"),
        (
            lambda v: v["receipts"]["receipts"][0]["after"].update(clock={"bad": 1}),
            "stats.verdicts.receipts: receipt 0: not a receipt value",
        ),
    ],
)
def test_malformed_verdict_records_name_the_receipt_and_field(
    runs: dict[str, Path], tmp_path: Path, edit: Callable[[dict[str, Any]], object], error: str
) -> None:
    document = _verified_document(runs)
    edit(document["stats"]["verdicts"])
    target = tmp_path / "run.json"
    target.write_text(json.dumps(document))
    unsealed = audit(target)
    assert not unsealed.valid and unsealed.errors[0].startswith("stats.verdicts")
    target.write_text(json.dumps(reseal(document)))  # the seal recomputed: only the record
    result = audit(target)
    assert not result.valid
    assert any(e.startswith(error) for e in result.errors), result.errors


def test_an_accepted_outcome_needs_receipts_that_end_in_acceptance(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    document = _verified_document(runs)
    document["outcome_detail"]["kind"] = "held"
    target = tmp_path / "run.json"
    target.write_text(json.dumps(reseal(document)))
    assert audit(target).errors == (
        "the outcome is 'held' but the last receipt's action is 'exit_accept'",
    )


def test_free_text_reasons_keep_their_slots_under_the_seal(runs: dict[str, Path]) -> None:
    verdicts = _verified_document(runs)["stats"]["verdicts"]
    assert verdicts["slots"] == {"no:1": "tests fail"}
    assert verdicts["log"][0] == {
        "verdict": "NO",
        "action": "exclude_retry",
        "shown": "failure 1",  # what the feedback level (verdict) lets be seen
        "slot": "no:1",
        "reason": "tests fail",
    }
    receipts = verdicts["receipts"]["receipts"]
    assert receipts[0]["payload"] == "no:1"
    compute = json.loads(runs["compute"].read_text())["stats"]["verdicts"]
    assert compute["slots"] == {"compute:1": "write docs"}
    assert compute["log"][0]["slot"] == "compute:1"


@pytest.mark.parametrize("command", [None, "", "   "])
def test_a_check_with_no_command_is_refused(command: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="command_check: command must be"):
        command_check(command)


def test_an_unsealed_document_is_invalid(runs: dict[str, Path], tmp_path: Path) -> None:
    document = json.loads(runs["plain"].read_text())
    del document["seal"]
    target = tmp_path / "old.json"
    target.write_text(json.dumps(document))
    assert audit(target).errors == ("not sealed: the document has no seal",)
    stream = tmp_path / "old.jsonl"
    stream.write_text('{"type": "start", "format": "four.trajectory/1", "info": {}}\n')
    assert audit(stream).errors == ("not sealed: the stream has no running digest",)


def test_keys_load_from_their_files_and_are_never_shown(tmp_path: Path) -> None:
    from four._describe import describe
    from four.trajectory import SigningError
    from four.trajectory._sign import load_public_key, write_key_pair

    private, public = write_key_pair(tmp_path / "k")
    loaded = SigningKey.load(private)
    assert load_public_key(public) == loaded.public == load_public_key(loaded.public)
    with pytest.raises(SigningError, match="never replaces a key"):
        write_key_pair(tmp_path / "k")
    with pytest.raises(SigningError, match="signing_key: cannot read the signing key"):
        save_trajectory(tmp_path, signing_key=tmp_path / "missing")
    with pytest.raises(SigningError, match="not an unencrypted PEM private key"):
        save_trajectory(tmp_path, signing_key=public)
    writer = save_trajectory(tmp_path, signing_key=private)
    described = describe(writer)
    assert isinstance(described, dict) and described["signing_key"] == "***"
    assert "PRIVATE" not in repr(writer) and loaded.public in repr(loaded)
    os.chmod(private, 0o600)


def test_unsigned_runs_never_import_cryptography(tmp_path: Path) -> None:
    probe = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = [{str(ROOT / "src")!r}, {str(ROOT)!r}]
        from four import audit, run, save_trajectory, scripted_invoke
        from tests._doubles import FakeEnv, line_parse
        path = run(scripted_invoke(["DONE"]), line_parse, FakeEnv(),
                   save_trajectory({str(tmp_path)!r}), "s", "p")
        assert audit(path).valid
        print(sorted(m for m in sys.modules if m.startswith("cryptography")))
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_records_nested_beyond_reach_are_invalid_not_a_crash(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    document = tmp_path / "deep.json"
    document.write_text(deep)
    assert audit(document).errors == ("the document is not JSON (cut short, or not a trajectory)",)
    stream = tmp_path / "deep.jsonl"
    start = '{"type": "start", "format": "four.trajectory/1", "info": {}, "seal": {}}'
    stream.write_text(f"{start}\n{deep}\n")
    assert not audit(stream).valid
