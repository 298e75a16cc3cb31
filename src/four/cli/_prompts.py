"""The system prompts ``four run`` uses when no ``--system`` file is given."""

from __future__ import annotations

from four.domains._bash import TEXT, TOOLCALLS

__all__ = ["TEXT", "TOOLCALLS", "default_system"]


def default_system(toolcalls: bool) -> str:
    """The built-in system prompt of the bash domain, for text replies or tool calls.

    >>> "```bash" in default_system(False), "bash` tool" in default_system(True)
    (True, True)
    """
    return TOOLCALLS if toolcalls else TEXT
