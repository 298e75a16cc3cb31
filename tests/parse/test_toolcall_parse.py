"""toolcall_parse: one result per call, never an exception, never a dropped call."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from four import Action, Assistant, FormatError, Rejected, Submitted, ToolCall
from four.execute import EXIT_SIGNAL
from four.parse import toolcall_parse

Parsed = Result[Sequence[Action | Rejected], FormatError | Submitted]


def parse(*calls: ToolCall, content: str = "", finish_on_plain_text: bool = False) -> Parsed:
    parser = toolcall_parse(finish_on_plain_text=finish_on_plain_text)
    return parser(Assistant(content, tool_calls=calls))


def items(*calls: ToolCall) -> Sequence[Action | Rejected]:
    result = parse(*calls)
    assert isinstance(result, Success), result
    return list(result.unwrap())


def rejection(call: ToolCall) -> str:
    [item] = items(call)
    assert isinstance(item, Rejected), item
    assert item.call_id == call.id
    return item.error


def test_good_call_is_an_action_with_its_id() -> None:
    call = ToolCall("call_abc", "bash", '{"command": "ls -la"}')
    assert items(call) == [Action("ls -la", "call_abc")]


def test_extra_keys_are_ignored() -> None:
    assert items(ToolCall("c", "bash", '{"command": "ls", "timeout": 5}')) == [Action("ls", "c")]


def test_unknown_tool_gets_an_error_for_its_id() -> None:
    error = rejection(ToolCall("c1", "python", '{"code": "print(1)"}'))
    assert "no tool named 'python'" in error and '{"command": "<shell command>"}' in error


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("ls -la", "not valid JSON"),
        ('{"command": "ls"', "not valid JSON"),
        ("", "not valid JSON"),
        ("[1]", "not a list"),
        ("1", "not a number"),
        ("null", "not null"),
        ("true", "not a boolean"),
        ('{"cmd": "ls"}', "no 'command' key (keys: 'cmd')"),
        ("{}", "keys: none"),
        ('{"command": 5}', "'command' is a number"),
        ('{"command": ["ls"]}', "'command' is a list"),
        ('{"command": "  "}', "not a non-empty string"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_malformed_arguments_get_an_error_for_their_id(arguments: str, expected: str) -> None:
    error = rejection(ToolCall("c9", "bash", arguments))
    assert expected in error, error
    assert "Nothing was run" in error


@pytest.mark.parametrize("arguments", [{"command": "ls"}, None, ["ls"]])
def test_arguments_that_are_not_json_text_are_refused_when_the_call_is_made(
    arguments: object,
) -> None:
    """A client that decoded the arguments gives them back as JSON text (``json.dumps``):
    the call is refused where it is made, naming ``arguments``, not read a second way."""
    with pytest.raises(TypeError, match=r"^ToolCall: arguments=.*: give a str"):
        ToolCall("c", "bash", arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize("arguments", [{"command": "ls"}, None, b'{"command": "ls"}'])
def test_reading_arguments_takes_json_text_only_and_names_anything_else(
    arguments: object,
) -> None:
    """JSON text is the contract (what ``ToolCall.arguments`` holds): decoded arguments
    are not read a second way but named as the caller's mistake, in one line."""
    from four.parse._toolcall import arguments_of

    assert arguments_of('{"command": "ls"}') == {"command": "ls"}
    with pytest.raises(TypeError, match=r"^arguments_of: text=.*: give a str \(not an? \w+\)$"):
        arguments_of(arguments)  # type: ignore[arg-type]


def test_json_encoded_twice_is_unwrapped_once() -> None:
    assert items(ToolCall("c", "bash", '"{\\"command\\": \\"ls\\"}"')) == [Action("ls", "c")]


def test_every_call_of_a_turn_gets_exactly_one_item_in_order() -> None:
    calls = (
        ToolCall("a", "bash", '{"command": "ls"}'),
        ToolCall("b", "str_replace_editor", "{}"),
        ToolCall("c", "bash", "not json"),
        ToolCall("d", "bash", '{"command": "pwd"}'),
    )
    result = items(*calls)
    assert [getattr(i, "call_id", None) for i in result] == ["a", "b", "c", "d"]
    assert [type(i) for i in result] == [Action, Rejected, Rejected, Action]


def test_text_beside_tool_calls_is_ignored() -> None:
    result = parse(ToolCall("c", "bash", '{"command": "ls"}'), content=f"thinking\n{EXIT_SIGNAL}")
    assert result == Success([Action("ls", "c")])


def test_no_tool_call_is_a_format_error_naming_the_tool() -> None:
    result = parse(content="I think the task is done now.")
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, FormatError)
    assert "no tool call" in error.feedback and "`bash` tool" in error.feedback
    assert EXIT_SIGNAL in error.feedback


def test_exit_signal_in_text_submits() -> None:
    assert parse(content=f"{EXIT_SIGNAL}\nthe patch") == Failure(Submitted("the patch"))


def test_plain_text_finishes_only_when_asked_and_never_when_empty() -> None:
    assert parse(content="Done.", finish_on_plain_text=True) == Failure(Submitted("Done."))
    for content in ("", "  \n"):
        result = parse(content=content, finish_on_plain_text=True)
        assert isinstance(result, Failure) and isinstance(result.failure(), FormatError)
        assert isinstance(result.failure(), FormatError)


def test_reasoning_is_not_read() -> None:
    result = toolcall_parse()(Assistant("", reasoning=EXIT_SIGNAL))
    assert isinstance(result, Failure) and isinstance(result.failure(), FormatError)


def test_custom_tool_and_argument_names() -> None:
    p = toolcall_parse("shell", "cmd")
    assert p(Assistant("", (ToolCall("x", "shell", '{"cmd": "ls"}'),))) == Success(
        [Action("ls", "x")]
    )


_calls = st.lists(
    st.builds(
        ToolCall,
        st.text(min_size=1, max_size=8),
        st.sampled_from(["bash", "python", ""]),
        st.one_of(
            st.text(max_size=40),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["command", "x"]), inner, max_size=2)
                ),
                max_leaves=6,
            ).map(lambda v: __import__("json").dumps(v)),
        ),
    ),
    min_size=1,
    max_size=4,
)


@given(_calls)
def test_any_calls_give_one_item_per_call_with_its_id(calls: list[ToolCall]) -> None:
    result = items(*calls)
    assert len(result) == len(calls)
    for call, item in zip(calls, result, strict=True):
        assert item.call_id == call.id
        if isinstance(item, Action):
            assert call.name == "bash" and item.command.strip()
