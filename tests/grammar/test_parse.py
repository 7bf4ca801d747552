"""Text notation: parse/print round trips, feature names, error messages, no eval."""

import ast
import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skgpsearch.grammar import Base, parse

from strategies import expressions

NAMES = ["age", "body mass", "glucose", 'say "hi"']


@settings(max_examples=300, deadline=None)
@given(expressions())
def test_parse_of_str_is_identity(expr):
    assert parse(str(expr)) == expr
    assert str(parse(str(expr))) == str(expr)


@settings(max_examples=150, deadline=None)
@given(expressions())
def test_round_trip_with_feature_names(expr):
    text = expr.to_string(NAMES)
    assert parse(text, feature_names=NAMES) == expr


def test_examples():
    assert str(parse("SE(0) + PER(0) * LIN(1)")) == "SE(0) + PER(0) * LIN(1)"
    assert parse("se(0)+per(0)*lin(1)") == parse("SE(0) + PER(0) * LIN(1)")
    assert parse("SE(0) × SE(1)") == parse("SE(0) * SE(1)")
    assert parse("((SE(0)))") == Base("SE", 0)
    assert parse("C() + WN") == parse("C + WN")
    assert parse("RQ(1, 0)") == Base("RQ", (0, 1))
    assert str(parse("SE(0) * (PER(0) + LIN(0))")) == "SE(0) * (PER(0) + LIN(0))"


def test_feature_names():
    names = ["glucose", "pedigree", "body mass"]
    e = parse("SE(glucose) * SE(pedigree) + LIN('body mass')", feature_names=names)
    assert e == parse("SE(0) * SE(1) + LIN(2)")
    assert e.to_string(names) == 'LIN("body mass") + SE(glucose) * SE(pedigree)'
    # integers remain indices even with names
    assert parse("SE(1)", feature_names=names) == Base("SE", 1)
    # a numeric feature name is reached by quoting it
    assert parse('SE("0")', feature_names=["x", "0"]) == Base("SE", 1)


@pytest.mark.parametrize(
    "text, feature_names, fragment, position",
    [
        ("", None, "empty structure", 0),
        ("SE(0) +", None, "expected a base kernel", 7),
        ("SX(1)", None, "unknown kernel 'SX'", 0),
        ("SE(0", None, "expected ',' or ')'", 4),
        ("SE(0))", None, "expected '+', '*' or end of text", 5),
        ("SE(0) SE(1)", None, "expected '+', '*' or end of text", 6),
        ("SE(age)", None, "needs feature_names", 3),
        ("SE(weight)", ["age"], "unknown feature 'weight'", 3),
        ("SE(3)", ["a", "b"], "out of range", 3),
        ("PER(0, 1)", None, "exactly one column", 0),
        ("C(0)", None, "does not depend on input columns", 0),
        ("SE()", None, "at least one column", 0),
        ("SE(0) + $", None, "unexpected character '$'", 8),
        ("SE('a)", ["a"], "unterminated", 3),
        ("SE(1x)", None, "invalid column reference", 3),
        ("SE(-1)", None, "unexpected character '-'", 3),
        ("(SE(0) + SE(1)", None, "expected ')'", 14),
        ("SE(0) * * SE(1)", None, "expected a base kernel", 8),
        # digits int() refuses (a superscript, a circled one): int()'s bare message had neither what nor where
        ("SE(²)", None, "unexpected character '²'", 3),
        ("SE(0²)", None, "unexpected character '²'", 4),
    ],
)
def test_errors_say_where_and_why(text, feature_names, fragment, position):
    with pytest.raises(ValueError) as info:
        parse(text, feature_names=feature_names)
    message = str(info.value)
    assert fragment in message
    assert f"at position {position}" in message
    # the caret line points at the position
    lines = message.splitlines()
    assert lines[-1].index("^") - 2 == position


@pytest.mark.parametrize("bad", [None, 3, b"SE(0)", ["SE(0)"]])
def test_non_string_input(bad):
    with pytest.raises(ValueError, match="must be a string"):
        parse(bad)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="SEPRLINCW()+*,0123 x'\"", max_size=25))
def test_arbitrary_text_parses_or_raises_value_error(text):
    try:
        expr = parse(text)
    except ValueError:
        return
    assert parse(str(expr)) == expr


def test_package_never_uses_eval_or_exec():
    package = pathlib.Path(__file__).resolve().parents[1] / "skgpsearch"
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"eval", "exec", "compile"}, f"{path}:{node.lineno}"


def test_nesting_is_limited_with_a_clear_error():
    """Deep nesting is refused by a ValueError (not a RecursionError); the documented limit itself parses."""
    from skgpsearch.grammar._parse import MAX_NESTING

    assert str(parse("(" * MAX_NESTING + "SE(0)" + ")" * MAX_NESTING)) == "SE(0)"
    with pytest.raises(ValueError, match="nesting deeper than 100"):
        parse("(" * 5000 + "SE(0)" + ")" * 5000)
    text = "SE(0)"
    for _ in range(MAX_NESTING):
        text = f"CP(0, {text}, C)"
    assert len(parse(text).changes) == MAX_NESTING
    with pytest.raises(ValueError, match="nesting deeper"):
        parse(f"CW(0, {text}, C)")
    # long but flat text is fine
    assert len(parse(" + ".join(f"SE({i % 7}) * LIN({i % 5})" for i in range(2000))).terms()) == 2000
