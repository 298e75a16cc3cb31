"""``four spoke new NAME "what it should do"``: the Python domain writing a new spoke of
four, accepted only once it is typed, importable and passes its dry run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from four import run
from four._checked import Checked, checked
from four.checks import Claim, verify
from four.domains.python import python_env, save_files
from four.parse import edit_parse
from four.quaternary import CheckResult, no, yes
from four.spokes._accept import KINDS, TYPES, accept, name_problem
from four.trajectory import load_trajectory
from four.types import Invoke

API = f"""\
The extension API (import these from {TYPES}; everything is typed, mypy --strict checks it,
and failures are values of returns.result.Result: Success(value) or Failure(error)):

  Action(command: str, call_id: str | None = None)            what V1 asks V2 to do
  Observation(content: str, returncode: int | None = None)    what V2 shows the model
  Submitted(output: str)          the agent is done (the Err side of V1 or V2)
  ExecutionError(message: str)    V2 cannot go on: ends the run
  FormatError(feedback: str)      V1 could not read the reply: feedback goes to the model
  Rejected(call_id: str, error: str)
  Assistant(content: str, ...)    a model reply; Reply is Assistant
  Message = System | User | Assistant | ToolResult    (each has .content: str)
  ModelError(kind: ModelErrorKind, message: str)      ModelErrorKind.OTHER, .RATE_LIMIT, ...

The four arrows are Protocols; any function or object with __call__ of the shape fits:
  Invoke  (G):    (messages: Sequence[Message], /) -> Result[Reply, ModelError]
  Parse   (V1):   (reply: Reply, /) -> Result[Sequence[Action | Rejected], FormatError | Submitted]
  Execute (V2):   (action: Action, /) -> Result[Observation, Submitted | ExecutionError]
  Emit[T] (emit): (messages: Sequence[Message], outcome: Outcome, /) -> T
An outcome has .text, its stable form: "exit:task_complete", "max_steps_reached", ...
Ready components to wrap or reuse: from four import local_env, regex_parse,
save_trajectory, scripted_invoke, load_trajectory; four.types.EXIT_SIGNAL is the line
that submits ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")."""

CONTRACT = f"""\
A spoke is one module, NAME.py, that defines exactly these four names:

  KIND = "V2"            # one of {", ".join(repr(k) for k in KINDS)}
  def make() -> Execute: # returns the component; annotate it with its arrow's Protocol
  DRY_RUN: list[str]     # the replies of a scripted model for a dry run over make()
  EXPECT = "exit:task_complete"   # how that dry run must end (an outcome's text form)

In the dry run, the other arrows are regex_parse() (```bash blocks), local_env() in an
empty folder and save_trajectory(); the model's replies are DRY_RUN, in order. A reply
whose line is COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT submits.

The spoke is accepted only when (1) mypy --strict passes on NAME.py and on a harness
that assigns make() to the arrow's Protocol (no mypy plugin is loaded), (2) `import NAME`
works, and (3) the dry run ends as EXPECT says. Until then your submission is refused
with the reason.

An example, a V2 that upper-cases what it echoes:

example.py
```python
from returns.result import Result, Success

from {TYPES} import Action, Execute, ExecutionError, Observation, Submitted
from four import local_env

KIND = "V2"
DRY_RUN = ["```bash\\necho hi\\n```", "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
EXPECT = "exit:task_complete"


class Shout:
    def __init__(self) -> None:
        self.inner = local_env()

    def __call__(self, action: Action, /) -> Result[Observation, Submitted | ExecutionError]:
        return self.inner(action).map(lambda seen: Observation(seen.content.upper(), seen.returncode))


def make() -> Execute:
    return Shout()
```"""


@checked
def system_prompt(name: str) -> str:
    """The system prompt of ``four spoke new NAME``: the Python domain's, the API and
    the spoke contract."""
    from four.domains.python import SYSTEM

    return f"{SYSTEM}\n\n{API}\n\n{CONTRACT.replace('NAME', name)}"


@dataclass(frozen=True, slots=True)
class SpokeCheck(Checked):
    """The verified loop's check of a spoke: ``accept`` on its module."""

    module: Path
    timeout: float = 120.0
    cache_dir: Path | None = None

    def __call__(self, claim: Claim, /) -> CheckResult:
        verdict = accept(self.module, timeout=self.timeout, cache_dir=self.cache_dir)
        if verdict.accepted:
            return yes()
        # mypy's and the dry run's verdict is what the model needs to fix the module
        return no(f"{self.module.name} is not accepted yet ({verdict})", feedback="full")


@dataclass(frozen=True, slots=True)
class NewSpoke(Checked):
    """What ``new_spoke`` made: the module (accepted or not), the trajectory, the outcome."""

    module: Path
    trajectory: Path
    outcome: str

    @property
    def accepted(self) -> bool:
        return self.outcome == "accepted"


@checked
def new_spoke(
    name: str,
    purpose: str,
    G: Invoke,
    *,
    folder: str | Path = "spokes",
    output_dir: str | Path = "trajectories",
    max_steps: int = 40,
    attempts: int = 6,
    cache_dir: Path | None = None,
) -> NewSpoke:
    """Have the model ``G`` write the spoke ``folder/NAME.py`` for ``purpose``.

    The run is the Python domain (edits judged by ruff and mypy --strict) with a system
    prompt that knows four's extension API and the spoke contract (``CONTRACT``); its
    check accepts the module only once it passes ``accept``. The outcome is
    ``accepted`` when it did. ``attempts`` is how many refused submissions the check
    explains before the run is held; ``cache_dir`` is mypy's (see ``accept``).

    >>> new_spoke("os", "anything", G=lambda messages: None)
    Traceback (most recent call last):
    ...
    ValueError: name: 'os' would shadow the module of the same name: choose another
    """
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(f"name: {problem}")
    where = Path(folder)
    where.mkdir(parents=True, exist_ok=True)
    module = where.resolve() / f"{name}.py"
    env = python_env(where)
    check = verify(SpokeCheck(module, cache_dir=cache_dir), failures=attempts)
    prompt = (
        f"Write the spoke {name}.py in the project folder. What it should do: {purpose}\n"
        "Follow the spoke contract of your instructions; submit when it is accepted."
    )
    path = run(
        G,
        edit_parse(),
        env,
        save_files(output_dir, env),
        system_prompt(name),
        prompt,
        max_steps,
        check=check,
    )
    return NewSpoke(module, path, load_trajectory(path).outcome or "unfinished")
