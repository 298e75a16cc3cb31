"""``four batch``: the agent of ``four run`` on every task of a JSON Lines file."""

from four.batch._command import batch_command as main

__all__ = ["main"]
