"""Billed calls that led to a reply (retries, summaries) are added to what it reports."""

from __future__ import annotations

from dataclasses import replace

from returns.result import Failure, Result, Success

from four._types import NO_USAGE, ModelError, Reply, Usage


def add_usage(result: Result[Reply, ModelError], usage: Usage) -> Result[Reply, ModelError]:
    """``result``, reply or error, with ``usage`` added to its own."""
    if isinstance(result, Success):
        reply = result.unwrap()
        return Success(replace(reply, usage=(reply.usage or NO_USAGE) + usage))
    error = result.failure()
    return Failure(replace(error, usage=(error.usage or NO_USAGE) + usage))
