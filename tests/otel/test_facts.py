"""With content, only the messages new since a run's last model call cross to the
sender; the sender still shows each call the whole history it was sent, and a call whose
facts were lost leaves out only the messages it brought."""

from __future__ import annotations

import json
from collections.abc import Sequence

from four import regex_parse, run, scripted_invoke
from four.otel import OtelWatch
from four.otel._facts import Facts, Maker
from four.otel._sidecar import Sidecar
from four.types import Message, Outcome
from tests._doubles import FakeEnv


class Kept(Sidecar):
    """A sender that keeps what the watch puts (never started)."""

    def __init__(self) -> None:
        super().__init__("nowhere", 0, 0.0)
        self.kept: list[Facts] = []

    def put(self, span: object, counts: object = None) -> None:
        assert isinstance(span, tuple)
        self.kept.append(span)


def _keep(messages: Sequence[Message], outcome: Outcome) -> list[Message]:
    return list(messages)


def _inputs(maker: Maker, facts: list[Facts]) -> list[int]:
    """How many messages each chat span shows as sent to the model."""
    shown = []
    for each in facts:
        span = maker.span(each)
        if each[0] == "chat":
            system = span.attributes.get("gen_ai.system_instructions")
            inputs = json.loads(str(span.attributes["gen_ai.input.messages"]))
            shown.append(len(inputs) + (1 if system else 0))
    return shown


def test_each_call_shows_the_history_it_was_sent_from_the_new_messages_only() -> None:
    sender = Kept()
    G = scripted_invoke(["```bash\necho 1\n```", "```bash\necho 2\n```", "done"])
    history = run(G, regex_parse(finish_on_plain_text=True), FakeEnv(), _keep, system="s",
                  prompt="go", watch=OtelWatch(sender, content=True))  # fmt: skip
    chats = [f for f in sender.kept if f[0] == "chat"]
    new = [len(f[13][1]) for f in chats]  # type: ignore[index]
    assert new == [2, 2, 2]  # system and prompt; then a reply and its answer, each call
    assert _inputs(Maker(), sender.kept) == [2, 4, 6]  # all that was sent, each call
    assert len(history) == 7

    lost = [f for f in sender.kept if f is not chats[1]]  # the second call's facts lost
    assert _inputs(Maker(), lost) == [2, 4]  # the third call: all but what the second brought


class Broken(Sidecar):
    """A sender with a bug: every put raises."""

    def __init__(self) -> None:
        super().__init__("nowhere", 0, 0.0)

    def put(self, span: object, counts: object = None) -> None:
        raise RuntimeError("a bug")


def test_a_sender_that_fails_loses_spans_never_the_run() -> None:
    sender = Broken()
    G = scripted_invoke(["```bash\necho 1\n```", "done"])
    watch = OtelWatch(sender)
    history = run(G, regex_parse(finish_on_plain_text=True), FakeEnv(), _keep, prompt="go",
                  watch=watch)  # fmt: skip
    assert len(history) == 5  # the run went on to its end
    assert sender.failed == 4  # two model calls, an action, the run: each lost, counted
    record = watch.record()["otel"]
    assert isinstance(record, dict)
    steps = record["steps"]  # the trajectory keeps each step all the same
    assert isinstance(steps, dict) and steps["op"] == "ctc" and steps["at"] == [2, 3, 4]
