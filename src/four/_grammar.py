"""Grammars of replies: a set of replies a V1 accepts, as a small tree of nodes that
``Grammar.gbnf()`` writes in llama.cpp's GBNF, for the built-in model (docs/search.md).

>>> Grammar((("root", Seq((Lit("a"), Rep(Chars("\\n", negated=True), 1)))),)).gbnf()
'root ::= "a" [^\\\\x0A]+\\n'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

from four._checked import Checked, check_fields

WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Every character ``str.isspace`` and ``str.strip`` take for a blank."""


@dataclass(frozen=True, slots=True)
class Lit(Checked):
    """The text itself."""

    text: str


@dataclass(frozen=True, slots=True)
class Chars(Checked):
    """One character of ``chars``, or with ``negated`` any character but those."""

    chars: str
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Seq(Checked):
    """Each item in turn."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Alt(Checked):
    """One of the options."""

    options: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Rep(Checked):
    """``item`` at least ``low`` and at most ``high`` times (None: no bound)."""

    item: Expr
    low: int = 0
    high: int | None = None


@dataclass(frozen=True, slots=True)
class Ref(Checked):
    """The rule called ``name``."""

    name: str


Expr: TypeAlias = Lit | Chars | Seq | Alt | Rep | Ref
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True, slots=True)
class Grammar:
    """Named rules, ``root`` first; every ``Ref`` names one of them. Build it with
    ``grammar_of``."""

    rules: tuple[tuple[str, Expr], ...]

    def __post_init__(self) -> None:
        check_fields(self)  # a wrong value named here, not deep inside a run
        names = [name for name, _ in self.rules]
        if not names or names[0] != "root":
            raise ValueError("Grammar: the first rule must be called root")
        for name in names:
            if not _NAME.match(name):
                raise ValueError(f"Grammar: rule name {name!r}: use a-z, 0-9 and -")
        if len(set(names)) != len(names):
            raise ValueError("Grammar: a rule is named twice")
        known = set(names)
        for name, expr in self.rules:
            for ref in _refs(expr):
                if ref not in known:
                    raise ValueError(f"Grammar: rule {name} refers to {ref}, which is not a rule")

    def gbnf(self) -> str:
        """The grammar in llama.cpp's GBNF (its ``grammar`` request field)."""
        return "".join(f"{name} ::= {_gbnf(expr, top=True)}\n" for name, expr in self.rules)


def grammar_of(*rules: tuple[str, Expr]) -> Grammar:
    """A grammar of ``rules``, ``root`` first; a rule given twice alike is kept once (the
    pieces of two parts may share one).

    >>> grammar_of(("root", Ref("x")), ("x", Lit("a")), ("x", Lit("a"))).gbnf()
    'root ::= x\\nx ::= "a"\\n'
    """
    kept: dict[str, Expr] = {}
    for name, expr in rules:
        if kept.setdefault(name, expr) != expr:
            raise ValueError(f"grammar_of: two different rules are called {name}")
    return Grammar(tuple(kept.items()))


def _refs(expr: Expr) -> list[str]:
    match expr:
        case Ref(name):
            return [name]
        case Seq(parts) | Alt(parts):
            return [r for part in parts for r in _refs(part)]
        case Rep(item):
            return _refs(item)
    return []


def _char(c: str) -> str:
    """A character as GBNF writes it in a literal or a class: letters, digits and space
    as they are, anything else as a hex escape (no character is special then)."""
    if c.isascii() and (c.isalnum() or c == " "):
        return c
    code = ord(c)
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def _gbnf(expr: Expr, top: bool = False) -> str:
    if isinstance(expr, Lit):
        return '"' + "".join(_char(c) for c in expr.text) + '"'
    if isinstance(expr, Chars):
        return "[" + ("^" if expr.negated else "") + "".join(map(_char, expr.chars)) + "]"
    if isinstance(expr, Ref):
        return expr.name
    if isinstance(expr, Seq):
        text = " ".join(_gbnf(item) for item in expr.items) if expr.items else '""'
        return text if top or len(expr.items) < 2 else f"({text})"
    if isinstance(expr, Alt):
        text = " | ".join(_gbnf(option, top=True) for option in expr.options)
        return text if top else f"({text})"
    inner = _gbnf(expr.item)
    if not isinstance(expr.item, Lit | Chars | Ref) and not inner.endswith(")"):
        inner = f"({inner})"  # a repeated repetition, or an empty sequence
    low, high = expr.low, expr.high
    suffix = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((low, high))
    if suffix is None:
        suffix = f"{{{low},}}" if high is None else f"{{{low},{high}}}"
    return inner + suffix


@runtime_checkable
class Constrained(Protocol):
    """A V1 that can say, as a grammar, replies it accepts: every string ``grammar()``
    allows parses to actions or a submission, never a ``FormatError`` (docs/search.md)."""

    def grammar(self) -> Grammar: ...
