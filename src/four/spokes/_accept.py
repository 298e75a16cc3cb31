"""Whether a spoke module is accepted: typed against four's Protocols, importable, and a
dry run of ``run`` over it ending as the module says it should.

A spoke module defines (see ``four.spokes``)::

    KIND = "V2"                      # "G", "V1", "V2", "emit" or "domain"
    def make() -> Execute: ...       # the component, typed as its arrow's Protocol
    DRY_RUN = ["```bash\\nls\\n```", "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
    EXPECT = "exit:task_complete"    # how the dry run must end (an outcome's text form)

Each step runs in a subprocess of its own, so a module that hangs, exits or crashes
fails its step and nothing else.
"""

from __future__ import annotations

import json
import keyword
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from four._checked import Checked, checked
from four.execute import command_env

TYPES = "four.types"
"""The module of the extension API the harness types spokes against."""

KINDS: dict[str, str] = {
    "G": f"from {TYPES} import Invoke as Arrow",
    "V1": f"from {TYPES} import Parse as Arrow",
    "V2": f"from {TYPES} import Execute as Arrow",
    "emit": f"from {TYPES} import Emit\nArrow = Emit[object]",
    "domain": "from four.domains import Domain as Arrow",
}
"""A spoke's ``KIND`` -> how the harness names the Protocol its ``make()`` must satisfy."""

Step = Literal["name", "types", "import", "dry run"]
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_HIDDEN = ".four-spoke"  # the harness's files, inside the spoke's folder but never saved


@dataclass(frozen=True, slots=True)
class Verdict(Checked):
    """The acceptance of one spoke: ``accepted``, or the first ``step`` that failed and why."""

    accepted: bool
    step: Step | None = None
    reason: str = ""

    def __str__(self) -> str:
        return "accepted" if self.accepted else f"{self.step}: {self.reason}"


@checked
def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a spoke module, or None."""
    if not _NAME.match(name) or keyword.iskeyword(name):
        return f"{name!r} is not a module name: use lower case letters, digits and _"
    if name in sys.stdlib_module_names or name in {"four", "returns", "mypy", "ruff", "test"}:
        return f"{name!r} would shadow the module of the same name: choose another"
    return None


@checked
def accept(
    module: Path,
    *,
    python: str = sys.executable,
    timeout: float = 120.0,
    cache_dir: Path | None = None,
) -> Verdict:
    """Judge the spoke at ``module`` (``folder/NAME.py``): mypy --strict over it and a
    harness that assigns ``make()`` to its arrow's Protocol (a config of our own: no
    plugin, the returns plugin included); then ``import NAME``; then the dry run.
    mypy's cache is ``cache_dir`` (default: a hidden folder beside the module).

    >>> accept(Path("/nonexistent/x.py")).step
    'name'
    """
    name = module.stem
    problem = name_problem(name)
    if problem is None and not module.is_file():
        problem = f"{module.name} does not exist: write it first"
    if problem is not None:
        return Verdict(False, "name", problem)
    folder = module.parent.resolve()
    work = folder / _HIDDEN
    work.mkdir(exist_ok=True)
    kind = _kind(module)
    if kind not in KINDS:
        return Verdict(False, "types", f"set KIND to one of {', '.join(map(repr, KINDS))}")
    harness = work / f"check_{name}.py"
    harness.write_text(
        f"import {name}\n{KINDS[kind]}\n\n"
        f"component: Arrow = {name}.make()\n"
        f"replies: list[str] = list({name}.DRY_RUN)\n"
        f"expect: str = {name}.EXPECT\n"
    )
    config = work / "mypy.ini"
    config.write_text("[mypy]\n")
    cache = cache_dir if cache_dir is not None else work / "mypy_cache"
    flags = ["--strict", "--config-file", str(config), "--cache-dir", str(cache)]
    typed = _call(
        [python, "-m", "mypy", *flags, "--no-error-summary", module.name, str(harness)],
        folder,
        timeout,
    )
    if typed[0] != 0:
        return Verdict(False, "types", _first_errors(typed[1]))
    imported = _call([python, "-c", f"import {name}"], folder, timeout)
    if imported[0] != 0:
        return Verdict(False, "import", _last_line(imported[1]))
    dry = _call([python, "-m", "four.spokes._dry", name, str(work / "dry")], folder, timeout)
    if dry[0] != 0:
        return Verdict(False, "dry run", _last_line(dry[1]))
    try:
        ended = str(json.loads(dry[1].strip().splitlines()[-1])["outcome"])
    except (ValueError, IndexError, KeyError):
        return Verdict(False, "dry run", f"no outcome: {_last_line(dry[1])}")
    expected = _expect(module)
    if not ended.startswith(expected):
        return Verdict(False, "dry run", f"it ended {ended!r}, not {expected!r} as EXPECT says")
    return Verdict(True)


def _kind(module: Path) -> str:
    match = re.search(r"^KIND\b[^=]*=\s*['\"]([A-Za-z0-9]+)['\"]", module.read_text(), re.M)
    return match.group(1) if match else ""


def _expect(module: Path) -> str:
    match = re.search(r"^EXPECT\b[^=]*=\s*['\"]([^'\"]*)['\"]", module.read_text(), re.M)
    return match.group(1) if match else "exit:task_complete"


def _call(command: list[str], cwd: Path, timeout: float) -> tuple[int, str]:
    # The module is the model's code: it runs without the driver's secrets.
    env = command_env(env={"PYTHONPATH": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"})
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return 124, f"did not finish within {timeout:g}s"
    except OSError as exc:
        return 126, str(exc)
    return done.returncode, done.stdout + done.stderr


def _first_errors(output: str) -> str:
    errors = [line for line in output.splitlines() if ": error:" in line]
    if not errors:
        return _last_line(output)
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(line.replace(f"{_HIDDEN}/", "") for line in errors[:3]) + more


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"
