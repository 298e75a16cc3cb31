"""Trajectories for the CLI tests, made by the real loop with scripted models and doubles."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from returns.result import Failure, Result, Success

from four import (
    Action,
    Assistant,
    ExecutionError,
    FormatError,
    Observation,
    Rejected,
    Reply,
    Submitted,
    ToolCall,
    Usage,
    run,
    save_trajectory,
    scripted_invoke,
)
from four.cli._settings import VARIABLES
from four.invoke._scripted import Scripted

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = frozenset(VARIABLES)
_BLOCK = re.compile(r"```bash\n(.*?)\n```", re.DOTALL)


def fenced_parse(reply: Reply) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    """V1 double: ```bash blocks, tool calls with a JSON command; DONE submits."""
    if reply.tool_calls:
        out: list[Action | Rejected] = []
        for call in reply.tool_calls:
            try:
                out.append(Action(json.loads(call.arguments)["command"], call.id))
            except (ValueError, KeyError, TypeError):
                out.append(Rejected(call.id, "Format error: arguments must be JSON with a command"))
        return Success(out)
    if reply.content.startswith("DONE"):
        return Failure(Submitted(reply.content[4:].strip()))
    blocks = _BLOCK.findall(reply.content)
    if not blocks:
        return Failure(FormatError("Format error: put your command in a ```bash block."))
    return Success([Action(b) for b in blocks])


def fake_env(action: Action) -> Result[Observation, Submitted | ExecutionError]:
    """V2 double: 'fail X' exits 1, 'lines N' prints N lines, 'submit X' submits."""
    command = action.command
    if command.startswith("submit"):
        return Failure(Submitted(command[7:]))
    if command.startswith("fail"):
        rc, out = 1, f"error: {command[5:]}\n"
    elif command.startswith("lines"):
        rc, out = 0, "".join(f"line {i}\n" for i in range(int(command.split()[1])))
    else:
        rc, out = 0, f"ran {command}\n"
    return Success(Observation(f"<returncode>{rc}</returncode>\n<output>\n{out}</output>", rc))


def priced(text: str, cost: float = 0.001, prompt: int = 100, completion: int = 20) -> Assistant:
    return Assistant(text, usage=Usage(prompt, completion, cost), model="test/model")


def make_run(
    directory: Path,
    replies: Sequence[Scripted],
    *,
    prompt: str = "do the task",
    max_steps: int = 10,
) -> Path:
    """Run the loop with a scripted model and the doubles; the sealed trajectory's path."""
    return run(
        scripted_invoke(replies),
        fenced_parse,
        fake_env,
        save_trajectory(directory),
        system="You are a test agent.",
        prompt=prompt,
        max_steps=max_steps,
    )


def sample_run(directory: Path) -> Path:
    """A finished run with a failing command, a format error, a long output and tool calls."""
    return make_run(
        directory,
        [
            priced("Let me look.\n```bash\nls -la\n```"),
            priced("Oops.\n```bash\nfail cannot open <b>x</b> & 'y'\n```"),
            priced("I think it is done."),  # format error
            priced("```bash\nlines 60\n```"),
            Assistant(
                "",
                (
                    ToolCall(
                        "c1", "bash", json.dumps({"command": "echo '<script>alert(1)</script>'"})
                    ),
                ),
                reasoning="use a tool call",
                usage=Usage(50, 10, 0.002),
                model="test/model",
            ),
            priced("DONE all good"),
        ],
    )


def cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m four.cli ARGS`` as a subprocess with the source tree on the path."""
    return subprocess.run(
        [sys.executable, "-m", "four.cli", *args],
        capture_output=True,
        text=True,
        env=cli_env(env),
        cwd=cwd,
        input=stdin,
        timeout=timeout,
        check=False,
    )


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a ``four`` subprocess: no ``four`` settings, no provider keys."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in SETTINGS and not k.endswith("_API_KEY") and k != "COLUMNS"
    }
    environ.update({"PYTHONPATH": str(ROOT / "src"), "COLUMNS": "100", **(extra or {})})
    return environ


SUBMIT = "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"
CHECK = "test -f ok.txt || { echo '<img src=x onerror=alert(1)>'; exit 1; }"


def verified_run(directory: Path, workdir: Path) -> Path:
    """A verified run: a rejected submission, a fix, an accepted submission (real receipts)."""
    from four.checks import command_check
    from four.execute import local_env
    from four.parse import regex_parse

    workdir.mkdir(parents=True, exist_ok=True)
    return run(
        scripted_invoke([priced(SUBMIT), priced("```bash\ntouch ok.txt\n```"), priced(SUBMIT)]),
        regex_parse(),
        local_env(cwd=str(workdir)),
        save_trajectory(directory),
        prompt="make ok.txt",
        check=command_check(CHECK),
    )
