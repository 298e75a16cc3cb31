"""Deliberately wrong compositions of the four arrows: mypy must report every `# E` line.

Excluded from the normal mypy run; tests/test_typecheck.py checks it explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence

from returns.pipeline import flow
from returns.pointfree import bind
from returns.result import Result, Success

from four import Action, Assistant, FormatError, Message, ModelError, Rejected, Submitted, User


def G(messages: Sequence[Message]) -> Result[Assistant, ModelError]:
    return Success(Assistant("ls"))


def V1(reply: Assistant) -> Result[Sequence[Action | Rejected], FormatError | Submitted]:
    return Success([Action(reply.content)])


def wrong_order(messages: Sequence[Message]) -> object:
    return flow(messages, V1, bind(G))  # E


def wrong_input() -> object:
    return V1(User("not a reply"))  # E


def wrong_error_type(
    messages: Sequence[Message],
) -> Result[Sequence[Action | Rejected], ModelError]:
    return G(messages).bind(V1)  # E


def wrong_message() -> Assistant:
    return Assistant(content=3)  # E
