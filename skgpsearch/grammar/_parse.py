"""Parser for the kernel-structure text notation (hand-written; no eval).

Grammar (whitespace is ignored; ``×`` may be written for ``*``)::

    expression := term ("+" term)*
    term       := factor ("*" factor)*
    factor     := "(" expression ")" | change | base
    change     := ("CP" | "CW") "(" column "," expression "," expression ")"
    base       := KIND [ "(" [ column ("," column)* ] ")" ]
    column     := INTEGER | NAME | QUOTED

``KIND`` is a catalogue name (case-insensitive); ``CP`` and ``CW`` are the
changepoint and change-window operators, whose first argument is the column
the change happens on. A column is a 0-based index,
or, when feature names are given, a feature name -- bare if it is an
identifier (letters, digits, ``_`` and ``.``), otherwise in single or double
quotes with backslash escapes.

Parentheses and change operators may nest at most ``MAX_NESTING`` (100)
levels deep: a search never builds structures anywhere near that, and the
recursive-descent parser would otherwise run out of stack on hostile input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._expr import CHANGE_OPERATORS, Base, Change, add, multiply
from ._kinds import KINDS

if TYPE_CHECKING:
    from ._expr import Expr

__all__ = ["MAX_NESTING", "parse"]

#: Deepest nesting of parentheses and change operators that ``parse`` accepts.
MAX_NESTING = 100


class _Token:
    __slots__ = ("type", "value", "pos")

    def __init__(self, type_, value, pos):
        self.type = type_
        self.value = value
        self.pos = pos


_SYMBOLS = {"+": "+", "*": "*", "×": "*", "(": "(", ")": ")", ",": ","}


def _error(text, pos, message):
    caret = " " * pos + "^"
    return ValueError(
        f"Cannot parse kernel structure: {message} at position {pos}.\n  {text}\n  {caret}"
    )


def _tokenize(text):
    tokens = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _SYMBOLS:
            tokens.append(_Token(_SYMBOLS[ch], ch, i))
            i += 1
        elif ch.isdecimal():  # (isdigit also takes superscripts and circled digits, which int() refuses)
            j = i
            while j < n and text[j].isdecimal():
                j += 1
            if j < n and (text[j].isalpha() or text[j] in "_."):
                raise _error(text, i, f"invalid column reference {text[i:j + 1]!r}")
            tokens.append(_Token("int", int(text[i:j]), i))
            i = j
        elif ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_."):
                j += 1
            tokens.append(_Token("name", text[i:j], i))
            i = j
        elif ch in "\"'":
            j, chars = i + 1, []
            while j < n and text[j] != ch:
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                chars.append(text[j])
                j += 1
            if j >= n:
                raise _error(text, i, "unterminated quoted name")
            tokens.append(_Token("quoted", "".join(chars), i))
            i = j + 1
        else:
            raise _error(text, i, f"unexpected character {ch!r}")
    tokens.append(_Token("end", None, n))
    return tokens


class _Parser:
    def __init__(self, text, feature_names):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0
        self.names = None
        if feature_names is not None:
            self.names = {}
            for index, name in enumerate(feature_names):
                self.names.setdefault(str(name), index)
            self.n_features = len(feature_names)

    @property
    def token(self):
        return self.tokens[self.i]

    def expect(self, type_, what):
        tok = self.token
        if tok.type != type_:
            found = "end of text" if tok.type == "end" else repr(tok.value)
            raise _error(self.text, tok.pos, f"expected {what}, found {found}")
        self.i += 1
        return tok

    def parse(self):
        if self.token.type == "end":
            raise _error(self.text, 0, "empty structure")
        expr = self.expression()
        if self.token.type != "end":
            raise _error(
                self.text, self.token.pos, f"expected '+', '*' or end of text, found {self.token.value!r}"
            )
        return expr

    def expression(self):
        operands = [self.term()]
        while self.token.type == "+":
            self.i += 1
            operands.append(self.term())
        return add(*operands) if len(operands) > 1 else operands[0]

    def term(self):
        operands = [self.factor()]
        while self.token.type == "*":
            self.i += 1
            operands.append(self.factor())
        return multiply(*operands) if len(operands) > 1 else operands[0]

    def nest(self, tok):
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _error(self.text, tok.pos, f"nesting deeper than {MAX_NESTING} levels of parentheses or change operators")

    def factor(self):
        tok = self.token
        if tok.type == "(":
            self.nest(tok)
            self.i += 1
            expr = self.expression()
            self.expect(")", "')'")
            self.depth -= 1
            return expr
        if tok.type != "name":
            found = "end of text" if tok.type == "end" else repr(tok.value)
            raise _error(self.text, tok.pos, f"expected a base kernel or '(', found {found}")
        if tok.value.upper() in CHANGE_OPERATORS:
            return self.change()
        return self.base()

    def change(self):
        self.nest(self.token)
        tok = self.expect("name", "a change operator")
        self.expect("(", f"'(' after {tok.value}")
        ahead = self.token
        if ahead.type == "name" and (ahead.value.upper() in KINDS or ahead.value.upper() in CHANGE_OPERATORS) and (
            self.names is None or ahead.value not in self.names
        ):
            raise _error(
                self.text, ahead.pos,
                f"{tok.value.upper()} takes the column it switches on first: {tok.value.upper()}(column, A, B)",
            )
        column = self.column()
        self.expect(",", "','")
        first = self.expression()
        self.expect(",", "','")
        second = self.expression()
        self.expect(")", "')'")
        self.depth -= 1
        return Change(tok.value.upper(), column, first, second)

    def base(self):
        tok = self.expect("name", "a base kernel")
        kind = KINDS.get(tok.value.upper())
        if kind is None:
            raise _error(
                self.text,
                tok.pos,
                f"unknown kernel {tok.value!r} (known: {', '.join(KINDS)})",
            )
        columns = []
        if self.token.type == "(":
            self.i += 1
            if self.token.type != ")":
                columns.append(self.column())
                while self.token.type == ",":
                    self.i += 1
                    columns.append(self.column())
            self.expect(")", "',' or ')'")
        try:
            return Base(kind.name, columns)
        except ValueError as exc:
            raise _error(self.text, tok.pos, str(exc).rstrip(".")) from None

    def column(self):
        tok = self.token
        if tok.type == "int":
            self.i += 1
            if self.names is not None and tok.value >= self.n_features:
                raise _error(
                    self.text,
                    tok.pos,
                    f"column {tok.value} is out of range for {self.n_features} features",
                )
            return tok.value
        if tok.type in ("name", "quoted"):
            self.i += 1
            if self.names is None:
                raise _error(
                    self.text,
                    tok.pos,
                    f"column name {tok.value!r} needs feature_names (or use a column index)",
                )
            if tok.value not in self.names:
                known = ", ".join(repr(n) for n in self.names)
                raise _error(self.text, tok.pos, f"unknown feature {tok.value!r} (known: {known})")
            return self.names[tok.value]
        found = "end of text" if tok.type == "end" else repr(tok.value)
        raise _error(self.text, tok.pos, f"expected a column index or name, found {found}")


def parse(text: str, feature_names: Sequence[str] | None = None) -> Expr:
    """Parse the text notation into a canonical expression.

    Parameters
    ----------
    text : str
        For example ``"SE(0) + PER(0) * LIN(1)"`` or, with feature names,
        ``"SE(glucose) * SE(pedigree)"``.
    feature_names : sequence of str, optional
        Names of the input columns, so that columns may be referred to by name.

    Returns
    -------
    expr : Expr
        The canonical expression; ``parse(str(expr)) == expr``.

    Raises
    ------
    ValueError
        On any malformed text, unknown kernel or column, or nesting deeper than
        ``MAX_NESTING`` (100) levels; the message gives the position and shows
        it with a caret.

    Examples
    --------
    >>> from skgpsearch.grammar import parse
    >>> print(parse("SE(2) + SE(1) * SE(0)"))
    SE(2) + SE(0) * SE(1)
    >>> print(parse("SE(bmi) * LIN(age)", feature_names=["age", "bmi"]))
    SE(1) * LIN(0)
    """
    if not isinstance(text, str):
        raise ValueError(f"Kernel structure text must be a string, got {type(text).__name__}.")
    return _Parser(text, feature_names).parse()
