"""The parsers' reply grammars: every string a grammar allows parses (never a format
error), for each domain's V1 and its settings; the grammar follows the parser's settings;
GBNF is written so that no character is special."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from returns.result import Failure, Success

from four import Assistant
from four._grammar import WHITESPACE
from four.domains.notebook._parse import cell_parse
from four.domains.plan import plan_parse
from four.parse import edit_parse, regex_parse
from four.parse._edits import EditAction
from four.parse._shapes import PROSE_CHARS, without
from four.testing import check_grammar
from four.testing.strategies import grammar_texts
from four.types import (
    Alt,
    Chars,
    Constrained,
    FormatError,
    Grammar,
    Lit,
    Ref,
    Rep,
    Seq,
    Submitted,
)

PARSERS = {
    "bash": regex_parse(),
    "bash, one action": regex_parse(one_action=True),
    "bash, sh only, own signal": regex_parse(("sh",), exit_signal="I_AM_DONE"),
    "bash, upper-case tag": regex_parse(("BASH", "sh")),
    "edits": edit_parse(),
    "edits, own signal": edit_parse(exit_signal="DONE_DONE"),
    "edits, console": edit_parse(("console",)),
    "edits, sh": edit_parse(("sh", "console")),
    "bash, console": regex_parse(("console", "zsh")),
    "notebook": cell_parse(),
    "notebook, no markdown": cell_parse(markdown=False),
    "plan": plan_parse(),
}


@pytest.mark.parametrize("name", PARSERS)
def test_every_reply_a_grammar_allows_parses(name: str) -> None:
    V1 = PARSERS[name]
    assert isinstance(V1, Constrained)
    check_grammar(V1, max_examples=400, seed=0)


def test_the_bash_grammar_reaches_both_ends_a_thought_and_a_block_or_the_signal() -> None:
    V1 = regex_parse()
    seen: set[str] = set()

    @settings(max_examples=300, database=None)
    @given(grammar_texts(V1.grammar()))
    def draw(text: str) -> None:
        result = V1(Assistant(text))
        seen.add("actions" if isinstance(result, Success) else type(result.failure()).__name__)
        if isinstance(result, Success):
            assert len(result.unwrap()) == 1  # one block, as the system prompt asks

    draw()
    assert seen == {"actions", "Submitted"}


@pytest.mark.parametrize("name", ["bash", "edits", "notebook"])
def test_a_thought_is_short_and_never_writes_a_command_s_output(name: str) -> None:
    """Lines of prose hold at most PROSE_CHARS characters (the action comes before the
    token limit) and never start with ``<`` (``<returncode>0</returncode>``: the built-in
    model wrote the output itself, then believed its work done) nor with a fence, though
    they may with inline code (`x`)."""
    rule = dict(PARSERS[name].grammar().rules)  # type: ignore[attr-defined]
    line = rule["sentence" if name == "edits" else "prose"]
    assert isinstance(line, Seq) and isinstance(line.items[0], Alt)
    plain, inline = line.items[0].options
    assert isinstance(plain, Chars) and plain.negated and "<" in plain.chars
    assert "`" in plain.chars and "~" in plain.chars
    assert inline == Seq((Lit("`"), Chars(WHITESPACE + "`", negated=True)))
    rest = line.items[1]
    assert isinstance(rest, Rep) and rest.high is not None
    assert 1 + rest.high + (1 if name == "edits" else 0) == PROSE_CHARS


@pytest.mark.parametrize("name", PARSERS)
def test_a_reply_the_grammar_allows_starts_with_a_line_of_thought(name: str) -> None:
    """Every prompt asks for a thought before the action; the built-in model, left free,
    opened its replies with the fence and wrote the first command that came to it."""
    V1 = PARSERS[name]
    assert isinstance(V1, Constrained)
    grammar = V1.grammar()
    signal = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

    @settings(max_examples=200, database=None)
    @given(grammar_texts(grammar))
    def draw(text: str) -> None:
        first, _, rest = text.partition("\n")
        assert first.strip() and rest  # a line of prose, then the rest of the reply
        assert not first.startswith(("```", "<")) and signal not in first

    draw()


def test_an_edit_reply_the_grammar_allows_writes_files_then_runs_one_command() -> None:
    V1 = edit_parse()

    @settings(max_examples=300, database=None)
    @given(grammar_texts(V1.grammar()))
    def draw(text: str) -> None:
        result = V1(Assistant(text))
        if isinstance(result, Success):
            actions = result.unwrap()
            edits = [a for a in actions if isinstance(a, EditAction)]
            assert len(edits) <= 1 and len(actions) - len(edits) <= 1
            assert not edits or actions[0] is edits[0]
        else:
            assert isinstance(result.failure(), Submitted)

    draw()


def test_what_the_parsers_refuse_the_grammars_do_not_allow() -> None:
    # Replies each parser reads as a format error: the grammar is not wider than it.
    gbnf = regex_parse().grammar().gbnf()
    assert "prose" in gbnf and "```bash" not in gbnf  # escaped: no character is special
    sig = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    for bad in (f"```bash\n{sig}\n```", f"```bash\nls\necho {sig}\n```", "```bash\n\n```"):
        assert isinstance(regex_parse()(Assistant(bad)).failure(), FormatError)
    rules = dict(regex_parse().grammar().rules)
    # The line after the block's first holds no signal: the automaton cannot finish it.
    assert "command-body-line" in rules and "no-signal-36" in rules and "no-signal-37" not in rules


def test_a_line_without_a_word_is_exactly_the_lines_that_do_not_hold_it() -> None:
    word = "abab"
    grammar = Grammar((("root", Ref("w")), *without("w", word, " ")))

    @settings(max_examples=300, database=None)
    @given(grammar_texts(grammar, more=12))
    def draw(text: str) -> None:
        assert word not in text and text and text[0] != " " and "\n" not in text

    draw()


def test_a_grammar_follows_its_parsers_settings() -> None:
    assert '"I\\x5FAM\\x5FDONE"' in regex_parse(("sh",), exit_signal="I_AM_DONE").grammar().gbnf()
    assert '"\\x60\\x60\\x60sh\\x0A"' in regex_parse(("sh",)).grammar().gbnf()
    # A console block runs only its `$ ` lines, which may be empty: never offered.
    assert "command" not in dict(edit_parse(("console",)).grammar().rules)
    assert "command" not in dict(regex_parse(("console",)).grammar().rules)
    assert '"\\x60\\x60\\x60zsh\\x0A"' in regex_parse(("console", "zsh")).grammar().gbnf()
    assert '"\\x60\\x60\\x60sh\\x0A"' in edit_parse(("sh", "console")).grammar().gbnf()


def test_gbnf_escapes_every_character_but_letters_digits_and_space() -> None:
    grammar = Grammar(
        (
            ("root", Seq((Lit('a "b"\\\n]'), Ref("x-1")))),
            ("x-1", Alt((Rep(Chars("^-]\\", negated=True), 2, 5), Rep(Lit("é"), 1), Lit("😀")))),
        )
    )
    assert grammar.gbnf() == (
        'root ::= "a \\x22b\\x22\\x5C\\x0A\\x5D" x-1\n'
        'x-1 ::= [^\\x5E\\x2D\\x5D\\x5C]{2,5} | "\\xE9"+ | "\\U0001F600"\n'
    )


def test_a_grammar_that_is_not_one_says_why() -> None:
    with pytest.raises(ValueError, match="first rule must be called root"):
        Grammar((("start", Lit("a")),))
    with pytest.raises(ValueError, match="refers to y, which is not a rule"):
        Grammar((("root", Ref("y")),))
    with pytest.raises(ValueError, match="rule name 'Bad_name'"):
        Grammar((("root", Lit("a")), ("Bad_name", Lit("b"))))
    with pytest.raises(ValueError, match="named twice"):
        Grammar((("root", Lit("a")), ("root", Lit("b"))))


def test_whitespace_is_what_python_strips() -> None:
    assert "".join(chr(c) for c in range(0x110000) if chr(c).isspace()) == WHITESPACE


def test_a_parser_whose_grammar_allows_a_format_error_breaks_the_law() -> None:
    from four.testing import LawBroken

    class Loose:
        def grammar(self) -> Grammar:
            return Grammar((("root", Rep(Chars("ab"), 0, 3)),))

        def __call__(self, reply: object) -> Failure[FormatError]:
            return Failure(FormatError("no"))

    with pytest.raises(LawBroken, match="format error"):
        check_grammar(Loose(), max_examples=20, seed=0)


@pytest.mark.parametrize("name", ["bash", "edits", "notebook"])
def test_a_block_holds_at_most_two_blank_lines_in_a_row_and_no_deep_indent(name: str) -> None:
    """The built-in model at temperature 0 once filled a block with blank lines until its
    reply was cut off at the token limit (a format error): the grammar allows no such run."""
    V1 = PARSERS[name]
    assert isinstance(V1, Constrained)

    @settings(max_examples=300, database=None)
    @given(grammar_texts(V1.grammar(), more=12))
    def draw(text: str) -> None:
        blank = [not line.strip() for line in text.split("\n")[:-1]]
        assert not any(all(blank[i : i + 3]) for i in range(len(blank) - 2)), text
        assert all(len(line) - len(line.lstrip(" \t")) <= 48 for line in text.split("\n"))

    draw()
