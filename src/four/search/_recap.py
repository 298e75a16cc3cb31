"""What an attempt after the first is told of the attempts before it, with a search's
``recap=True``: their commands, the files they changed, how they ended and the check's last
word, read from their records.

The recap is a function of the earlier attempts' trajectories and copies, so it is as
reproducible as they are, and it is in the prompt the attempt's trajectory stores. It
says no more than the attempts themselves were told: the check's words are the feedback
the run was given, at the level the caller chose. It is off by default: the built-in
model, told which command was wrong, often ran it again, and its independent attempts
solved as many tasks (docs/search.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from four._outcomes import Held, Outcome, RepeatedFormatError, StepsExhausted, Stopped
from four._types import Message, ToolResult, User

HEAD = (
    "Earlier attempts at this task were not accepted. Each began from the same files as you "
    "do now (their changes are undone). Do not do what they did again: read the task once "
    "more, look at the files, and find another way."
)
COMMANDS = 10
"""Commands of an attempt named, at most (its last ones)."""
COMMAND_CHARS = 100
FILES = 8
LINE_CHARS = 300


def summary(
    index: int, outcome: Outcome, messages: Sequence[Message], changed: Sequence[str] | None
) -> str:
    """How attempt ``index`` went, in a few lines; ``changed`` the files it made, changed
    or deleted (None: not known, it had no copy of its own).

    >>> from four._outcomes import StepsExhausted
    >>> from four._types import User
    >>> print(summary(1, StepsExhausted(), [User("ls", "observation", 0, "ls"),
    ...     User("cat a.txt", "observation", 1, "cat a.txt")], []))
    Attempt 1 used all its steps without an accepted submission.
    Its commands: `ls` · `cat a.txt` (exit 1)
    It changed no file.
    """
    lines = [f"Attempt {index} {_ended(outcome)}."]
    ran: list[str] = []
    feedback = ""
    for message in messages:
        if not isinstance(message, User | ToolResult):
            continue
        if message.kind == "observation" and message.command:
            ran.append(_command(message.command, message.returncode))
        elif message.kind == "feedback":
            feedback = message.content.strip().split("\n", 1)[0]
    if ran:
        unique = list(dict.fromkeys(ran))[-COMMANDS:]
        lines.append("Its commands: " + " · ".join(unique))
    else:
        lines.append("It ran no command.")
    if changed is not None:
        if not changed:
            lines.append("It changed no file.")
        else:
            more = f" and {len(changed) - FILES} more" if len(changed) > FILES else ""
            lines.append(f"The files it changed: {', '.join(changed[:FILES])}{more}.")
    if feedback:
        lines.append(f"The check said: {_cut(feedback, LINE_CHARS)}")
    return "\n".join(lines)


def recap(summaries: Sequence[str]) -> str:
    """The text an attempt is told (appended to its task), or "" when nothing went before.

    >>> recap([]) == ""
    True
    """
    return "\n\n".join([HEAD, *summaries]) if summaries else ""


def told(prompt: str) -> tuple[str, list[int]]:
    """A prompt split into the task and the attempts its recap names (none: no recap).

    >>> told("count the files\\n\\n" + recap(["Attempt 1 was held: ...", "Attempt 2 ..."]))
    ('count the files', [1, 2])
    >>> told("count the files")
    ('count the files', [])
    """
    task, head, rest = prompt.rpartition(f"\n\n{HEAD}")
    if not head:
        return prompt, []
    return task, [int(n) for n in re.findall(r"^Attempt (\d+) ", rest, re.MULTILINE)]


def _ended(outcome: Outcome) -> str:
    match outcome:
        case Held():
            return "was held: its work was submitted and not accepted"
        case StepsExhausted():
            return "used all its steps without an accepted submission"
        case Stopped(reason) if reason.startswith("looping"):
            return "was stopped: it ran the same command with the same output again and again"
        case RepeatedFormatError():
            return "was stopped: its replies held no command that could be run"
        case _:
            return f"ended: {_cut(outcome.text, 120)}"


def _command(command: str, returncode: int | None) -> str:
    first, *rest = command.strip().splitlines() or [""]
    shown = _cut(first + (" ..." if rest else ""), COMMAND_CHARS)
    failed = f" (exit {returncode})" if returncode not in (None, 0) else ""
    return f"`{shown}`{failed}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
