"""context_aware_invoke and summarizing_invoke: routing, windows, incremental notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from four import (
    Assistant,
    Finished,
    Message,
    ModelError,
    ModelErrorKind,
    System,
    ToolCall,
    ToolResult,
    Usage,
    User,
    run,
    scripted_invoke,
)
from four._types import unanswered
from four.invoke import (
    LitellmCounter,
    context_aware_invoke,
    litellm_invoke,
    litellm_toolcall_invoke,
    summarizing_invoke,
    to_chat,
)
from four.invoke._context import SUMMARY_PREFIX, head_length, model_of, window
from tests._doubles import FakeEnv
from tests._server import (
    CHAT,
    JSON,
    Answer,
    LoopbackServer,
    Request,
    call,
    chat,
    openai_history_problems,
)
from tests.invoke._support import bash_parse, histories, keep


def chars(messages: Sequence[Message]) -> int:
    """A toy counter (the real one is litellm's): characters of content."""
    return sum(len(m.content) + 1 for m in messages)


def valid(messages: Sequence[Message]) -> list[str]:
    return openai_history_problems(cast(list[JSON], to_chat(messages)))


# --- context_aware_invoke ---------------------------------------------------------


def test_routes_by_size() -> None:
    G = context_aware_invoke(
        scripted_invoke(["fast"] * 3), scripted_invoke(["large"] * 3), 3, counter=len
    )
    assert G([User("a")] * 3).unwrap().content == "fast"
    assert G([User("a")] * 4).unwrap().content == "large"


def test_window_keeps_head_once_and_starts_on_a_whole_turn() -> None:
    """The reference's defects: duplicated system, lost task, orphan tool result."""
    seen: list[Sequence[Message]] = []

    def large(messages: Sequence[Message]) -> Success[Assistant]:
        seen.append(messages)
        return Success(Assistant("ok"))

    history: list[Message] = [
        System("sys"),
        User("task"),
        Assistant("", (ToolCall("a", "bash", "{}"), ToolCall("b", "bash", "{}"))),
        ToolResult("a", "x" * 30),
        ToolResult("b", "y" * 30),
        Assistant("", (ToolCall("c", "bash", "{}"),)),
        ToolResult("c", "z"),
    ]

    def results(messages: Sequence[Message]) -> int:  # one per message, plus result text
        return len(messages) + sum(len(m.content) for m in messages if isinstance(m, ToolResult))

    G = context_aware_invoke(scripted_invoke([]), large, 10, large_limit=40, counter=results)
    assert isinstance(G(history), Success)
    sent = seen[0]
    assert sent[:2] == [System("sys"), User("task")]
    assert sum(isinstance(m, System) for m in sent) == 1
    assert not isinstance(sent[3], ToolResult)
    assert sent[-2:] == history[-2:]
    assert valid(sent) == []


def test_short_history_is_never_windowed_or_duplicated() -> None:
    history: list[Message] = [System("sys"), User("task")]
    assert window(history, chars, 1) == history


@given(histories(), st.integers(1, 400))
def test_window_is_always_a_valid_history_with_the_head(history: list[Message], limit: int) -> None:
    out = window(history, chars, limit)
    assert out[:2] == history[:2]
    assert sum(isinstance(m, System) for m in out) == 1
    assert valid(out) == []
    if out != history:  # head, a note of what is left out, then a tail of the history
        assert isinstance(out[2], User) and "left out" in out[2].content
        kept = out[3:]
        assert kept == history[len(history) - len(kept) :]


def test_litellm_counter_counts_tokens_not_characters() -> None:
    text = "hello " * 1000
    tokens = LitellmCounter("gpt-4o")([User(text)])
    assert 1000 <= tokens < 1100  # characters/4 would say 1500


def test_model_of_looks_through_wrappers() -> None:
    from four.invoke import budget_invoke, retry_invoke

    assert model_of(budget_invoke(retry_invoke(litellm_invoke("openai/x")))) == "openai/x"
    assert model_of(scripted_invoke([])) == ""


def test_context_aware_over_two_servers() -> None:
    """Real token counts pick the server; each request is a valid history."""
    with LoopbackServer() as fast, LoopbackServer() as large:
        fast.push(chat("$ echo " + "lorem ipsum " * 20))
        large.push(chat("$ submit big"))
        G = context_aware_invoke(
            litellm_invoke("openai/small", api_base=fast.url, api_key="x"),
            litellm_invoke("openai/big", api_base=large.url, api_key="x"),
            context_limit=60,
        )
        history, outcome = run(G, bash_parse, FakeEnv(), keep, prompt="short task")
        assert outcome == Finished("big")
        assert len(fast.requests) == 1 and len(large.requests) == 1
        for body in fast.bodies() + large.bodies():
            assert openai_history_problems(cast(list[JSON], body["messages"])) == []
        assert len(history) == 5


# --- summarizing_invoke -----------------------------------------------------------


class Recorder:
    """A G that records what it was sent and answers with a fixed reply."""

    def __init__(self, text: str, usage: Usage | None = None) -> None:
        self.text, self.usage = text, usage
        self.sent: list[list[Message]] = []

    def __call__(self, messages: Sequence[Message]) -> Success[Assistant]:
        self.sent.append(list(messages))
        return Success(Assistant(f"{self.text} {len(self.sent)}", usage=self.usage))


def grow(n: int) -> list[Message]:
    history: list[Message] = [System("sys"), User("task")]
    for i in range(n):
        history += [
            Assistant(f"step {i}", (ToolCall(f"c{i}", "bash", "{}"),)),
            ToolResult(f"c{i}", f"out {i}"),
        ]
    return history


def test_summarizes_incrementally_and_keeps_head_verbatim() -> None:
    G_inner, summarizer = Recorder("reply"), Recorder("notes")
    G = summarizing_invoke(G_inner, summarizer, threshold=8, keep_recent=2, counter=len)
    for n in range(1, 9):
        G(grow(n)).unwrap()
    prompts = [cast(User, s[1]).content for s in summarizer.sent]
    assert len(prompts) >= 2
    assert "step 0" in prompts[0] and "step 0" not in prompts[1]  # only what is new
    assert "notes 1" in prompts[1]  # with the notes so far
    for sent in G_inner.sent:
        assert sent[:2] == [System("sys"), User("task")]
        assert valid(sent) == []
    last = G_inner.sent[-1]
    assert isinstance(last[2], User) and last[2].content.startswith(SUMMARY_PREFIX)
    assert last[-2:] == grow(8)[-2:]


def test_below_threshold_nothing_changes() -> None:
    G_inner, summarizer = Recorder("reply"), Recorder("notes")
    G = summarizing_invoke(G_inner, summarizer, threshold=100, counter=len)
    G(grow(3))
    assert G_inner.sent == [grow(3)] and summarizer.sent == []


@given(histories(), st.integers(2, 30), st.integers(0, 6))
def test_summarized_requests_are_valid(history: list[Message], threshold: int, keep: int) -> None:
    G_inner = Recorder("r")
    G = summarizing_invoke(G_inner, Recorder("notes"), threshold, keep, counter=len)
    for end in range(2, len(history) + 1):
        if not unanswered(history[:end]):  # the loop calls G only once every call is answered
            G(history[:end])
    for sent in G_inner.sent:
        assert sent[:2] == history[:2]
        assert valid(sent) == []
        assert head_length(sent) == 2


def test_summarizer_usage_is_added_to_the_reply() -> None:
    G = summarizing_invoke(
        Recorder("reply", Usage(100, 10, 0.1)),
        Recorder("notes", Usage(50, 5, 0.05)),
        threshold=4,
        keep_recent=1,
        counter=len,
    )
    assert G(grow(3)).unwrap().usage == Usage(150, 15, 0.15000000000000002, 2)


def test_summarizer_failure_is_returned() -> None:
    broken = scripted_invoke([ModelError(ModelErrorKind.RATE_LIMIT, "429")])
    G = summarizing_invoke(Recorder("reply"), broken, threshold=4, keep_recent=1, counter=len)
    result = G(grow(3))
    assert isinstance(result, Failure)
    assert result.failure().kind is ModelErrorKind.RATE_LIMIT
    assert result.failure().message.startswith("summarizer: ")


def test_a_new_history_starts_over() -> None:
    G_inner, summarizer = Recorder("reply"), Recorder("notes")
    G = summarizing_invoke(G_inner, summarizer, threshold=4, keep_recent=1, counter=len)
    G(grow(3))
    other = [System("sys"), User("another task"), *grow(3)[2:]]
    G(other)
    assert "notes 1" not in cast(User, summarizer.sent[1][1]).content


def test_summarizing_run_over_http_sends_only_valid_histories(server: LoopbackServer) -> None:
    """The default summariser is the wrapped G; every request (replies and notes) is valid."""
    steps: list[int] = []

    def model(request: Request) -> Answer:
        messages = cast(list[dict[str, JSON]], request.json()["messages"])
        if "running notes" in str(messages[0]["content"]):
            return chat(f"notes {len(steps)}")
        steps.append(1)
        command = "submit ok" if len(steps) == 8 else f"echo {len(steps)}"
        return chat(None, [call(command=command)])

    server.default = model
    G = summarizing_invoke(
        litellm_toolcall_invoke("openai/m", api_base=server.url, api_key="x"),
        threshold=7,
        keep_recent=2,
        counter=len,
    )
    history, outcome = run(G, bash_parse, FakeEnv(), keep, system="sys", prompt="task")
    assert outcome == Finished("ok")
    bodies = server.bodies(CHAT)
    notes = [b for b in bodies if "running notes" in str(b["messages"])]
    assert len(notes) >= 2 and len(bodies) == 8 + len(notes)
    for body in bodies:
        assert openai_history_problems(cast(list[JSON], body["messages"])) == []
    last = cast(list[dict[str, JSON]], bodies[-1]["messages"])
    assert last[:2] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    assert str(last[2]["content"]).startswith(SUMMARY_PREFIX)
    calls = sum(m.usage.calls for m in history if isinstance(m, Assistant) and m.usage)
    assert calls == len(bodies)  # every summary call is counted in the run's usage
