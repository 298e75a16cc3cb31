"""``four replay TRAJ``: the recorded model turns again, in a fresh environment.

The model is not called: each recorded reply is given back in order (``replay_invoke``),
parsed as recorded (tool calls or fenced blocks) and executed in a new environment.
Then each step's observations are compared with the recorded ones, on the return
code and the output (so our format and mini-swe-agent's templates compare alike).
"""

from __future__ import annotations

import argparse
import difflib
import json
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from four._types import JSON, Assistant, Execute, Parse, output_of
from four.cli import _settings as env
from four.cli._errors import UsageError
from four.cli._steps import Run, Step, load_trajectory_or_say, max_size, read_run, returncode_of
from four.domains import Domain, DomainError, DomainSetup, get_domain
from four.types import Recorder, Verify


@dataclass(frozen=True, slots=True)
class Difference:
    """One step whose observations differ between the recording and the replay."""

    step: int
    commands: tuple[str, ...]
    recorded: str
    replayed: str

    def diff(self, context: int = 2, limit: int = 30) -> list[str]:
        """A unified diff of the two observations, at most ``limit`` lines."""
        lines = list(
            difflib.unified_diff(
                self.recorded.splitlines(),
                self.replayed.splitlines(),
                "recorded",
                "replayed",
                n=context,
                lineterm="",
            )
        )
        return lines if len(lines) <= limit else [*lines[:limit], f"… {len(lines) - limit} more"]

    def to_json(self) -> dict[str, JSON]:
        return {**asdict(self), "commands": list(self.commands)}


@dataclass(frozen=True, slots=True)
class Comparison:
    """Recorded against replayed: steps compared, and those that differ."""

    compared: int
    differences: tuple[Difference, ...]
    recorded_steps: int
    replayed_steps: int
    recorded_outcome: str
    replayed_outcome: str

    @property
    def same(self) -> bool:
        return not self.differences and self.recorded_steps == self.replayed_steps


def normalise(text: str) -> str:
    """An observation reduced to what it says: return code and output, trailing blanks
    dropped; our ``<output>`` format and mini-swe-agent's JSON template compare alike.

    >>> normalise('<returncode>0</returncode>\\n<output>\\nhi  \\n</output>')
    'exit 0\\nhi'
    >>> normalise('{"returncode": 0, "output": "hi\\\\n"}')
    'exit 0\\nhi'
    """
    code = returncode_of(text)
    body = output_of(text)
    if body is text and text.lstrip().startswith("{"):  # no <output>: JSON, maybe
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("output"), str):
            body = data["output"]
    lines = [line.rstrip() for line in body.strip("\n").splitlines()]
    head = [] if code is None else [f"exit {code}"]
    return "\n".join(head + lines).rstrip()


def compare(recorded: Run, replayed: Run) -> Comparison:
    """Step by step, the observations of both runs (as ``normalise`` sees them).

    A step the replay never reached is not compared; the step counts then differ.
    """
    differences = []
    pairs = list(zip(recorded.steps, replayed.steps, strict=False))
    for old, new in pairs:
        before, after = _observed(old), _observed(new)
        if before != after:
            differences.append(Difference(old.number, old.commands, before, after))
    return Comparison(
        len(pairs),
        tuple(differences),
        len(recorded.steps),
        len(replayed.steps),
        recorded.outcome,
        replayed.outcome,
    )


def _observed(step: Step) -> str:
    return "\n---\n".join(normalise(o.content) for o in step.observations)


def _parser(recorded: Run, toolcalls: bool | None) -> Parse:
    from four.parse import regex_parse, toolcall_parse

    if toolcalls is None:
        toolcalls = any(
            m.tool_calls for m in recorded.trajectory.messages if isinstance(m, Assistant)
        )
    return toolcall_parse() if toolcalls else regex_parse()


def _environment(args: argparse.Namespace, recorded: Mapping[str, JSON]) -> Execute:
    from four.domains._bash import environment

    def text(flag: object, key: str) -> str | None:
        if isinstance(flag, str) and flag:
            return flag
        value = recorded.get(key)
        return value if isinstance(value, str) and value else None

    kind = text(args.env, "env") or env.get("FOUR_ENV") or "local"
    image = text(args.image, "image") or env.get("FOUR_IMAGE")
    try:
        return environment(
            kind, image=image, cwd=text(args.cwd, "cwd"), timeout=_timeout(args, recorded)
        )
    except (TypeError, ValueError) as exc:  # a setting the environment refuses
        raise UsageError(f"cannot make the {kind} environment: {exc}") from None


def _timeout(args: argparse.Namespace, recorded: Mapping[str, JSON]) -> float | None:
    """--command-timeout, else the recorded one."""
    timeout = args.command_timeout
    if timeout is None and isinstance(recorded.get("command_timeout"), int | float):
        timeout = recorded["command_timeout"]
    return float(timeout) if isinstance(timeout, int | float) else None


def _domain(name: str) -> Domain:
    try:
        return get_domain(name)
    except DomainError as exc:
        raise UsageError(f"the run was made with --domain {name}: {exc}") from None


def _domain_setup(args: argparse.Namespace, recorded: Mapping[str, JSON], out: Path) -> DomainSetup:
    cwd = args.cwd or recorded.get("cwd")
    return DomainSetup(
        workspace=Path(cwd) if isinstance(cwd, str) and cwd else None,
        output_dir=out,
        command_timeout=_timeout(args, recorded),
        env=args.env or "local",
    )


def _replay_workspace(
    domain: Domain, where: DomainSetup, trajectory: Path, scratch: Path
) -> DomainSetup:
    """For a domain that edits its workspace in place: a copy of it as the run began (the
    user's own is never edited again), or a usage error saying what to give instead."""
    assert domain.replay_workspace is not None
    document = trajectory.with_suffix(".json")
    copy = domain.replay_workspace(document, where.workspace, scratch)
    if copy is None:
        raise UsageError(
            f"{trajectory}: the run kept no copy of its workspace as it began, and replaying "
            f"it in {where.workspace} would edit it again: give --cwd a folder holding the "
            "files as they were"
        )
    return replace(where, workspace=copy)


def main(args: argparse.Namespace) -> int:
    """Replay ``args.trajectory``; 0 when every observation matches, 1 when one differs."""
    from four import run
    from four.cli._build import Saving
    from four.cli._live import Display, Recording, Watched, components
    from four.invoke import replay_invoke
    from four.trajectory import save_trajectory

    recorded = read_run(load_trajectory_or_say(str(args.trajectory), max_size(args)))
    turns = [m for m in recorded.trajectory.messages if isinstance(m, Assistant)]
    if not turns:
        raise UsageError(f"{args.trajectory} has no model turns to replay")
    settings = recorded.trajectory.info.settings
    recorded_check = settings.get("check")
    command = args.check or (recorded_check if isinstance(recorded_check, str) else None)
    named = settings.get("domain")
    domain = _domain(named) if isinstance(named, str) and named != "bash" else None
    G = replay_invoke(turns)
    mode = "quiet" if args.quiet or args.json else "lines"
    display = Display(mode, title="replay", model_lines=False)
    keep = args.output_dir
    if keep:
        from four.cli._options import output_folder

        output_folder(keep)  # before anything runs
    with tempfile.TemporaryDirectory(prefix="four-replay-") as scratch:
        emit: Recorder[Path]
        if domain is None:
            V1 = _parser(recorded, args.toolcalls)
            V2 = _environment(args, settings)
            check: Verify | None = None
            if command:
                from four.checks import command_check

                check = command_check(command)
            emit = save_trajectory(keep or scratch)
        else:  # the run's own domain: its V1, a fresh V2 (a new kernel...), emit and check
            where = _domain_setup(args, settings, Path(keep or scratch))
            if domain.replay_workspace is not None and not args.cwd:
                where = _replay_workspace(domain, where, Path(args.trajectory), Path(scratch))
            V1 = domain.parse()
            try:
                V2 = domain.environment(where)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            emit, check = domain.emit(where, V2), domain.check(where, V2, command)
        recording = Recording(  # hold: a Ctrl-C before the first step waits for it
            emit, components(G, V2, {**settings, "replay_of": str(args.trajectory)}), hold=True
        )
        try:
            path = run(
                Watched(G, display.model_started, display.model_done),
                V1,
                Watched(V2, display.command_started, display.command_done),
                recording,
                recorded.system,
                recorded.task,
                max_steps=len(turns),
                max_format_errors=0,
                check=check,
                watch=Saving(recording),  # says began at the first step, as four run's does
            )
        except KeyboardInterrupt:
            print(f"interrupted · saved {recording.path}" if keep else "interrupted")
            return 130
        from four.trajectory import load_trajectory

        replayed = read_run(load_trajectory(path))
    result = compare(recorded, replayed)
    saved = str(path) if keep else None
    if args.json:
        print(json.dumps(_json(result, str(args.trajectory), saved), indent=2))
    else:
        _print(result, quiet=bool(args.quiet), saved=saved)
    return 0 if result.same else 1


def _json(result: Comparison, source: str, saved: str | None) -> dict[str, JSON]:
    return {
        "trajectory": source,
        "replay": saved,
        "same": result.same,
        "compared_steps": result.compared,
        "recorded_steps": result.recorded_steps,
        "replayed_steps": result.replayed_steps,
        "recorded_outcome": result.recorded_outcome,
        "replayed_outcome": result.replayed_outcome,
        "differences": [d.to_json() for d in result.differences],
    }


def _print(result: Comparison, *, quiet: bool, saved: str | None) -> None:
    if not quiet:
        for d in result.differences:
            print(f"step {d.step} differs: $ {'; '.join(d.commands) or '(no command)'}")
            for line in d.diff():
                print(f"  {line}")
        print(f"outcome: recorded {result.recorded_outcome}, replayed {result.replayed_outcome}")
        if saved:
            print(f"replay saved: {saved}")
    verdict = "same" if result.same else "differs"
    counts = ""
    if result.recorded_steps != result.replayed_steps:
        counts = (
            f"; step counts differ: {result.recorded_steps} recorded, "
            f"{result.replayed_steps} replayed"
        )
    print(f"{verdict}: {result.compared} steps compared, {len(result.differences)} differ{counts}")
