"""The one rule for what is a secret, wherever a name is shown or passed on.

It decides which host variables a command never inherits (``four.execute``), which model
options are kept out of the trajectory (``four.invoke``) and which settings of a
component are recorded as ``***`` (``describe``).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Iterable

SECRET_PATTERNS: tuple[str, ...] = (
    "KEY",
    "*_KEY",
    "*APIKEY*",
    "*_KEY_ID",
    "*PRIVATE_KEY*",
    "*TOKEN",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*AUTH*",
    "*COOKIE*",
    "*HEADERS",
    "*_DSN",
    "*CONNECTION_STRING*",
    "DATABASE_URL",
    "AWS_*",
)
"""Names that hold secrets (``fnmatch`` patterns, matched case-insensitively on the whole
name): ``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``api_key``, ``access_token``,
``extra_headers``, ``DATABASE_URL``, ``AWS_REGION``..., but not ``max_tokens`` or
``token_limit``."""


def is_secret(name: str, patterns: Iterable[str] = SECRET_PATTERNS) -> bool:
    """Whether ``name`` matches one of ``patterns`` (case-insensitive).

    >>> is_secret("OPENAI_API_KEY"), is_secret("api_key"), is_secret("max_tokens")
    (True, True, False)
    """
    return name_matcher(tuple(patterns), ignore_case=True)(name) is not None


@functools.lru_cache(maxsize=64)
def name_matcher(patterns: tuple[str, ...], *, ignore_case: bool) -> Callable[[str], object]:
    """One compiled regex for a set of ``fnmatch`` patterns (its ``match``)."""
    if not patterns:
        return lambda name: None
    joined = "|".join(fnmatch.translate(p) for p in patterns)
    return re.compile(joined, re.IGNORECASE if ignore_case else 0).match
