"""Changepoints in the search: expansion operators, location starts, recovery, description."""

import re

import numpy as np
import pytest

from skgpsearch import CompositionalGPRegressor
from skgpsearch._search._regression import changes_within_latest
from skgpsearch._search._starts import change_locations, change_options, start_pool
from skgpsearch.criteria import HyperPrior
from skgpsearch.grammar import Base, Change, CompositionalGrammar, parse
from skgpsearch.inspection import SwitchedKernel, additive_terms, decompose, describe
from skgpsearch.kernels import ChangePoint, ChangeWindow, DataSummary, to_kernel


def test_change_locations_find_a_jump_in_level_and_a_change_of_scale():
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 100.0, 400)  # unordered, irregular
    level = np.where(x > 37.0, 2.0, 0.0) + 0.3 * rng.normal(size=x.size)
    assert abs(change_locations(x, level)[0] - 37.0) < 1.0
    scale = rng.normal(size=x.size) * np.where(x > 71.0, 3.0, 0.5)
    assert abs(change_locations(x, scale)[0] - 71.0) < 2.0
    # the two best splits are a tenth of the range apart
    both = change_locations(x, level + np.where(x > 80.0, -4.0, 0.0))
    assert len(both) == 2 and abs(both[0] - both[1]) > 10.0
    assert change_locations(x[:8], level[:8]) == []  # too short to split


def test_changes_within_the_latest_rows_of_a_series():
    x = np.random.default_rng(0).permutation(np.arange(100.0))  # any row order: the time index sorts them
    # the latest 15 rows are 85..99; the last earlier row is 84
    def change(operator, **params):
        return Change(operator, 0, Base("SE", 0), Base("SE", 0), params=params)

    assert changes_within_latest(change("CP", location=90.0, width=1.0), x, 0.15)
    assert changes_within_latest(change("CP", location=84.5, width=1.0), x, 0.15)
    assert not changes_within_latest(change("CP", location=84.0, width=1.0), x, 0.15)  # seen by the refit
    assert not changes_within_latest(change("CP", location=120.0, width=1.0), x, 0.15)  # beyond the data
    # a window: either end counts, a window around the latest rows has both ends outside them
    assert changes_within_latest(change("CW", location=100.0, duration=20.0, width=1.0), x, 0.15)  # starts 90
    assert changes_within_latest(change("CW", location=70.0, duration=40.0, width=1.0), x, 0.15)  # ends 90
    assert not changes_within_latest(change("CW", location=95.0, duration=30.0, width=1.0), x, 0.15)  # 80..110
    # a nested change counts, a structure without fitted values or changes does not
    nested = Change("CP", 0, change("CW", location=80.0, duration=20.0, width=1.0), Base("C"),
                    params={"location": 40.0, "width": 1.0})  # the window ends at 90
    assert changes_within_latest(nested, x, 0.15)
    assert not changes_within_latest(Change("CP", 0, Base("SE", 0), Base("C")), x, 0.15)
    assert not changes_within_latest(parse("SE(0) + PER(0)"), x, 0.15)


def test_change_options_start_at_the_hints_then_the_quartiles():
    X = np.linspace(0.0, 10.0, 101)[:, None]
    summary = DataSummary.from_data(X)
    node = Change("CW", 0, Base("SE", 0), Base("C"))
    options = change_options(node, summary, [3.3, 3.5, 12.0])
    # 3.5 is within a tenth of the range of 3.3; 12 is outside the data; 5.0 / 2.5 / 7.5 follow
    assert [o["location"] for o in options] == [3.3, 5.0, 7.5]
    assert set(options[0]) == {"location", "duration", "width"}


def test_every_location_option_enters_the_pool():
    X = np.linspace(0.0, 10.0, 101)[:, None]
    summary = DataSummary.from_data(X)
    pool = start_pool(parse("CP(0, SE(0), PER(0))"), summary)
    locations = {round(node.params["location"], 6) for start in pool for node in start.expr.changes}
    assert locations == {5.0, 2.5, 7.5}
    assert all(node.params for start in pool for node in start.expr.changes)


def test_hyperprior_follows_the_theta_order_of_change_operators():
    X = np.linspace(1950.0, 1960.0, 60)[:, None]
    summary = DataSummary.from_data(X, np.sin(X[:, 0]))
    for text in ("CP(0, SE(0), PER(0) + LIN(0))", "LIN(0) * CW(0, SE(0), C) + SE(0)"):
        expr = parse(text)
        means, sds = HyperPrior().kernel_moments(expr, summary)
        # every prior is centred at the default: the default theta, in to_kernel's order
        np.testing.assert_allclose(means, to_kernel(expr, summary=summary).theta, rtol=1e-12)
        assert np.all(sds > 0)


def test_grammar_change_operators_are_off_by_default():
    parent = parse("SE(0) + PER(0)")
    plain = set(CompositionalGrammar(["SE", "PER"]).expand(parent, 1))
    assert not any(child.changes for child in plain)
    with_changes = set(CompositionalGrammar(["SE", "PER"], change_operators=("CP", "CW")).expand(parent, 1))
    assert plain < with_changes
    for text in ("CP(0, SE(0) + PER(0), SE(0) + PER(0))", "CP(0, SE(0) + PER(0), C)", "CP(0, C, SE(0) + PER(0))",
                 "CW(0, SE(0) + PER(0), C)", "CW(0, C, SE(0) + PER(0))", "SE(0) + CP(0, PER(0), PER(0))"):
        assert parse(text) in with_changes
    with pytest.raises(ValueError, match="Unknown change operator 'XY'"):
        CompositionalGrammar(change_operators=("XY",)).expand(parent, 1)


@pytest.mark.slow
def test_search_recovers_a_planted_changepoint_and_describes_it():
    """A cycle that starts at t = 1956.3: found at that location (within 2 % of the range) and described."""
    rng = np.random.default_rng(1)
    t = np.linspace(1950.0, 1960.0, 150)
    y = np.sin(0.5 * t) + np.where(t > 1956.3, np.sin(2 * np.pi * t / 0.8), 0.0) + 0.1 * rng.normal(size=t.size)
    grammar = CompositionalGrammar(["SE", "PER"], change_operators=("CP",))
    model = CompositionalGPRegressor(grammar=grammar, max_depth=3, random_state=0).fit(t[:, None], y)
    changes = model.structure_.changes
    assert len(changes) == 1 and changes[0].operator == "CP"
    assert abs(changes[0].params["location"] - 1956.3) < 0.02 * 10.0
    # the periodic part is after the change only
    assert any(leaf.name == "PER" for leaf in changes[0].operands[1].leaves)
    assert not any(leaf.name == "PER" for leaf in changes[0].operands[0].leaves)
    period = [leaf.params["period"] for leaf in changes[0].operands[1].leaves if leaf.name == "PER"][0]
    assert period == pytest.approx(0.8, rel=0.02)
    # the same search without change operators scores clearly lower
    plain = CompositionalGPRegressor(base_kernels=("SE", "PER"), change_operators=None, max_depth=3,
                                     random_state=0).fit(t[:, None], y)
    assert model.best_score_ > plain.best_score_ + 10.0
    text = describe(model, feature_names=["year"])
    assert "until ≈ 1956" in text and "changing to a periodic component in `year`" in text
    # the decomposition splits the change into its sides, each active on its side only
    parts = decompose(model)
    sides = {c.switches[0].side: c for c in parts if c.switches}
    assert set(sides) == {"before", "after"}
    assert any(leaf.name == "PER" for leaf in sides["after"].structure.leaves)
    early, late = t < 1955.5, t > 1957.5
    assert np.abs(sides["after"].mean[early]).max() < 0.05 * np.abs(sides["after"].mean[late]).max()
    assert np.abs(sides["before"].mean[late]).max() < 0.05 * np.abs(sides["before"].mean[early]).max()
    np.testing.assert_allclose(parts.mean, model.predict(t[:, None]), atol=1e-8)
    assert "From ≈ 1956" in text and "Until ≈ 1956" in text


@pytest.mark.parametrize("change", [
    ChangePoint(to_kernel(parse("SE(0) + LIN(0)")), to_kernel(parse("PER(0)")), location=0.3, width=0.2),
    ChangeWindow(to_kernel(parse("SE(0)")), to_kernel(parse("RQ(0) * PER(0) + C")), location=-0.2, duration=0.8,
                 width=0.1),
])
def test_switched_sides_add_up_to_the_change_kernel(change):
    """Splitting a change into its sides: s s' k1-terms and (1 − s)(1 − s') k2-terms, by hand, add up to it."""
    rng = np.random.default_rng(0)
    X, Y = rng.uniform(-2, 2, (9, 1)), rng.uniform(-2, 2, (5, 1))
    terms = additive_terms(change)
    assert len(terms) == len(additive_terms(change.k1)) + len(additive_terms(change.k2))
    assert all(isinstance(term, SwitchedKernel) for term in terms)
    np.testing.assert_allclose(sum(term(X, Y) for term in terms), change(X, Y), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sum(term.diag(X) for term in terms), change.diag(X), rtol=1e-12)
    if isinstance(change, ChangePoint):
        s = lambda x: 1.0 / (1.0 + np.exp((x[:, 0] - 0.3) / 0.2))  # noqa: E731
        first = terms[0]
        np.testing.assert_allclose(first(X, Y), np.outer(s(X), s(Y)) * first.kernel(X, Y), rtol=1e-12)
        K, gradient = first(X, eval_gradient=True)
        assert gradient.shape == (9, 9, 0) and first.n_dims == 0


def test_a_change_inside_another_is_told_once():
    # two steps, at 3 and 7: the inner change had a sentence of its own besides the outer one's, which tells both
    from skgpsearch.grammar import FixedStructureGrammar

    x = np.linspace(0, 10, 100)
    y = np.where(x < 3, 0.0, np.where(x < 7, 3.0, 1.0)) + 0.1 * np.random.default_rng(5).standard_normal(100)
    model = CompositionalGPRegressor(grammar=FixedStructureGrammar("CP(0, CP(0, C, C), C)"), random_state=0).fit(
        x[:, None], y)
    lines = [line for line in describe(model).splitlines() if line.startswith("- The structure changes")]
    assert len(lines) == 1
    located = sorted(float(v) for v in re.findall(r"until ≈ ([0-9.]+)", lines[0]))
    assert located == [pytest.approx(3.0, abs=0.15), pytest.approx(7.0, abs=0.15)]
