"""The record: what a trajectory file holds, as typed values (msgspec Structs).

One definition serves both ways: the writer turns a message into its record and the
record into JSON values (``message_json``), which the seal encodes canonically
(``four.trajectory._seal``); the reader decodes a file straight into these types
(``msgspec.json.decode``), so a value of the wrong type is refused with the field's
path, and every reader gets typed fields instead of dictionaries. ``docs/record.md``
describes the format.

Messages keep the OpenAI chat shape plus our keys, and read mini-swe-agent's too; keys
of other tools are let through (ignored). The records of our own stream and document
(``Start``, ``Line``, ``Beat``, ``End``, ``Document``) refuse unknown fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import msgspec
from msgspec import UNSET, Struct, UnsetType

from four._types import (
    Assistant,
    Checked,
    CycleBreak,
    Message,
    Sampling,
    System,
    ToolCall,
    ToolResult,
    Usage,
    User,
    finish_reason,
    tool_result_kind,
    user_kind,
)

if TYPE_CHECKING:
    from four._types import JSON as Value
else:  # msgspec reads the annotations at run time; any JSON value is its ``object``
    Value = object

# --- messages ----------------------------------------------------------------------------


class Part(Struct, frozen=True):
    """A part of a content list (other tools' shape); only its text is read."""

    text: str = ""


Content = str | list[Part] | None


class Function(Struct, frozen=True):
    name: str | None = None
    arguments: str | dict[str, Value] | None = None


class Call(Struct, frozen=True):
    function: Function
    id: str | None = None
    type: str = "function"


class UsageRecord(Struct, Checked, frozen=True):
    """A reply's (or a run's) tokens and cost; all five fields are always written."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    calls: int = 1
    cost_unknown_calls: int = 0

    def usage(self) -> Usage:
        return Usage(
            self.prompt_tokens,
            self.completion_tokens,
            self.cost,
            self.calls,
            self.cost_unknown_calls,
        )


def usage_record(usage: Usage) -> UsageRecord:
    return UsageRecord(
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.cost,
        usage.calls,
        usage.cost_unknown_calls,
    )


def usage_json(usage: Usage) -> dict[str, Value]:
    """A usage as JSON values.

    >>> usage_json(Usage(1, 2, None))
    {'prompt_tokens': 1, 'completion_tokens': 2, 'cost': None, 'calls': 1, 'cost_unknown_calls': 1}
    """
    data: dict[str, Value] = msgspec.to_builtins(usage_record(usage))
    return data


class CycleBreakRecord(Struct, frozen=True):
    """What a cycle breaker changed in a call, stored with its reply."""

    reason: str = ""
    repeats: int = 0
    dropped: tuple[int, ...] = ()
    temperature: float | None = None
    seed: int | None = None
    discarded: int = 0


class Extra(Struct, frozen=True):
    """mini-swe-agent keeps a command's return code here."""

    returncode: int | None = None


class SystemRecord(Struct, frozen=True, tag_field="role", tag="system"):
    content: Content = None


class UserRecord(Struct, frozen=True, omit_defaults=True, tag_field="role", tag="user"):
    content: Content = None
    kind: str = "text"
    returncode: int | None = None
    command: str | None = None
    extra: Extra | None = None


class ToolRecord(Struct, frozen=True, omit_defaults=True, tag_field="role", tag="tool"):
    # Always written (UNSET only when read from a file without them).
    tool_call_id: str | UnsetType | None = UNSET
    name: str | UnsetType | None = UNSET
    kind: str | UnsetType | None = UNSET
    content: Content = None
    returncode: int | None = None
    command: str | None = None
    extra: Extra | None = None


class AssistantRecord(Struct, frozen=True, omit_defaults=True, tag_field="role", tag="assistant"):
    content: Content = None
    tool_calls: tuple[Call, ...] | None = None
    reasoning: str | None = None
    reasoning_content: str | None = None  # other tools' name for it
    thinking_blocks: tuple[dict[str, Value], ...] | None = None
    finish_reason: str | UnsetType | None = UNSET  # always written
    usage: UsageRecord | None = None
    model: str | None = None
    cycle_break: CycleBreakRecord | None = None


class ExitRecord(Struct, frozen=True, tag_field="role", tag="exit"):
    """mini-swe-agent's last entry: no message."""

    content: Content = None


MessageRecord = SystemRecord | UserRecord | ToolRecord | AssistantRecord | ExitRecord


def message_record(message: Message) -> MessageRecord:
    """The record of a message, as it is written.

    >>> message_json(User("hi"))
    {'role': 'user', 'content': 'hi'}
    """
    if isinstance(message, Assistant):
        change = message.cycle_break
        sampling = change.sampling if change is not None else None
        return AssistantRecord(
            message.content,
            tuple(Call(Function(c.name, c.arguments), c.id) for c in message.tool_calls) or None,
            message.reasoning or None,
            None,
            tuple(dict(b) for b in message.thinking) or None,
            message.finish_reason,
            usage_record(message.usage) if message.usage is not None else None,
            message.model or None,
            None
            if change is None
            else CycleBreakRecord(
                change.reason,
                change.repeats,
                change.dropped,
                None if sampling is None else sampling.temperature,
                None if sampling is None else sampling.seed,
                change.discarded,
            ),
        )
    if isinstance(message, ToolResult):
        return ToolRecord(
            message.tool_call_id,
            message.name,
            message.kind,
            message.content,
            message.returncode,
            message.command,
        )
    if isinstance(message, User):
        return UserRecord(message.content, message.kind, message.returncode, message.command)
    return SystemRecord(message.content)


def message_json(message: Message) -> dict[str, Value]:
    """A message as JSON values (what the seal encodes and the files hold)."""
    data: dict[str, Value] = msgspec.to_builtins(message_record(message))
    return data


def message_from_json(data: Mapping[str, Value]) -> Message | None:
    """``message_of`` a message read as JSON values (a ValueError if it is none).

    >>> message_from_json({"role": "user", "content": "hi"})
    User(content='hi', kind='text', returncode=None, command=None)
    """
    return message_of(msgspec.convert(data, MessageRecord))


def message_of(record: MessageRecord) -> Message | None:
    """The message a record holds; None for mini-swe-agent's ``exit``."""
    content = _text(record.content)
    if isinstance(record, SystemRecord):
        return System(content)
    if isinstance(record, ExitRecord):
        return None
    if isinstance(record, AssistantRecord):
        return _assistant(record, content)
    code = record.returncode
    if code is None and record.extra is not None:
        code = record.extra.returncode
    if isinstance(record, UserRecord):
        return User(content, user_kind(record.kind), code, record.command)
    return ToolResult(
        record.tool_call_id or "",
        content,
        record.name or "bash",
        tool_result_kind(record.kind),
        code,
        record.command,
    )


def _assistant(record: AssistantRecord, content: str) -> Assistant:
    change = record.cycle_break
    finish = "stop" if isinstance(record.finish_reason, UnsetType) else record.finish_reason
    return Assistant(
        content,
        tuple(_call(c) for c in record.tool_calls or ()),
        record.reasoning or record.reasoning_content or "",
        record.thinking_blocks or (),
        finish_reason(finish),
        record.usage.usage() if record.usage is not None else None,
        record.model or "",
        None
        if change is None
        else CycleBreak(
            change.reason,
            change.repeats,
            change.dropped,
            Sampling(change.temperature, change.seed)
            if change.temperature is not None or change.seed is not None
            else None,
            change.discarded,
        ),
    )


def _call(call: Call) -> ToolCall:
    arguments = call.function.arguments
    text = arguments if isinstance(arguments, str) else msgspec.json.encode(arguments).decode()
    return ToolCall(call.id or "", call.function.name or "", "" if arguments is None else text)


def _text(content: Content) -> str:
    if isinstance(content, str):
        return content
    return "" if content is None else "".join(part.text for part in content)


# --- a run: its settings, its figures, how it ended ------------------------------------


class Info(Struct, Checked, frozen=True, kw_only=True):
    """A run's settings (ours), or what mini-swe-agent's ``info`` holds."""

    components: dict[str, Value] = {}
    max_steps: int = 0
    max_format_errors: int = 0
    started_at: float | None = None
    resumed_from: int = 0
    driver: dict[str, Value] | None = None
    # mini-swe-agent's
    exit_status: str | int | None = None
    submission: str | None = None
    model_stats: dict[str, Value] = {}
    config: dict[str, Value] = {}

    @property
    def settings(self) -> dict[str, Value]:
        """The settings ``four run`` recorded (``components.cli``; empty if none)."""
        cli = self.components.get("cli")
        return cli if isinstance(cli, dict) else {}


class Verdict(Struct, Checked, frozen=True, kw_only=True, omit_defaults=True):
    """One evaluation of a check, in the order they came (``stats.verdicts.log``)."""

    verdict: str
    action: str
    slot: str | None = None
    reason: str | None = None
    needed: str | None = None
    dependency: Value = None
    judged_at_end: Value = None
    shown: str | None = None  # what the feedback level let be seen (the otel explanation)


class Verdicts(Struct, Checked, frozen=True, kw_only=True):
    """A verified run's verdicts: the controller's config, its receipts (the
    ``four.quaternary.receipts`` document) and their head, the log, the slots' text."""

    config: dict[str, Value] = {}
    initial_rank: int = 0
    evaluations: int = 0
    head: str | None = None
    receipts: dict[str, Value] = {}
    log: tuple[Verdict, ...] = ()
    slots: dict[str, str] = {}
    judged_at_end: Value = None


class Stats(Struct, Checked, frozen=True, kw_only=True):
    """A run's figures: steps, usage, times; a verified run's verdicts; what an artifact
    recorder added (its record under its key, and ``artifacts``): this library's
    domains' as fields, any other key in ``extra`` (``stats_of`` reads them)."""

    steps: int = 0
    format_errors: int = 0
    usage: UsageRecord = UsageRecord(calls=0)
    started_at: float | None = None
    ended_at: float | None = None
    wall_time: float | None = None
    verdicts: Verdicts | None = None
    files: dict[str, Value] | None = None  # the python domain's
    tool: dict[str, Value] | None = None  # the cli domain's
    notebook: dict[str, Value] | None = None
    launch: dict[str, Value] | None = None  # the plan domain's
    artifacts: dict[str, str] | None = None  # each file beside the run, with its digest
    extra: dict[str, Value] = {}  # not a key of the file: the keys it has beyond these


_FIELDS = frozenset(Stats.__struct_fields__) - {"extra"}


def stats_of(data: Mapping[str, Value]) -> Stats:
    """The stats a file holds (as JSON values), typed; their other keys (a recorder's
    own) in ``extra``. A value of the wrong type is a ``msgspec.ValidationError``.

    >>> stats_of({"steps": 2, "notes": {"n": 1}}).extra
    {'notes': {'n': 1}}
    """
    stats = msgspec.convert(data, Stats)
    if not data.keys() <= _FIELDS:
        extra = {k: v for k, v in data.items() if k not in _FIELDS}
        stats = msgspec.structs.replace(stats, extra=extra)
    return stats


class Detail(Struct, Checked, frozen=True, kw_only=True, omit_defaults=True):
    """How the run ended, field by field (``outcome_detail``): ``kind`` is the
    outcome's tag; the others are its fields (``output`` of a submission...)."""

    kind: str = ""
    output: str | None = None
    error: Value = None
    detail: Value = None
    reason: Value = None
    component: Value = None
    dependency: Value = None


# --- the files ---------------------------------------------------------------------------


class Head(Struct, frozen=True, kw_only=True):
    """A document without its messages (their text is skipped, not decoded)."""

    messages: msgspec.Raw
    format: str | None = None
    trajectory_format: str | None = None  # mini-swe-agent's
    outcome: str | None = None
    outcome_detail: Detail = Detail()
    info: Info = Info()
    stats: dict[str, Value] = {}  # stats_of
    stream: str | None = None
    timestamps: tuple[float, ...] = ()
    seal: dict[str, Value] | None = None


class Document(Head, frozen=True, kw_only=True):
    """A file holding a message list: our sealed document, or mini-swe-agent's v2."""

    messages: tuple[msgspec.Raw, ...]  # type: ignore[assignment]  # decoded one by one


class Start(Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", tag="start"):
    format: str
    info: Info = Info()
    seal: dict[str, Value] | None = None
    digest: str | None = None
    signature: str | None = None


class Line(Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", tag="message"):
    message: MessageRecord
    t: float | None = None
    digest: str | None = None
    signature: str | None = None


class Beat(Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", tag="beat"):
    t: float | None = None
    digest: str | None = None
    signature: str | None = None


class End(Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", tag="end"):
    outcome: str | None = None
    outcome_detail: Detail = Detail()
    stats: dict[str, Value] = {}  # stats_of
    stream: str | None = None
    digest: str | None = None
    signature: str | None = None


StreamRecord = Start | Line | Beat | End

FILE = msgspec.json.Decoder(Document | tuple[msgspec.Raw, ...])
"""Our document, mini-swe-agent's v2 document, or its v1 (a bare message list)."""
HEAD = msgspec.json.Decoder(Head)
MESSAGE = msgspec.json.Decoder(MessageRecord)
RECORD = msgspec.json.Decoder(StreamRecord)
Kind = Literal["document", "stream"]
