"""Changepoint and change-window nodes of the grammar: text, canonical form, conversion."""

import pickle

import numpy as np
import pytest

from skgpsearch.grammar import Base, Change, parse
from skgpsearch.kernels import ChangePoint, ChangeWindow, DataSummary, from_kernel, inherit_values, to_kernel

rng = np.random.default_rng(0)
X = np.column_stack([1950.0 + np.arange(120) / 12.0, rng.normal(size=120)])
y = np.sin(2 * np.pi * X[:, 0]) + 0.1 * rng.normal(size=120)
SUMMARY = DataSummary.from_data(X, y)

TEXTS = [
    "CP(0, SE(0), PER(0) + LIN(0))",
    "CW(0, SE(0), C)",
    "LIN(0) * CW(0, SE(0), RQ(0))",
    "SE(1) + CP(0, SE(0) * PER(0), SE(0))",
    "CP(0, CP(0, SE(0), LIN(0)), PER(0))",
]


@pytest.mark.parametrize("text", TEXTS)
def test_text_round_trip_pickle_and_hash(text):
    expr = parse(text)
    assert str(expr) == text
    assert parse(str(expr)) == expr and hash(parse(text)) == hash(expr)
    assert pickle.loads(pickle.dumps(expr)) == expr


def test_operands_are_ordered_and_not_rewritten():
    a, b = parse("SE(0)"), parse("PER(0)")
    assert Change("CP", 0, a, b) != Change("CP", 0, b, a)
    assert Change("CP", 0, a, b) != Change("CW", 0, a, b) != Change("CW", 1, a, b)
    assert Change("CP", 0, a, a) != a  # two copies with their own hyperparameters
    # inside a sum it is one operand, sorted after base kernels and products
    assert str(parse("CP(0, SE(0), PER(0)) + SE(0) * LIN(0) + RQ(0)")) == "RQ(0) + SE(0) * LIN(0) + CP(0, SE(0), PER(0))"


def test_feature_names_and_case():
    expr = parse("cw(year, SE(year), C)", feature_names=["year", "x"])
    assert expr == parse("CW(0, SE(0), C)")
    assert expr.to_string(["year", "x"]) == "CW(year, SE(year), C)"


@pytest.mark.parametrize(
    "text, message",
    [
        ("CP(SE(0), SE(0))", "takes the column it switches on first"),
        ("CP(0, SE(0))", "expected ','"),
        ("CP(0, SE(0), SE(0)", "expected '\\)'"),
        ("CP 0, SE(0), SE(0)", "expected '\\(' after CP"),
    ],
)
def test_malformed_change_text(text, message):
    with pytest.raises(ValueError, match=message):
        parse(text)


def test_bad_change_nodes():
    with pytest.raises(ValueError, match="Unknown change operator"):
        Change("XX", 0, Base("SE", 0), Base("SE", 0))
    with pytest.raises(ValueError, match="non-negative integer"):
        Change("CP", -1, Base("SE", 0), Base("SE", 0))
    with pytest.raises(ValueError, match="no hyperparameter 'period'"):
        Change("CP", 0, Base("SE", 0), Base("SE", 0), {"period": 1.0})
    with pytest.raises(ValueError, match="expressions"):
        Change("CP", 0, "SE(0)", Base("SE", 0))


def test_columns_counts_and_amplitudes():
    expr = parse("SE(1) + CP(0, SE(1) * PER(1), LIN(1))")
    assert expr.columns == (0, 1)  # the switch column counts even if no leaf uses it
    # SE 2 + (SE 2 + PER 3 − 1 fixed amplitude) + LIN 2 + CP 2
    assert expr.n_hyperparameters == 2 + 4 + 2 + 2
    assert parse("CW(0, SE(0), C)").n_hyperparameters == 2 + 1 + 3
    # in a product the change node keeps the scale (it has amplitudes on both sides)
    product = parse("LIN(0) * CP(0, SE(0), SE(0) * PER(0))")
    assert product.free_amplitudes() == (False, True, True, False)


@pytest.mark.parametrize("text", TEXTS)
def test_to_kernel_from_kernel_round_trip(text):
    expr = parse(text)
    kernel = to_kernel(expr, summary=SUMMARY)
    assert kernel.n_dims == expr.n_hyperparameters
    read = from_kernel(kernel)
    assert read == expr
    for node in read.changes:
        assert set(node.params) == set(node.parameter_names)
    # the values read back rebuild the same covariance
    np.testing.assert_allclose(to_kernel(read, summary=SUMMARY)(X), kernel(X), rtol=1e-10)


def test_defaults_and_bounds_of_the_operators():
    kernel = to_kernel(parse("CW(0, SE(0), C)"), summary=SUMMARY)
    assert isinstance(kernel, ChangeWindow) and kernel.column == 0
    low, high = X[:, 0].min(), X[:, 0].max()
    assert kernel.location == pytest.approx((low + high) / 2) and kernel.location_bounds == (low, high)
    # a wider transition than an eighth of the range is a sigmoid trend, not a change
    assert kernel.width_bounds[0] <= (1 / 12) / 10 + 1e-12
    assert kernel.width_bounds[1] == pytest.approx((high - low) / 8)
    assert kernel.duration_bounds[0] == pytest.approx(2 / 12)
    # carried values are used (clipped into the bounds)
    carried = Change("CP", 0, Base("SE", 0), Base("SE", 0), {"location": 1955.5, "width": 1e9})
    kernel = to_kernel(carried, summary=SUMMARY)
    assert isinstance(kernel, ChangePoint) and kernel.location == 1955.5
    assert kernel.width == pytest.approx((high - low) / 8)


def test_children_inherit_the_change_values():
    fitted = Change("CP", 0, Base("SE", 0, {"variance": 2.0, "lengthscale": 3.0}), Base("LIN", 0),
                    {"location": 1957.0, "width": 0.3})
    child = inherit_values(parse("CP(0, SE(0), LIN(0)) + PER(0)"), fitted)
    assert child.changes[0].params == {"location": 1957.0, "width": 0.3}
    assert child.changes[0].operands[0].params == {"variance": 2.0, "lengthscale": 3.0}
    assert not child.without_values().has_values and child.has_values
