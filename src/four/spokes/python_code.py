"""The Python domain as a spoke: the same contract ``four spoke new`` holds new spokes to
(``KIND``, ``make``, ``DRY_RUN``, ``EXPECT``), so the same acceptance checks it. Its
dry run writes a typed module, sees it checked by ruff and mypy --strict, and submits."""

from __future__ import annotations

from four.domains import Domain
from four.types import EXIT_SIGNAL

KIND = "domain"
DRY_RUN = [
    "greet.py\n```python\ndef greet(name: str) -> str:\n    return 'hello ' + name\n```",
    "greet.py\n```python\n<<<<<<< SEARCH\n    return 'hello ' + name\n=======\n"
    "    return f'hello {name}'\n>>>>>>> REPLACE\n```",
    f"Done.\n{EXIT_SIGNAL}",
]
EXPECT = "exit:task_complete"


def make() -> Domain:
    """The Python domain (``four.domains.python``)."""
    from four.domains.python import DOMAIN

    return DOMAIN
