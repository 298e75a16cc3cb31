"""Per-run failure tags: a pure function of the messages the loop recorded and the outcome.

Nothing is re-parsed: a command's exit status is the returncode the environment recorded
on its observation, a format error is a message of kind ``format_error`` or ``rejected``,
a rejected submission one of kind ``feedback``, and a repeated action is the same reply
answered with the same observation, whatever the parser made of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, TypeAlias, get_args

from four._checked import checked
from four._types import EXIT_SIGNAL, Assistant, Message, ToolResult, User

Tag: TypeAlias = Literal[
    "format_error_storm",
    "repeated_action_loop",
    "exit_127_storm",
    "exit_signal_run_as_command",
    "timeouts",
    "context_overflow",
    "submission_rejected",
    "budget_exhausted",
]
TAGS: tuple[Tag, ...] = get_args(Tag)
"""Every tag, in the order they are looked for."""

STORM = 3
"""In a row (format errors, exit 127) or the same turn repeated: how many make a tag."""
TIMEOUT_RETURNCODE = 124


@checked
def tags(messages: Sequence[Message], outcome: str | None) -> dict[Tag, int]:
    """The tags of one run, each with how often it happened (absent: it did not).

    >>> from four import Assistant, User
    >>> turn = [Assistant("```bash\\nls\\n```"), User("<returncode>127</returncode>", "observation", 127)]
    >>> tags(turn * 3, "max_steps_reached")
    {'repeated_action_loop': 3, 'exit_127_storm': 3, 'budget_exhausted': 1}
    """
    found: dict[Tag, int] = {}
    observations = _observations(messages)
    codes = [m.returncode for m in observations]
    _run_of(found, "format_error_storm", [_format_error(m) for m in messages if _turn_end(m)])
    _repeats(found, messages)
    _run_of(found, "exit_127_storm", [code == 127 for code in codes])
    signal_runs = sum(1 for m in observations if m.returncode == 127 and EXIT_SIGNAL in m.content)
    if signal_runs:
        found["exit_signal_run_as_command"] = signal_runs
    timeouts = sum(1 for code in codes if code == TIMEOUT_RETURNCODE)
    if timeouts:
        found["timeouts"] = timeouts
    text = outcome or ""
    if text.startswith("model_error: context_window"):
        found["context_overflow"] = 1
    rejected = sum(1 for m in messages if isinstance(m, User | ToolResult) and m.kind == "feedback")
    if rejected:
        found["submission_rejected"] = rejected
    if text.startswith(("max_steps_reached", "cost_limit_reached")):
        found["budget_exhausted"] = 1
    return found


def _observations(messages: Sequence[Message]) -> list[User | ToolResult]:
    """Commands' results: ours by kind, mini-swe-agent's by the return code it kept."""
    return [m for m in messages if _observation(m)]  # type: ignore[misc]


def _observation(message: Message) -> bool:
    return isinstance(message, User | ToolResult) and (
        message.kind == "observation" or message.returncode is not None
    )


def _turn_end(message: Message) -> bool:
    """A message that answers a model turn (so format errors are counted per turn)."""
    return isinstance(message, User | ToolResult) and message.kind != "task"


def _format_error(message: Message) -> bool:
    return isinstance(message, User | ToolResult) and message.kind in ("format_error", "rejected")


def _run_of(found: dict[Tag, int], tag: Tag, flags: Sequence[bool]) -> None:
    """Tag the longest run of True in ``flags`` when it is at least ``STORM`` long."""
    longest = current = 0
    for flag in flags:
        current = current + 1 if flag else 0
        longest = max(longest, current)
    if longest >= STORM:
        found[tag] = longest


def _repeats(found: dict[Tag, int], messages: Sequence[Message]) -> None:
    """The same reply answered by the same observations, turn after turn."""
    turns: list[tuple[str, tuple[str, ...]]] = []
    for message in messages:
        if isinstance(message, Assistant):
            calls = tuple(f"{c.name}({c.arguments})" for c in message.tool_calls)
            turns.append((message.content + "".join(calls), ()))
        elif turns and isinstance(message, User | ToolResult) and _observation(message):
            reply, seen = turns[-1]
            turns[-1] = (reply, (*seen, message.content))
    longest = current = 1
    for before, after in itertools.pairwise(turns):
        current = current + 1 if after == before and after[1] else 1
        longest = max(longest, current)
    if longest >= STORM:
        found["repeated_action_loop"] = longest
