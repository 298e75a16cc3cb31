"""Pieces of the parsers' reply grammars: prose, fenced blocks, the exit signal.

Each piece is a list of named rules (see ``four._grammar``) that a parser's ``grammar()``
puts together with its own settings. The pieces are narrower than what the parsers
read, on purpose: a body line never starts with a backtick, so the only fence line in a
block is the one that closes it; a prose line never starts a fence.
"""

from __future__ import annotations

from four._grammar import WHITESPACE, Alt, Chars, Expr, Lit, Ref, Rep, Seq

Rules = list[tuple[str, Expr]]

NEWLINE = Lit("\n")
REST = Rep(Chars("\n", negated=True))  # the rest of a line
INDENT = Rep(Chars(" \t"), 0, 48)
BLANKS = Rep(Seq((INDENT, NEWLINE)), 0, 2)
"""Blank lines in a row inside a block, at most: the built-in model at temperature 0 once
filled a block with blank lines up to the token limit, and its reply was cut off."""


def spaced(line: Expr) -> Expr:
    """Lines of ``line`` (each with its newline), with at most ``BLANKS`` blank lines
    before, between and after them."""
    return Seq((BLANKS, Rep(Seq((line, BLANKS)))))


def seq(*items: Expr) -> Seq:
    return Seq(items)


def alt(*options: Expr) -> Alt:
    return Alt(options)


def opt(expr: Expr) -> Rep:
    return Rep(expr, 0, 1)


PROSE_CHARS = 160
"""Characters of a line of prose, at most: the thought before the action stays short,
so a reply is not cut off at the token limit before its action (the built-in model
sampling at 0.7 wrote lines of 1,000 characters, and its attempt ended
``repeated_format_error``)."""


def prose(name: str = "prose", end: str = "") -> Rules:
    """A line of prose and its newline: it starts with no blank, no fence (inline code's
    one backtick, not two: it never opens a block) and no ``<`` (the built-in model wrote a
    command's output itself, ``<returncode>0</returncode>``, then believed its work done),
    holds at most ``PROSE_CHARS`` characters, and ends with ``end`` (a sentence's ``.``,
    so that no parser takes it for a file's path)."""
    # Inline code may open it (`x`), a fence may not: the model, its line cut off at
    # PROSE_CHARS after "use the", wrote "`sys.argv`" on the next line and was held to
    # a fence, its prose run as commands.
    inline = Seq((Lit("`"), Chars(WHITESPACE + "`", negated=True)))
    first = Alt((Chars(WHITESPACE + "`~<", negated=True), inline))
    rest = Rep(Chars("\n", negated=True), 0, PROSE_CHARS - 1 - len(end))
    line = Seq((first, rest, Lit(end), NEWLINE)) if end else Seq((first, rest, NEWLINE))
    return [(name, line)]


def thought(lines: int, line: str = "prose") -> Expr:
    """A thought: ``THOUGHT_LEAST`` to ``lines`` lines of the rule ``line``."""
    return Rep(Ref(line), THOUGHT_LEAST, lines)


def root(exit_signal: str, *ends: Expr, line: str = "prose") -> tuple[str, Expr]:
    """``root``: a short thought (lines of the rule ``line``, at least one), then one of
    ``ends`` or the exit signal alone."""
    signal = [Lit(exit_signal)] if exit_signal else []
    return ("root", Seq((thought(THOUGHT_LINES, line), Alt((*ends, *signal)))))


def fenced(tag: str, body: str) -> Expr:
    """A fenced block tagged ``tag`` holding the rule ``body`` (lines ending in newlines)."""
    return Seq((Lit(f"```{tag}\n"), Ref(body), Lit("```")))


def body(name: str, line_start: Expr, first: Expr | None = None) -> Rules:
    """The lines of a block, at least one of them not blank: a line is blank or an indent
    and ``line_start`` (which matches the rest of the line, from a character that is not a
    blank nor a backtick, without its newline). ``first``: another form the first line
    that is not blank may take (with its newline)."""
    content = f"{name}-line"
    opening: Expr = Ref(content) if first is None else Alt((first, Ref(content)))
    return [
        (name, Seq((BLANKS, opening, spaced(Ref(content))))),
        (content, Seq((INDENT, line_start, NEWLINE))),
    ]


def command(tag: str, exit_signal: str) -> Rules:
    """``command``: one fenced block of shell commands tagged ``tag``. No line of it holds
    ``exit_signal`` (a line that is the signal, or echoes it after other commands, is a
    format error), but the first may be ``echo SIGNAL``: the way to finish."""
    block = ("command", fenced(tag, "command-body"))
    if not exit_signal:
        return [block, *body("command-body", plain_line())]
    finish = Lit(f"echo {exit_signal}\n")
    signal_free = without("no-signal", exit_signal, WHITESPACE + "`")
    return [block, *body("command-body", Ref("no-signal"), finish), *signal_free]


def plain_line() -> Expr:
    """The rest of a line from a character that is neither a blank nor a backtick."""
    return Seq((Chars(WHITESPACE + "`", negated=True), REST))


def without(name: str, word: str, first_not: str) -> Rules:
    """Rules for the rest of a line (no newline) that never holds ``word``, whose first
    character is not one of ``first_not``: ``name`` is the start; ``name-K`` the rest once
    the line's last K characters are the first K of ``word`` (a Knuth-Morris-Pratt
    automaton, one rule a state)."""
    size = len(word)
    letters = sorted(set(word))

    def step(state: int, c: str) -> int:
        seen = word[:state] + c
        return next(k for k in range(min(len(seen), size), -1, -1) if seen.endswith(word[:k]))

    def moves(state: int, excluded: str) -> list[Expr]:
        targets: dict[int, str] = {}
        for c in letters:
            if c not in excluded and (to := step(state, c)) < size:
                targets[to] = targets.get(to, "") + c
        options: list[Expr] = [
            Seq((Chars(chars), Ref(f"{name}-{to}"))) for to, chars in sorted(targets.items())
        ]
        others = "".join(sorted(set(excluded + "\n" + "".join(letters))))
        options.append(Seq((Chars(others, negated=True), Ref(f"{name}-0"))))
        return options

    rules: Rules = [(name, Alt(tuple(moves(0, first_not))))]
    for state in range(size):
        rules.append((f"{name}-{state}", Rep(Alt(tuple(moves(state, ""))), 0, 1)))
    return rules


THOUGHT_LINES = 3
"""Lines of prose before the action, at most: a short thought, and room left for it."""
THOUGHT_LEAST = 1
"""Lines of prose before the action, at least: every prompt asks for a thought first, and
the built-in model left it out (its first token a fence) and wrote the first command that
came to it. Held to one line, it says what it sees and will do, and solves more: see
docs/search.md for the tasks bench with and without it."""


def shell_tag(tags: tuple[str, ...]) -> str | None:
    """The tag a grammar's command block carries: ``bash`` if the parser runs it, else
    its first tag but ``console`` (whose ``$`` lines alone run, so a block of them may
    be empty); None if there is none."""
    lowered = [t.lower() for t in tags]
    return next((t for t in ("bash", *lowered) if t in lowered and t != "console"), None)
