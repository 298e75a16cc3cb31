"""The one error the command line reports without a traceback."""

from __future__ import annotations


class UsageError(Exception):
    """A mistake in how ``four`` was called (bad flags, a missing key, an unknown model):
    ``four`` prints the message and exits with status 2."""
