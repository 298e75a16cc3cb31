"""The completion rule of ``four.parse`` (see its docstring), for a reply that asks to run
nothing. A reply that submits and also holds a block the parser did not apply (a
``python`` block beside the exit signal in the bash domain, a block naming no file in
the python domain) is a ``FormatError`` too: the model would believe that block's work
was done. ``reply.reasoning`` is never read.
"""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Failure, Result, Success

from four._types import Action, FormatError, Rejected, Reply, Submitted


def signal_submission(content: str, exit_signal: str) -> str | None:
    """The submission if a line of ``content`` is the exit signal, else None.

    >>> signal_submission("All fixed.\\nCOMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    'All fixed.'
    """
    if not exit_signal:
        return None
    lines = content.splitlines()
    for index, line in enumerate(lines):
        if line.strip().strip("`").strip() == exit_signal:
            return "\n".join(lines[:index] + lines[index + 1 :]).strip()
    return None


def finish_rule(exit_signal: str, finish_on_plain_text: bool) -> str:
    """How to finish, in the words the model is given."""
    text = (
        f"To finish, run a command whose output starts with the line {exit_signal} "
        f"followed by your final output (echo {exit_signal} && cat result.txt), "
        f"or reply with {exit_signal} alone on a line"
    )
    if finish_on_plain_text:
        return text + ", or reply with your final answer as plain text and no code block."
    return text + "."


def unapplied(tag: str, line: int, why: str) -> str:
    """A block that was not applied, as a submission's format error names it.

    >>> unapplied("python", 3, "names no file, so it was not written")
    'a ```python block on line 3, which names no file, so it was not written'
    """
    return f"a ```{tag} block on line {line}, which {why}"


def no_action(
    content: str,
    exit_signal: str,
    finish_on_plain_text: bool,
    has_fence: bool,
    problem: str,
    expected: str,
    not_applied: str | None = None,
) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    """Apply the completion rule to a reply with no action.

    The feedback is ``problem`` (or "empty" for a blank reply), then ``expected``.
    ``not_applied`` names the first block of the reply that holds something but was not
    applied (see ``unapplied``): with it, a reply that submits is a format error saying so.
    """
    submitted = signal_submission(content, exit_signal)
    if submitted is not None and not_applied is not None:
        return Failure(
            FormatError(
                f"Your reply submits (the line {exit_signal}) but also holds {not_applied}: "
                "nothing was submitted. If that block is work still to do, send it in a "
                "form that is applied and look at the result; finish in a reply of its own, "
                f"with no code block.\n\n{expected}"
            )
        )
    if submitted is not None:
        return Failure(Submitted(submitted))
    if finish_on_plain_text and content.strip() and not has_fence:
        return Failure(Submitted(content.strip()))
    if not content.strip():
        problem = "Your reply was empty, so nothing was run."
    return Failure(FormatError(f"{problem}\n\n{expected}"))


def text_only(
    read: Result[Sequence[Action | Rejected], FormatError | Submitted], reply: Reply, why: str
) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    """``read`` of a parser of text, each tool call of ``reply`` rejected with ``why``: a
    format error answers every call, a submission ends the turn."""
    if not reply.tool_calls or not isinstance(read, Success):
        return read
    return Success([*read.unwrap(), *(Rejected(c.id, why) for c in reply.tool_calls)])
