"""Billed calls that led to a reply (retries, summaries) are added to what it reports."""

from __future__ import annotations

from dataclasses import replace

from four._types import NO_USAGE, Assistant, ModelError, Usage


def add_usage(reply: Assistant, usage: Usage) -> Assistant:
    """``reply`` with ``usage`` added to its own (billed calls that led to it)."""
    return replace(reply, usage=(reply.usage or NO_USAGE) + usage)


def add_error_usage(error: ModelError, usage: Usage) -> ModelError:
    """``error`` with ``usage`` added to its own."""
    return replace(error, usage=(error.usage or NO_USAGE) + usage)
