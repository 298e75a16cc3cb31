"""Context management: route long histories to a large model, window them, or summarise;
each wrapper sends the system message once and the task prompt (the first user message)
verbatim, and leaves out or condenses whole turns (no tool result parted from its call)."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from returns.result import Failure, Result, Success

from four import _arguments as check
from four._checked import checked
from four._types import (
    NO_USAGE,
    Assistant,
    Checked,
    Invoke,
    Message,
    ModelError,
    ModelErrorKind,
    Reply,
    System,
    ToolResult,
    Usage,
    User,
)
from four.invoke._budget import add_usage
from four.invoke._convert import to_chat
from four.invoke._lazy import litellm_module

Counter: TypeAlias = Callable[[Sequence[Message]], int]
"""Tokens a history takes in a request."""


@dataclass(frozen=True, slots=True)
class LitellmCounter(Checked):
    """Tokens of a history by ``litellm.token_counter`` for ``model`` ('' for its default).

    >>> from four import User
    >>> LitellmCounter("gpt-4o")([User("hello world")]) > 0
    True
    """

    model: str = ""

    @checked
    def __call__(self, messages: Sequence[Message], /) -> int:
        count = litellm_module().token_counter(model=self.model, messages=to_chat(messages))
        return int(count)


def model_of(G: object) -> str:
    """The model string of a G, looking through wrappers (``.G``); '' if none is found."""
    for _ in range(8):
        if isinstance(model := getattr(G, "model", None), str):
            return model
        G = getattr(G, "G", None)
    return ""


def head_length(messages: Sequence[Message]) -> int:
    """How many leading messages are the head: the system messages and the task prompt.

    >>> head_length([System("s"), User("task"), Assistant("a"), User("b")])
    2
    """
    for i, message in enumerate(messages):
        if isinstance(message, User):
            return i + 1
        if not isinstance(message, System):
            return i
    return len(messages)


def clean_cuts(messages: Sequence[Message], start: int, stop: int) -> list[int]:
    """Indices ``i`` in [start, stop] where a history may be cut (``messages[i:]`` kept): those
    where no tool result starts the tail, so in a valid history no call is parted from it."""
    return [
        i
        for i in range(start, min(stop, len(messages)) + 1)
        if i == len(messages) or not isinstance(messages[i], ToolResult)
    ]


def window(messages: Sequence[Message], counter: Counter, limit: int) -> list[Message]:
    """The head plus the longest clean tail of whole turns that fits in ``limit`` tokens.

    If even the shortest clean tail does not fit, that tail is sent (the provider may
    then refuse it with a context-window error, which is the honest outcome).

    >>> msgs = [System("s"), User("task"), Assistant("a"), User("b"), Assistant("c")]
    >>> [m.content for m in window(msgs, len, 4)]  # a counter of messages, for the example
    ['s', 'task', '[2 earlier messages are left out here to fit the context window.]', 'c']
    """
    head = head_length(messages)
    cuts = clean_cuts(messages, head, len(messages))

    def sent(cut: int) -> list[Message]:
        if cut <= head:
            return list(messages)
        note = User(f"[{cut - head} earlier messages are left out here to fit the context window.]")
        return [*messages[:head], note, *messages[cut:]]

    def fits(cut: int) -> bool:
        return counter(sent(cut)) <= limit

    if not cuts or fits(cuts[0]):
        return list(messages)
    first = bisect.bisect_left(cuts, True, key=fits)  # shorter tails fit better
    return sent(cuts[min(first, len(cuts) - 1)])


@dataclass(frozen=True, slots=True)
class ContextAwareInvoke(Checked):
    """G that picks ``fast`` or ``large`` by the history's size (see ``context_aware_invoke``)."""

    fast: Invoke
    large: Invoke
    context_limit: int
    large_limit: int | None = None
    counter: Counter | None = field(default=None, repr=False)

    def count(self, messages: Sequence[Message]) -> int:
        return (self.counter or LitellmCounter(model_of(self.fast)))(messages)

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        tokens = self.count(messages)
        if tokens <= self.context_limit:
            return self.fast(messages)
        if self.large_limit is None or tokens <= self.large_limit:
            return self.large(messages)
        return self.large(window(messages, self.count, self.large_limit))


def context_aware_invoke(
    fast: Invoke,
    large: Invoke,
    context_limit: int = 50_000,
    *,
    large_limit: int | None = None,
    counter: Counter | None = None,
) -> ContextAwareInvoke:
    """G that sends short histories to ``fast`` and long ones to ``large`` (a window of
    them above ``large_limit``; docs/components.md).

    >>> from four import scripted_invoke, User
    >>> G = context_aware_invoke(scripted_invoke(["fast"]), scripted_invoke(["large"]),
    ...                          context_limit=3, counter=lambda ms: len(ms))
    >>> G([User("a")] * 5).unwrap().content
    'large'
    """
    where = "context_aware_invoke"
    check.component(where, "fast", fast, _G)
    check.component(where, "large", large, _G)
    check.count(where, "context_limit", context_limit, minimum=1)
    check.count(where, "large_limit", large_limit, minimum=1, optional=True)
    if counter is not None:
        check.component(where, "counter", counter, "a function: messages -> tokens")
    return ContextAwareInvoke(fast, large, context_limit, large_limit, counter)


# --- summarising -------------------------------------------------------------------

SUMMARIZER_SYSTEM = (
    "You keep the running notes of an agent that works on a task with shell commands. "
    "Given the notes so far and the steps since, write the updated notes: what was tried, "
    "what each command showed that still matters (paths, names, numbers, errors), what "
    "is done and what is left. Plain text only; call no tools."
)
SUMMARY_PREFIX = "Notes on the earlier steps (their full text was condensed to save space):\n"


def transcript(messages: Sequence[Message]) -> str:
    """Messages as plain text for the summariser.

    >>> from four import ToolCall
    >>> print(transcript([Assistant("look", (ToolCall("c", "bash", '{"command": "ls"}'),)),
    ...                   ToolResult("c", "a.txt")]))
    [assistant] look
    [tool call bash] {"command": "ls"}
    [tool result] a.txt
    """
    lines: list[str] = []
    for message in messages:
        if isinstance(message, Assistant):
            if message.content:
                lines.append(f"[assistant] {message.content}")
            lines.extend(f"[tool call {c.name}] {c.arguments}" for c in message.tool_calls)
        elif isinstance(message, ToolResult):
            lines.append(f"[tool result] {message.content}")
        else:
            lines.append(f"[{'user' if isinstance(message, User) else 'system'}] {message.content}")
    return "\n".join(lines)


@dataclass(slots=True)
class _Memory:
    """What a summarizing G has condensed so far: ``summary`` covers ``seen``."""

    summary: str = ""
    seen: tuple[Message, ...] = ()
    lock: threading.Lock = field(default_factory=threading.Lock)

    def continues(self, messages: Sequence[Message]) -> bool:
        """Whether ``messages`` extends the history the summary was made from."""
        return bool(self.seen) and tuple(messages[: len(self.seen)]) == self.seen


@dataclass(frozen=True, slots=True)
class SummarizingInvoke(Checked):
    """G that condenses old turns before calling ``G`` (see ``summarizing_invoke``)."""

    G: Invoke
    summarizer: Invoke | None = None
    threshold: int = 100_000
    keep_recent: int = 8
    counter: Counter | None = field(default=None, repr=False)
    _memory: _Memory = field(default_factory=_Memory, repr=False, compare=False)

    def count(self, messages: Sequence[Message]) -> int:
        return (self.counter or LitellmCounter(model_of(self.G)))(messages)

    def compose(self, messages: Sequence[Message], summary: str, covered: int) -> list[Message]:
        """What ``G`` is sent: head, the notes, and every message after ``covered``."""
        if not summary:
            return list(messages)
        head = list(messages[: head_length(messages)])
        return [*head, User(SUMMARY_PREFIX + summary), *messages[covered:]]

    @checked
    def __call__(self, messages: Sequence[Message], /) -> Result[Reply, ModelError]:
        memory = self._memory
        with memory.lock:
            if not memory.continues(messages):
                memory.summary, memory.seen = "", ()
            summary, covered = memory.summary, len(memory.seen)
        request = self.compose(messages, summary, covered)
        if self.count(request) <= self.threshold:
            return self.G(request)
        start = max(covered, head_length(messages))
        cuts = clean_cuts(messages, start + 1, len(messages) - self.keep_recent)
        if not cuts:  # nothing old enough to condense: send it as it is
            return self.G(request)
        cut = cuts[-1]
        condensed = self._summarize(summary, messages[start:cut])
        if isinstance(condensed, Failure):
            return condensed
        summary, spent = condensed.unwrap()
        with memory.lock:
            memory.summary, memory.seen = summary, tuple(messages[:cut])
        return add_usage(self.G(self.compose(messages, summary, cut)), spent)

    def _summarize(
        self, summary: str, new: Sequence[Message]
    ) -> Result[tuple[str, Usage], ModelError]:
        prompt = (
            f"Notes so far:\n{summary or '(none yet)'}\n\nSteps since:\n{transcript(new)}\n\n"
            "Write the updated notes."
        )
        result = (self.summarizer or self.G)([System(SUMMARIZER_SYSTEM), User(prompt)])
        if isinstance(result, Failure):
            error = result.failure()
            return Failure(replace(error, message=f"summarizer: {error.message}"))
        reply = result.unwrap()
        if not (text := reply.content.strip()):
            failed = ModelError(
                ModelErrorKind.OTHER, "summarizer returned no text", usage=reply.usage
            )
            return Failure(failed)
        return Success((text, reply.usage or NO_USAGE))


def summarizing_invoke(
    G: Invoke,
    summarizer: Invoke | None = None,
    threshold: int = 100_000,
    keep_recent: int = 8,
    *,
    counter: Counter | None = None,
) -> SummarizingInvoke:
    """G that condenses old turns into notes once the history passes ``threshold`` tokens
    (docs/components.md).

    >>> from four import scripted_invoke, User, Assistant
    >>> G = summarizing_invoke(scripted_invoke(["reply"]), scripted_invoke(["notes"]),
    ...                        threshold=4, keep_recent=2, counter=len)
    >>> G([User("task"), Assistant("a"), User("b"), Assistant("c"), User("d")]).unwrap().content
    'reply'
    """
    where = "summarizing_invoke"
    check.component(where, "G", G, _G)
    if summarizer is not None:
        check.component(where, "summarizer", summarizer, _G)
    check.count(where, "threshold", threshold, minimum=1)
    check.count(where, "keep_recent", keep_recent, minimum=0)
    if counter is not None:
        check.component(where, "counter", counter, "a function: messages -> tokens")
    return SummarizingInvoke(G, summarizer, threshold, keep_recent, counter)


_G = "a G (a function: history -> Result[Reply, ModelError])"
