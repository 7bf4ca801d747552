"""Decomposition, description, plots and report of fitted models."""

import base64
import importlib.util
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from scipy import stats
from sklearn.base import clone
from sklearn.ensemble import RandomForestRegressor
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import KFold

from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor
from skgpsearch.grammar import Base, CompositionalGrammar, parse
from skgpsearch.inspection import (
    additive_terms,
    ard_relevances,
    compare_with_random_forest,
    decompose,
    describe,
    forecast_holdout,
    forecast_table,
    plot_components,
    plot_fit,
    plot_search_path,
    write_report,
)
from skgpsearch.inspection._describe import IRRELEVANT_RELEVANCE, _ard_lines, _finalist_text, describe_term
from skgpsearch.inspection._forecast import naive_with_drift, straight_line_forecast
from skgpsearch.grammar import FixedStructureGrammar
from skgpsearch.kernels import from_kernel, to_kernel

from strategies import N_COLUMNS, expressions


@pytest.fixture(scope="module")
def additive_regression():
    """y = sin(3 x0) + 0.5 x1² + noise, fitted with the structure SE(x0) + SE(x1)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(120, 2))
    f0, f1 = np.sin(3 * X[:, 0]), 0.5 * X[:, 1] ** 2
    y = 10 + f0 + f1 + 0.05 * rng.normal(size=120)
    frame = pd.DataFrame(X, columns=["speed", "load"])
    # (selected by the criterion: the runner-up tests read the search's runner-up)
    model = CompositionalGPRegressor(base_kernels=("SE",), grammar="sum_of_products", max_depth=2,
                                     random_state=0, selection="criterion").fit(frame, y)
    return model, frame, y, f0, f1


@pytest.fixture(scope="module")
def periodic_regression():
    t = np.linspace(0, 6, 90)[:, None]
    y = 0.8 * t[:, 0] + np.sin(2 * np.pi * t[:, 0]) + 0.05 * np.random.default_rng(1).normal(size=90)
    # (selected by the criterion: the runner-up tests read the search's runner-up; no change operators: their
    # six candidates were two thirds of the fit's time, and the same PER(0) + LIN(0) wins by 53 nats without them)
    model = CompositionalGPRegressor(base_kernels=("PER", "LIN"), change_operators=None, max_depth=2,
                                     random_state=0, selection="criterion").fit(t, y)
    return model, t, y


@pytest.fixture(scope="module")
def interaction_classifier():
    rng = np.random.default_rng(2)
    X = rng.uniform(-2, 2, size=(160, 3))
    y = np.where(X[:, 0] * X[:, 1] + 0.8 * X[:, 0] > 0, "same", "opposite")
    frame = pd.DataFrame(X, columns=["glucose", "pedigree", "noise"])
    # (selected by the criterion: these tests read the search's runner-up)
    model = CompositionalGPClassifier(max_depth=3, random_state=0, selection="criterion").fit(frame, y)
    return model, frame, y


def _brute_force_component(model, term, X_new):
    """E and sd of one component by dense solves on the fitted kernel (independent of the engine)."""
    # the kernel acts on the inputs as the GP saw them (warp_inputs="auto" warps a table)
    warp = model.input_transformer_.transform if model.input_transformer_ is not None else np.asarray
    X, X_new = warp(np.asarray(model.X_train_, dtype=float)), warp(np.asarray(X_new, dtype=float))
    y = (model.y_train_ - model._y_train_mean) / model._y_train_std
    K_y = model.kernel_(X)
    K_cross = term(X_new, X)
    mean = K_cross @ np.linalg.solve(K_y, y) * model._y_train_std
    cov = term(X_new) - K_cross @ np.linalg.solve(K_y, K_cross.T)
    return mean, np.sqrt(np.clip(np.diag(cov), 0, None)) * model._y_train_std


def test_additive_terms_add_up_to_the_kernel():
    expr = parse("SE(0) * (PER(0) + LIN(1)) + RQ(1)")
    kernel = to_kernel(expr)
    terms = additive_terms(kernel)
    assert len(terms) == expr.n_terms == 3
    X = np.random.default_rng(0).normal(size=(15, 2))
    np.testing.assert_allclose(sum(t(X) for t in terms), kernel(X), rtol=1e-12, atol=1e-12)


def test_components_sum_to_the_prediction(additive_regression):
    model, frame, _, _, _ = additive_regression
    assert str(model.structure_) == "SE(0) + SE(1)"
    parts = model.decompose()
    np.testing.assert_allclose(parts.mean, model.predict(frame), atol=1e-8)
    new = pd.DataFrame(np.random.default_rng(5).uniform(-3, 3, size=(30, 2)), columns=frame.columns)
    parts_new = decompose(model, new)
    np.testing.assert_allclose(parts_new.mean, model.predict(new), atol=1e-8)
    assert parts_new.residuals is None and parts.residuals is not None


def test_components_match_dense_solves(additive_regression):
    model, frame, _, _, _ = additive_regression
    new = pd.DataFrame(np.random.default_rng(6).uniform(-3, 3, size=(25, 2)), columns=frame.columns)
    parts = decompose(model, new)
    for component in parts:
        mean, std = _brute_force_component(model, component.kernel, new.to_numpy())
        np.testing.assert_allclose(component.mean, mean, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(component.std, std, rtol=1e-5, atol=1e-7)


def test_components_recover_the_additive_truth(additive_regression):
    model, _, y, f0, f1 = additive_regression
    parts = model.decompose()
    by_column = {c.columns: c for c in parts}
    for column, truth in ((0,), f0), ((1,), f1):
        estimate = by_column[column].mean
        # identified up to a constant shared with the offset
        assert np.corrcoef(estimate, truth)[0, 1] > 0.995
        assert np.std(estimate - truth) < 0.05
    shares = [c.variance_share for c in parts]
    assert shares == sorted(shares, reverse=True)
    for c in parts:
        assert c.variance_share == pytest.approx(np.var(c.mean) / np.var(y))


def test_periodic_components_and_partial_residuals(periodic_regression):
    model, t, y = periodic_regression
    parts = model.decompose()
    labels = {c.label for c in parts}
    assert "PER(0)" in labels and "LIN(0)" in labels, labels
    for component in parts:
        partial = component.mean + parts.residuals
        # partial residuals are the targets minus everything else
        others = parts.offset + sum(c.mean for c in parts if c is not component)
        np.testing.assert_allclose(partial, y - others, atol=1e-8)


def test_classifier_components_sum_to_the_latent_mean(interaction_classifier):
    model, frame, _ = interaction_classifier
    parts = model.decompose()
    mean, std = model.predict_latent(frame, return_std=True)
    np.testing.assert_allclose(parts.mean, mean, atol=1e-8)
    assert parts.task == "classification" and parts.target_class == "same"
    if len(parts) == 1:
        np.testing.assert_allclose(parts[0].std, std, rtol=1e-8)


def test_classifier_single_term_std_is_the_latent_std():
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(80, 1))
    y = (np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=80) > 0).astype(int)
    model = CompositionalGPClassifier(max_depth=1, random_state=0).fit(X, y)
    new = np.linspace(-3, 3, 20)[:, None]
    (component,) = model.decompose(new).components
    mean, std = model.predict_latent(new, return_std=True)
    np.testing.assert_allclose(component.std, std, rtol=1e-8)
    np.testing.assert_allclose(component.mean + model.latent_mean_, mean, atol=1e-10)


def test_multiclass_needs_a_target_class(three_class_fit):
    model, X, y, _ = three_class_fit
    with pytest.raises(ValueError, match="target_class"):
        model.decompose()
    with pytest.raises(ValueError, match="not a class"):
        model.decompose(target_class="z")
    warped = model._model_inputs(np.asarray(X, dtype=float))  # the inputs as the GP saw them
    latent = np.column_stack([m.posterior.predict_latent(warped) for m in model._binary_models])
    for k, label in enumerate(model.classes_):
        np.testing.assert_allclose(model.decompose(target_class=label).mean, latent[:, k], atol=1e-8)
    text = model.describe()
    for label in "abc":
        assert f"Class '{label}' versus the rest" in text


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_decompose_rejects_bad_input(additive_regression):
    model, frame, _, _, _ = additive_regression
    with pytest.raises(NotFittedError):
        decompose(CompositionalGPRegressor())
    with pytest.raises(ValueError, match="features"):
        decompose(model, np.zeros((3, 5)))
    with pytest.raises(ValueError, match="classifiers only"):
        decompose(model, target_class=1)
    forest = RandomForestRegressor(n_estimators=2).fit(frame, np.arange(len(frame)))
    with pytest.raises(ValueError, match="got RandomForestRegressor"):
        decompose(forest)
    with pytest.raises(ValueError, match="got RandomForestRegressor"):
        describe(forest)
    with pytest.raises(NotFittedError):
        describe(CompositionalGPClassifier())


# -- description ---------------------------------------------------------------------------
def test_description_of_an_additive_model(additive_regression):
    model, _, _, _, _ = additive_regression
    text = describe(model, target_name="power")
    assert text.splitlines()[0] == "Structure: SE(speed) + SE(load)"
    lines = [line for line in text.splitlines() if line.startswith("- A smooth function")]
    assert len(lines) == 2
    assert any("`speed`" in line for line in lines) and any("`load`" in line for line in lines)
    for component, line in zip(model.decompose(), lines):
        share = re.search(r"explains (\S+) %", line).group(1)
        assert float(share) == pytest.approx(100 * component.variance_share, rel=0.05)
    noise = float(re.search(r"noise has standard deviation ≈ (\S+) ", text).group(1))
    assert noise == pytest.approx(np.sqrt(model.noise_variance_), rel=1e-2)
    assert "under the criterion bic" in text and f"compared {len(model.search_results_['structure'])}" in text


def test_shares_that_do_not_add_up_are_explained(additive_regression):
    from skgpsearch.inspection._describe import _shares_line

    model, _, _, _, _ = additive_regression
    parts = model.decompose()
    # even for an independent additive truth the two posterior means correlate over 120 rows; the
    # line gives both sums, and the description carries it
    total = sum(c.variance_share for c in parts)
    whole = np.var(parts.mean) / np.var(model.y_train_)
    (line,) = _shares_line(parts, "the target")
    assert f"add up to {100 * total:.0f} %" in line and f"explains {100 * whole:.0f} %" in line
    assert line in describe(model)
    # two components that offset each other: shares 100 % and 25 %, the whole 25 %
    x = np.linspace(-1, 1, len(parts.X))
    parts.components[0].mean, parts.components[1].mean = x, -0.5 * x
    parts.components[0].variance_share, parts.components[1].variance_share = 1.0, 0.25
    parts.target_variance = float(np.var(x))
    (line,) = _shares_line(parts, "the target")
    assert "add up to 125 %" in line and "explains 25 %" in line and "cancel each other" in line


def test_description_of_a_periodic_trend(periodic_regression):
    model, _, _ = periodic_regression
    text = model.describe(feature_names=["time"])
    period = float(re.search(r"periodic component in `time` with period ≈ (\S+)", text).group(1))
    assert period == pytest.approx(1.0, rel=0.02)
    assert "a linear trend in `time`" in text.lower()


def test_description_of_an_interaction(interaction_classifier):
    model, _, _ = interaction_classifier
    assert str(model.structure_) == "SE(0) * SE(1)"
    text = model.describe()
    assert "An interaction of `glucose` and `pedigree`" in text
    assert "the variance of the latent function" in text and "probit link" in text


@pytest.mark.parametrize(
    "text, phrase",
    [
        ("LIN(0) * LIN(0)", "a quadratic function of `t`"),
        ("LIN(0) * LIN(0) * LIN(0)", "a polynomial of degree 3 in `t`"),
        ("PER(0) * LIN(0)", "whose amplitude changes linearly with `t`"),
        ("SE(0) * PER(0)", "whose shape and amplitude change smoothly"),
        ("RQ(0)", "varies on several scales"),
        ("M12(0)", "rough"),
        ("C", "a constant offset"),
        ("SE(0) * LIN(1)", "an interaction of `t` and `u`"),
        ("SE(0, 1)", "a smooth function of `t` and `u` jointly"),
    ],
)
def test_phrases_for_structures(text, phrase):
    (term,) = parse(text).sum_of_products()
    assert phrase in describe_term(term, ["t", "u"])


def test_nearly_constant_factors_are_called_so():
    term = Base("SE", 0, {"variance": 1.0, "lengthscale": 300.0}) * Base("SE", 1, {"variance": 1.0, "lengthscale": 0.5})
    text = describe_term(term, ["a", "b"], ranges=np.array([4.0, 4.0]))
    assert "nearly linear or constant in `a`" in text and "smooth in `b` with lengthscale ≈ 0.5" in text


@pytest.mark.parametrize("lengthscale", [2.0, 300.0])
def test_a_matern_half_term_is_called_a_random_walk_however_long_its_lengthscale(lengthscale):
    # exp(-r / l) = 1 - r / l + ...: increments grow with the span as a random walk's do, never nearly linear
    term = Base("M12", 0, {"variance": 1.0, "lengthscale": lengthscale})
    text = describe_term(term, ["t"], ranges=np.array([4.0]))
    assert "wanders like a random walk" in text and "starts at the last level" in text
    assert "nearly linear" not in text
    smooth = describe_term(Base("SE", 0, {"variance": 1.0, "lengthscale": 300.0}), ["t"], ranges=np.array([4.0]))
    assert "nearly linear there" in smooth and "random walk" not in smooth


def test_the_nearly_constant_factors_of_an_ard_product_share_one_phrase():
    lengthscales = [300.0, 0.5, 90.0, 1000.0]
    term = Base("SE", 0, {"variance": 1.0, "lengthscale": lengthscales[0]})
    for column, lengthscale in enumerate(lengthscales[1:], 1):
        term = term * Base("SE", column, {"variance": 1.0, "lengthscale": lengthscale})
    text = describe_term(term, ["a", "b", "c", "d"], ranges=np.full(4, 4.0))
    assert text == ("an interaction of `a`, `b`, `c` and `d` (smooth in `b` with lengthscale ≈ 0.5; nearly linear or "
                    "constant in `a`, `c` and `d` (lengthscales ≈ 90 to 1e+03, over 5 times each column's range))")


@settings(max_examples=150, deadline=None)
@given(expressions())
def test_every_grammar_structure_gets_a_description(expr):
    names = [f"col{i}" for i in range(N_COLUMNS)]
    valued = from_kernel(to_kernel(expr), n_features=N_COLUMNS)
    for term in valued.sum_of_products():
        text = describe_term(term, names, ranges=np.ones(N_COLUMNS))
        assert text and "?" not in text  # every value the text quotes is known
        if not any(leaf.name == "WN" for leaf in term.leaves):
            for column in term.columns:
                assert f"`col{column}`" in text


# -- plots and report -----------------------------------------------------------------------
def test_plots_one_figure_per_component(additive_regression, interaction_classifier):
    pytest.importorskip("matplotlib")
    model, frame, y, _, _ = additive_regression
    figures = plot_components(model)
    assert len(figures) == len(model.decompose())
    curve = figures[0].axes[0].lines[0].get_ydata()
    assert np.ptp(curve) > 0.5  # the component's posterior mean is drawn, not a flat line
    assert plot_fit(model).axes and plot_search_path(model).axes
    classifier, _, _ = interaction_classifier
    (contour,) = plot_components(classifier)
    assert contour.axes[0].get_xlabel() == "glucose" and contour.axes[0].get_ylabel() == "pedigree"
    assert plot_fit(classifier).axes


def test_the_search_path_draws_the_baselines_apart_from_the_depths(interaction_classifier):
    pytest.importorskip("matplotlib")
    model, _, _ = interaction_classifier
    results = model.search_results_
    baseline = np.array(results["baseline"])
    # the baselines are told apart by the flag, not by their message (a message names failures too)
    assert baseline.any() and all("baseline" in results["message"][i] for i in np.flatnonzero(baseline))
    assert not any("baseline" in (results["message"][i] or "") for i in np.flatnonzero(~baseline))
    ax = plot_search_path(model).axes[0]
    candidates, baselines = ax.collections[0], ax.collections[-1]
    finite = np.isfinite(np.array(results["criterion"], dtype=float))
    assert len(candidates.get_offsets()) == np.sum(finite & ~baseline)
    np.testing.assert_allclose(np.sort(baselines.get_offsets()[:, 1]),
                               np.sort(np.array(results["criterion"], dtype=float)[finite & baseline]))
    first_depth = min(d for d, b in zip(results["depth"], baseline) if not b)
    assert np.all(baselines.get_offsets()[:, 0] == first_depth - 1)
    assert ax.get_xticklabels()[0].get_text() == "baselines"
    assert {t.get_text() for t in ax.texts} >= {"ARD SE", "additive SE"}


def test_plots_name_the_target_and_keep_labels_inside(additive_regression):
    pytest.importorskip("matplotlib")
    model, _, _, _, _ = additive_regression
    assert plot_fit(model, target_name="power").axes[0].get_ylabel() == "predicted power (± 2 sd)"
    assert plot_components(model, target_name="power")[0].axes[0].get_ylabel() == "component of power"
    figure = plot_search_path(model, feature_names=["speed of the engine in revolutions per minute", "load on the engine shaft in kilonewton metres"])
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    # inside the plotting area: a label running past it is cut, or squeezes the axes to make room
    area = figure.axes[0].get_window_extent(renderer)
    labels = figure.axes[0].texts
    assert len(labels) == 2 + sum(model.search_results_["baseline"])  # the best of each depth, the baselines
    for label in labels:
        extent = label.get_window_extent(renderer)
        assert area.x0 <= extent.x0 and extent.x1 <= area.x1, label.get_text()


def test_the_naive_forecast_with_drift_covers_95_percent_of_simulated_random_walks():
    # 4000 random walks with drift, 40 values each, forecast 30 steps: the interval that forgets the drift's
    # uncertainty would hold 86 % at the 30th step
    rng = np.random.default_rng(0)
    walks = np.cumsum(0.7 + 2.0 * rng.normal(size=(4000, 70)), axis=1)
    inside = np.empty((4000, 30), dtype=bool)
    for i, walk in enumerate(walks):
        mean, sd = naive_with_drift(walk[:40], 30)
        inside[i] = np.abs(walk[40:] - mean) <= 1.96 * sd
    coverage = inside.mean(axis=0)
    assert np.all(np.abs(coverage - 0.95) < 0.02), coverage
    assert np.allclose(naive_with_drift(np.array([1.0, 2.0, 4.0]), 2)[0], [5.5, 7.0])
    with pytest.raises(ValueError, match="at least 3 values"):
        naive_with_drift(np.array([1.0, 2.0]), 1)


def test_the_straight_line_forecast_covers_95_percent_of_simulated_lines():
    # 4000 lines with unit noise, 8 values each, forecast the next 4: the interval from the residual spread alone
    # (normal quantile, no leverage) held 76 %; Student-t with the fit's leverage holds 95 % at every step
    rng = np.random.default_rng(1)
    x = np.arange(12.0)
    inside = np.empty((4000, 4), dtype=bool)
    for i in range(4000):
        y = 1.0 + 0.5 * x + rng.normal(size=12)
        mean, scale, dof = straight_line_forecast(x[:8], y[:8], x[8:])
        inside[i] = np.abs(y[8:] - mean) <= stats.t.ppf(0.975, dof) * scale
    assert dof == 6 and np.all(np.diff(scale) > 0)  # wider the further from the data's centre
    assert np.all(np.abs(inside.mean(axis=0) - 0.95) < 0.015), inside.mean(axis=0)


def test_rows_that_share_a_time_stay_on_one_side_of_the_forecast_split():
    from skgpsearch._search._regression import forecast_split

    x = np.concatenate([np.arange(48.0), [47.0], np.arange(48.0, 60.0)])  # month 47 twice
    earlier, later = forecast_split(x, 13 / 61)  # the latest 13 rows by count: one of the two 47s
    assert x[earlier].max() < x[later].min() and len(earlier) + len(later) == len(x)
    assert sorted(x[later]) == [47.0, 47.0] + list(np.arange(48.0, 60.0))
    earlier, later = forecast_split(np.arange(20.0), 0.25)  # no ties: the latest quarter
    assert list(later) == list(range(15, 20))
    earlier, later = forecast_split(np.zeros(6), 0.5)  # one time only: split by rows as before
    assert len(earlier) == len(later) == 3


def test_holdout_forecast_of_a_periodic_trend(periodic_regression, additive_regression, interaction_classifier):
    model, t, y = periodic_regression
    # rows in any order: the split follows the input column
    shuffled = np.random.default_rng(0).permutation(len(y))
    result = forecast_holdout(model, t[shuffled], y[shuffled])
    assert result["n_train"] == 72 and result["n_test"] == 18
    assert np.array_equal(result["X_test"], t[72:, 0]) and result["split_at"] == t[71, 0]
    prefixes = {"GP": "GP ", "RandomForest": "RandomForest", "straight": "straight line", "last": "last observed",
                "drift": "last value plus the mean step"}
    rows = {key: next(r for r in result["rows"] if r["method"].startswith(prefix)) for key, prefix in prefixes.items()}
    # independent numbers: the straight line and the last value, computed here
    slope, intercept = np.polyfit(t[:72, 0], y[:72], 1)
    line_rmse = np.sqrt(np.mean((slope * t[72:, 0] + intercept - y[72:]) ** 2))
    assert rows["straight"]["RMSE"] == pytest.approx(line_rmse)
    assert rows["last"]["RMSE"] == pytest.approx(np.sqrt(np.mean((y[71] - y[72:]) ** 2)))
    drift = (y[71] - y[0]) / 71
    assert rows["drift"]["RMSE"] == pytest.approx(
        np.sqrt(np.mean((y[71] + drift * np.arange(1, 19) - y[72:]) ** 2)))
    gp = rows["GP"]
    assert gp["RMSE"] == pytest.approx(np.sqrt(np.mean((result["mean"] - y[72:]) ** 2)))
    # trend plus a yearly cycle: the GP forecast beats every simple forecaster by a wide margin, and is calibrated
    assert gp["RMSE"] < 0.3 * min(rows[k]["RMSE"] for k in ("RandomForest", "straight", "last", "drift"))
    assert gp["coverage"] >= 0.8 and gp["MNLP"] < rows["straight"]["MNLP"]
    assert np.isnan(rows["RandomForest"]["MNLP"])
    assert "| inside the 95 % interval |" in forecast_table(result)
    with pytest.raises(ValueError, match="one input column"):
        forecast_holdout(additive_regression[0], additive_regression[1], additive_regression[2])
    with pytest.raises(ValueError, match="for regression"):
        forecast_holdout(interaction_classifier[0], interaction_classifier[1], interaction_classifier[2])
    with pytest.raises(ValueError, match="at least 5 training rows"):
        forecast_holdout(model, t[:6], y[:6], holdout=0.5)


def test_fixed_structure_refit_fits_one_candidate(additive_regression):
    model, frame, y, _, _ = additive_regression
    refit = clone(model).set_params(grammar=FixedStructureGrammar(model.structure_), max_depth=1,
                                    base_kernels=("SE", "RQ", "PER", "LIN"))
    refit.fit(frame, y)
    assert refit.structure_ == model.structure_ and len(refit.search_results_["structure"]) == 1
    assert refit.log_marginal_likelihood_value_ >= model.log_marginal_likelihood_value_ - 1e-3


def test_random_forest_comparison_matches_plain_cross_validation(additive_regression):
    model, frame, y, _, _ = additive_regression
    cv = KFold(3, shuffle=True, random_state=1)
    comparison = compare_with_random_forest(model, frame, y, cv=cv, n_estimators=50, random_state=0)
    gp_row, forest_row = comparison["rows"]
    rmse = []
    for train, test in cv.split(frame):
        forest = RandomForestRegressor(n_estimators=50, random_state=0).fit(frame.iloc[train], y[train])
        rmse.append(np.sqrt(np.mean((forest.predict(frame.iloc[test]) - y[test]) ** 2)))
    assert forest_row["RMSE"] == pytest.approx(np.mean(rmse))
    assert gp_row["RMSE"] < 0.5 * forest_row["RMSE"]  # smooth additive truth: the GP must win clearly
    assert comparison["n_splits"] == 3 and comparison["refit"] == "structure"


def test_the_forest_of_the_comparison_reads_a_date_column_beside_numbers_in_decimal_years():
    # (a datetime64 column beside a number column was no float array for the forest: the comparison, and with it
    # `skgpsearch discover` on such a file, ended in numpy's DTypePromotionError)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"day": pd.date_range("2020-01-01", periods=40, freq="D"), "x": rng.normal(size=40)})
    y = np.sin(2 * np.pi * np.arange(40) / 7) + 0.5 * frame["x"].to_numpy()
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, random_state=0).fit(frame, y)
    cv = KFold(3, shuffle=True, random_state=1)
    comparison = compare_with_random_forest(model, frame, y, cv=cv, n_estimators=20, random_state=0)
    years = frame.assign(day=model.X_train_[:, 0])  # the decimal years the model measures the days in
    rmse = []
    for train, test in cv.split(frame):
        forest = RandomForestRegressor(n_estimators=20, random_state=0).fit(years.iloc[train], y[train])
        rmse.append(np.sqrt(np.mean((forest.predict(years.iloc[test]) - y[test]) ** 2)))
    assert comparison["rows"][1]["RMSE"] == pytest.approx(np.mean(rmse))


def test_a_date_axis_of_a_short_series_reads_in_plain_years():
    # (70 days: matplotlib wrote ticks 0.000 ... 0.175 and an offset "+2.02e3", so no year could be read)
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    days = pd.DataFrame({"day": pd.date_range("2020-01-01", periods=70, freq="D")})
    y = np.sin(2 * np.pi * np.arange(70) / 7)
    model = CompositionalGPRegressor(base_kernels=("PER",), max_depth=1, random_state=0).fit(days, y)
    ax = plot_fit(model, days, y).axes[0]
    ax.figure.canvas.draw()
    assert ax.get_xlabel() == "day (decimal years)"
    assert ax.xaxis.get_major_formatter().get_offset() == ""
    ticks = [float(t.get_text().replace("−", "-")) for t in ax.get_xticklabels() if t.get_text()]
    assert ticks and all(2019.9 < tick < 2020.3 for tick in ticks)


def test_html_report_is_self_contained(additive_regression, tmp_path):
    pytest.importorskip("matplotlib")
    model, frame, y, _, _ = additive_regression
    path = write_report(model, frame, y, tmp_path / "report.html", cv=3, target_name="power")
    page = path.read_text()
    assert "SE(speed) + SE(load)" in page and "A smooth function of `speed`" in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 2 + len(model.decompose())  # fit, components, search path
    assert base64.b64decode(images[0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "RandomForest (500 trees)" in page and "<table>" in page
    assert "src=\"http" not in page and "<script" not in page


def test_reports_and_plots_refuse_targets_that_do_not_match_the_rows(additive_regression, periodic_regression,
                                                                    tmp_path):
    pytest.importorskip("matplotlib")
    model, frame, y, _, _ = additive_regression
    # five targets for 120 rows: a report had read "Data: 5 rows", a series' split a reshape error
    with pytest.raises(ValueError, match="write_report needs one target value per row of X: X has 120 rows, y has 5"):
        write_report(model, frame, y[:5], tmp_path / "report.html", compare=False)
    with pytest.raises(ValueError, match="compare_with_random_forest needs one target value per row"):
        compare_with_random_forest(model, frame, y[:5])
    with pytest.raises(ValueError, match="one dimension"):
        write_report(model, frame, np.column_stack([y, y]), tmp_path / "report.html", compare=False)
    series, t, z = periodic_regression
    with pytest.raises(ValueError, match="forecast_holdout needs one target value per row of X: X has 90 rows"):
        forecast_holdout(series, t, z[:10])
    with pytest.raises(ValueError, match="plot_fit needs one target value per row"):
        plot_fit(series, t, z[:10])
    with pytest.raises(ValueError, match="pass both X and y, or neither"):
        plot_fit(series, t)
    assert not list(tmp_path.iterdir())


def test_markdown_report_writes_png_files(interaction_classifier, tmp_path):
    pytest.importorskip("matplotlib")
    model, frame, y = interaction_classifier
    path = write_report(model, frame, y, tmp_path / "out" / "report.md", compare=False)
    text = path.read_text()
    pngs = sorted((tmp_path / "out" / "report_files").glob("*.png"))
    assert len(pngs) == text.count("](report_files/") >= 3
    assert "## Candidates" in text and "| structure |" in text.replace("| class | structure", "| structure")
    # the finalists the final model was chosen from, each with its criterion
    assert "## Finalists" in text and "Selected by criterion." in text
    assert all(s in text for s in ("SE(glucose) * SE(pedigree) * SE(noise) (baseline)", "| weight |"))
    with pytest.raises(ValueError, match=r"\.html or \.md"):
        write_report(model, frame, y, tmp_path / "report.pdf")


def test_a_constant_component_is_drawn_and_reported(tmp_path):
    pytest.importorskip("matplotlib")
    # labels without signal: the classifier keeps its base rate, a component of no column (plot_components had
    # called fig.subplots(1, 0), and every report of such a model failed)
    frame = pd.DataFrame({"p": [0.0, 1.0], "q": [1.0, 0.0]})
    model = CompositionalGPClassifier(max_depth=2, random_state=0).fit(frame, ["a", "b"])
    assert str(model.structure_) == "C"
    (figure,) = plot_components(model)
    line = figure.axes[0].lines[0]
    assert np.allclose(line.get_ydata(), decompose(model).components[0].mean[0])
    assert write_report(model, frame, ["a", "b"], tmp_path / "report.md", compare=False).is_file()


def test_a_warped_columns_component_is_drawn_over_its_data(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    conc = np.exp(rng.normal(size=120))  # skewed and positive: the power transform warps it
    y = np.log(conc) + 0.1 * rng.normal(size=120)
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, warp_inputs=True, random_state=0).fit(
        pd.DataFrame({"conc": conc}), y)
    assert model.input_transformer_.lambdas_[0] != 1.0
    figure = plot_components(model)[0]
    grid = figure.axes[0].lines[0].get_xdata()
    # 5 % of the range below the data had reached conc < 0, a value the column cannot take, far out in warped units
    assert grid.min() == pytest.approx(conc.min()) and grid.max() == pytest.approx(conc.max())


def test_reports_keep_names_with_markup_and_pipes_whole(tmp_path):
    pytest.importorskip("matplotlib")
    from html.parser import HTMLParser

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"ratio a|b <mg> & co": rng.uniform(-2, 2, 60), "w": rng.uniform(-2, 2, 60)})
    y = pd.Series(np.where(frame.iloc[:, 0] + 0.3 * rng.normal(size=60) > 0, "pos|1", "neg"), name="label")
    model = CompositionalGPClassifier(max_depth=1, random_state=0).fit(frame, y)

    class Cells(HTMLParser):  # the number of cells of every table row
        def __init__(self):
            super().__init__()
            self.rows, self.texts = [], []

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.rows.append(0)
            elif tag in ("td", "th"):
                self.rows[-1] += 1

        def handle_data(self, data):
            self.texts.append(data)

    parser = Cells()
    parser.feed(write_report(model, frame, y, tmp_path / "r.html", compare=False).read_text())
    # the finalists (class, structure, three numbers) and the candidates (class, structure and six more)
    assert set(parser.rows) == {5, 8}
    assert any("ratio a|b <mg> & co" in t for t in parser.texts) and any("pos|1" in t for t in parser.texts)
    text = write_report(model, frame, y, tmp_path / "r.md", compare=False).read_text()
    table_lines = [line for line in text.splitlines() if line.startswith("|")]
    assert table_lines and all(len(re.findall(r"(?<!\\)\|", line)) - 1 in (5, 8) for line in table_lines)
    # outside code blocks a renderer would read <mg> as a tag: escaped there, as written in the description
    assert "ratio a\\|b \\<mg\\> \\& co" in text and "```" in text and "ratio a|b <mg> & co" in text


def test_scikit_learn_regressor_is_decomposed_and_described(additive_regression):
    from sklearn.gaussian_process import GaussianProcessRegressor

    model, frame, y, _, _ = additive_regression
    # scikit-learn's GP on the inputs as ours saw them (warp_inputs="auto" may warp a table)
    warp = model._model_inputs
    frame = pd.DataFrame(warp(frame.to_numpy()), columns=frame.columns)
    gpr = GaussianProcessRegressor(model._kernel_no_noise + model.kernel_.k2, normalize_y=True, optimizer=None,
                                   alpha=1e-8).fit(frame, y)
    parts = decompose(gpr)
    np.testing.assert_allclose(parts.mean, gpr.predict(frame), atol=1e-8)
    ours = model.decompose()
    for theirs, mine in zip(parts, ours):
        assert theirs.label == mine.label
        np.testing.assert_allclose(theirs.mean, mine.mean, atol=1e-6)
    new = pd.DataFrame(np.random.default_rng(9).uniform(-3, 3, size=(10, 2)), columns=frame.columns)
    single = GaussianProcessRegressor(model._kernel_no_noise.k1 + model.kernel_.k2, normalize_y=True,
                                      optimizer=None).fit(frame, y)
    (component,) = decompose(single, new).components
    # scikit-learn's std includes the WhiteKernel's variance; the component is noise-free
    std_with_noise = single.predict(new, return_std=True)[1]
    white = model.kernel_.k2.noise_level * single._y_train_std**2
    np.testing.assert_allclose(component.std, np.sqrt(std_with_noise**2 - white), rtol=1e-6)
    text = describe(gpr)
    assert text.startswith("Kernel: ") and "A smooth function of `speed`" in text and "search" not in text


def _gpr_decomposition_by_hand(gpr, kernel_terms, X):
    """Each term's posterior mean K_i(X, X_train) α in target units (an independent check)."""
    scale = float(np.ravel(gpr._y_train_std)[0])
    return [term(X, gpr.X_train_) @ np.ravel(gpr.alpha_) * scale for term in kernel_terms]


def test_scikit_learn_kernels_read_as_sums_single_column_targets_and_per_sample_noise_are_explained():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process import kernels as sk

    rng = np.random.default_rng(4)
    X = np.linspace(0, 10, 40)[:, np.newaxis]
    y = 2 * X[:, 0] + np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    # DotProduct reads as C + LIN: one component, told as a sum (it raised AttributeError)
    kernel = sk.RBF(3.0) + sk.DotProduct(1.5) + sk.WhiteKernel(0.01)
    gpr = GaussianProcessRegressor(kernel, normalize_y=True, optimizer=None).fit(X, y)
    parts = decompose(gpr)
    expected = _gpr_decomposition_by_hand(gpr, [gpr.kernel_.k1.k1, gpr.kernel_.k1.k2], X)
    by_label = {c.label: c.mean for c in parts}
    assert len(parts) == 2
    for mean in expected:
        assert any(np.allclose(mean, theirs, atol=1e-8) for theirs in by_label.values())
    text = describe(gpr)
    assert "linear trend in `x0`" in text and "constant" in text
    # one target as an (n, 1) column is one target (it was refused as multi-output)
    column = GaussianProcessRegressor(sk.RBF(3.0), normalize_y=True, optimizer=None, alpha=1e-2).fit(X, y[:, None])
    np.testing.assert_allclose(decompose(column).mean, column.predict(X), atol=1e-8)
    two = GaussianProcessRegressor(sk.RBF(3.0), optimizer=None).fit(X, np.column_stack([y, -y]))
    with pytest.raises(ValueError, match="2 targets"):
        decompose(two)
    # a per-sample alpha is noise that differs from row to row (it was reported as its mean alone)
    alpha = np.linspace(1e-3, 1.0, 40)
    hetero = GaussianProcessRegressor(sk.RBF(3.0), normalize_y=True, optimizer=None, alpha=alpha).fit(X, y)
    parts = decompose(hetero)
    factor = float(hetero._y_train_std) ** 2
    np.testing.assert_allclose(parts.noise_variance_range, (1e-3 * factor, factor), rtol=1e-12)
    np.testing.assert_allclose(parts.noise_variance, alpha.mean() * factor, rtol=1e-12)
    assert "differs from row to row (the model's per-sample alpha)" in describe(hetero)
    # white noise inside an exponentiation is noise, not a component
    powered = GaussianProcessRegressor(sk.RBF(3.0) + sk.WhiteKernel(0.5) ** 1, optimizer=None).fit(X, y)
    parts = decompose(powered)
    assert len(parts) == 1 and parts.noise_variance == pytest.approx(0.5 + 1e-10)


def test_tools_for_our_estimators_tell_other_models_what_they_take(additive_regression, tmp_path):
    from sklearn.gaussian_process import GaussianProcessRegressor

    _, frame, y, _, _ = additive_regression
    gpr = GaussianProcessRegressor().fit(frame, y)
    calls = {"plot_fit": lambda: plot_fit(gpr), "write_report": lambda: write_report(gpr, frame, y, tmp_path / "r.md"),
             "forecast_holdout": lambda: forecast_holdout(gpr, frame, y)}
    for name, call in calls.items():
        # a fitted model was told it was not fitted
        with pytest.raises(ValueError, match=f"{name} needs a fitted CompositionalGPRegressor"):
            call()
    with pytest.raises(NotFittedError):
        plot_fit(CompositionalGPRegressor())


def test_feature_names_can_be_given_to_a_model_fitted_on_arrays(periodic_regression, tmp_path):
    pytest.importorskip("matplotlib")
    model, t, y = periodic_regression
    figures = plot_components(model, feature_names=["time"])
    assert all(fig.axes[0].get_xlabel() == "time" for fig in figures)
    assert "(time)" in figures[0]._suptitle.get_text()
    text = write_report(model, t, y, tmp_path / "r.md", feature_names=["time"], compare=False).read_text()
    assert "PER(time)" in text and "x0" not in text
    assert "## Hold-out forecast" in text  # a series (a regular time index): forecast by default


def test_the_report_forecasts_a_series_but_not_a_covariate(tmp_path):
    rng = np.random.default_rng(4)
    dose = rng.lognormal(0.0, 0.5, size=40)[:, None]  # drawn as it comes: irregular, no time index
    y = np.log(dose[:, 0]) + 0.1 * rng.normal(size=40)
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, random_state=0).fit(dose, y)
    assert model.selection_ == "stacking"
    text = write_report(model, dose, y, tmp_path / "dose.md", compare=False).read_text()
    assert "Hold-out forecast" not in text
    text = write_report(model, dose, y, tmp_path / "dose.md", compare=False, forecast=True).read_text()
    assert "## Hold-out forecast" in text
    with pytest.raises(ValueError, match="1 features"):
        plot_fit(model, feature_names=["a", "b"])


@pytest.mark.parametrize("fixture", ["additive_regression", "periodic_regression", "interaction_classifier"])
def test_describe_says_when_the_runner_up_is_a_near_tie(fixture, request):
    """The sentence follows the criterion gap in search_results_ (1 nat), whichever structures won."""
    model = request.getfixturevalue(fixture)[0]
    results = model.search_results_
    scores = sorted({round(float(v), 9) for v, status in zip(results["criterion"], results["status"])
                     if status == "ok" and np.isfinite(v)}, reverse=True)
    text = model.describe()
    assert "The runner-up" in text
    gap = scores[0] - scores[1]
    assert ("the data cannot tell these two apart" in text) == (gap < 1.0)


def test_refitting_one_structure_keeps_it(interaction_classifier):
    """The report's per-fold refits fit the chosen structure itself: no constant-model candidate, no rejection."""
    from skgpsearch.grammar import FixedStructureGrammar

    model, frame, y = interaction_classifier
    refit = clone(model).set_params(grammar=FixedStructureGrammar(model.structure_), max_depth=1).fit(frame, y)
    assert list(refit.search_results_["structure"]) == [str(model.structure_)]
    assert refit.structure_.without_values() == model.structure_.without_values()


# -- ARD relevances -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ard_regression():
    """y depends on x0 and x1 only; x2 and x3 are pure noise columns with other ranges; ARD SE fitted."""
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, size=(80, 4)) * np.array([2.0, 1.0, 5.0, 0.5])
    y = np.sin(3 * X[:, 0]) + np.cos(4 * X[:, 1]) + 0.05 * rng.normal(size=80)
    (ard, _) = CompositionalGrammar(base_kernels=("SE",)).standard_structures(4)
    model = CompositionalGPRegressor(grammar=FixedStructureGrammar(ard), max_depth=1, random_state=0).fit(X, y)
    return model, X, y


def _ard_sentence(text):
    lines = [line for line in text.splitlines() if line.startswith("- ARD relevances")]
    assert len(lines) == 1, text
    return lines[0]


def test_ard_relevances_match_the_fitted_kernel(ard_regression):
    model, X, _ = ard_regression
    # independently: the lengthscales of the fitted scikit-learn kernel, the ranges of the data
    params = model.kernel_.get_params()
    lengthscale_of = {int(params[key[: -len("kernel__lengthscale")] + "columns"][0]): value
                      for key, value in params.items() if key.endswith("__kernel__lengthscale")}
    expected = {c: (X[:, c].max() - X[:, c].min()) / lengthscale_of[c] for c in range(4)}
    ((term, relevances),) = ard_relevances(model.structure_, np.ptp(model.X_train_, axis=0))
    assert term == model.structure_
    assert relevances == pytest.approx(expected, rel=1e-9)
    sentence = _ard_sentence(describe(model))
    quoted = {int(c): float(v) for c, v in re.findall(r"`x(\d)` ([0-9.e+-]+)", sentence.split(";")[0])}
    assert quoted == pytest.approx(expected, rel=5e-3)  # three significant digits


def test_ard_flags_the_irrelevant_columns(ard_regression):
    model, X, _ = ard_regression
    ((_, relevances),) = ard_relevances(model.structure_, np.ptp(X, axis=0))
    assert min(relevances[0], relevances[1]) > 1.0
    assert max(relevances[2], relevances[3]) < IRRELEVANT_RELEVANCE
    verdict = _ard_sentence(describe(model)).split("; ")[-1]
    assert verdict.endswith("are at most nearly linear (lengthscale over 5 times the column's range: effectively "
                            "irrelevant, or a linear effect).")
    assert set(re.findall(r"`(x\d)`", verdict)) == {"x2", "x3"}


def test_ard_sentence_needs_a_product_of_stationary_kernels_over_several_columns(additive_regression,
                                                                                periodic_regression):
    for model in (additive_regression[0], periodic_regression[0]):  # SE(a) + SE(b); PER(t) + LIN(t)
        assert "ARD relevances" not in describe(model)
    se = {"variance": 1.0, "lengthscale": 2.0}
    ranges = np.array([4.0, 4.0, 4.0])
    # (an isotropic SE(0, 1) has one lengthscale for both columns: it weighs neither above the other)
    for text in ("SE(0) * LIN(1)", "SE(0) * PER(0)", "SE(0) + SE(1)", "SE(0) * SE(0)", "SE(0) * PER(1)", "SE(0, 1)",
                 "SE(0, 1, 2) * PER(0)"):
        valued = parse(text).map_leaves(lambda leaf: leaf.with_params(
            se if leaf.name == "SE" else from_kernel(to_kernel(leaf), n_features=3).params))
        assert ard_relevances(valued, ranges) == [], text
    product = Base("SE", 0, se) * Base("M32", 1, {"variance": 1.0, "lengthscale": 40.0}) + Base("LIN", 2)
    ((_, relevances),) = ard_relevances(product, ranges)
    assert relevances == pytest.approx({0: 2.0, 1: 0.1})
    text = "\n".join(_ard_lines(product, ["a", "b", "c"], ranges))
    assert "`a` 2, `b` 0.1; `b` is at most nearly linear" in text


def test_classifier_description_reports_ard_relevances(interaction_classifier):
    model, _, _ = interaction_classifier  # SE(glucose) * SE(pedigree)
    assert "ARD relevances (column range / lengthscale) in SE(glucose) * SE(pedigree)" in model.describe()


@pytest.mark.parametrize("weights, sentence", [
    ([1.0, 0.0, 0.0], "predicted held-out rows better than every composite structure"),
    ([0.7, 0.2, 0.1], "carries the largest weight in the stacked prediction"),
])
def test_finalist_text_says_when_a_baseline_wins(weights, sentence):
    ard = parse("SE(0) * SE(1)")
    table = {"structure": ["SE(0) * SE(1)", "SE(0) + LIN(1)", "SE(0) + SE(1)"], "criterion": [-10.0, -9.0, -12.0],
             "loo_log_density": [-20.0, -22.0, -25.0], "weight": weights, "baseline": [True, False, True]}
    text = _finalist_text(SimpleNamespace(finalists_=table), ["a", "b"], 40, ard)
    assert "chosen among 3 finalists" in text and "One ARD kernel" in text and sentence in text
    # a composite winner gets no baseline sentence
    table["baseline"] = [False, False, True]
    assert "One ARD kernel" not in _finalist_text(SimpleNamespace(finalists_=table), ["a", "b"], 40, ard)


@pytest.mark.parametrize("chosen, name", [
    ("SE(0, 1)", "One isotropic kernel (an SE over all columns, one lengthscale for all)"),
    ("LIN(0, 1)", "The linear model (one linear kernel over all columns)"),
])
def test_finalist_text_names_the_multi_column_baselines(chosen, name):
    table = {"structure": [chosen, "SE(0) + LIN(1)"], "criterion": [-10.0, -9.0],
             "loo_log_density": [-20.0, -22.0], "weight": [1.0, 0.0], "baseline": [True, False]}
    text = _finalist_text(SimpleNamespace(finalists_=table), ["a", "b"], 40, parse(chosen))
    assert f"{name} predicted held-out rows better than every composite structure" in text


@pytest.mark.parametrize("chosen, name", [
    ("SE(0)", "The plain smooth model (one SE kernel)"),
    ("LIN(0) + M12(0)", "The random walk with drift (a linear trend plus a Matérn 1/2 process: the forecast starts "
                        "at the last level and keeps the trend's slope)"),
])
def test_finalist_text_names_the_one_column_baseline_that_forecast_best(chosen, name):
    table = {"structure": [chosen, "PER(0) + LIN(0)"], "criterion": [-30.0, -20.0],
             "loo_log_density": [None, None], "forecast_log_density": [-5.0, -9.0], "weight": [1.0, 0.0],
             "baseline": [True, False]}
    text = _finalist_text(SimpleNamespace(finalists_=table), ["t"], 60, parse(chosen))
    assert "forecasts its last 9 rows" in text
    assert f"{name} forecast the series' end better than every structure of the search" in text
    assert "ARD" not in text and "additive" not in text


def test_noise_that_grows_along_the_input_is_decomposed_and_described():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(1.0, 10.0, 120))[:, np.newaxis]
    y = 2.0 * x[:, 0] + rng.normal(0.0, 0.3 * x[:, 0])
    model = CompositionalGPRegressor(grammar=FixedStructureGrammar(parse("LIN(0) + LIN(0) * WN")), max_depth=1,
                                     random_state=0).fit(x, y)
    parts = decompose(model)
    # brute force: the likelihood's noise plus the white-noise term's variance at every training input
    noise_term = [t for t in additive_terms(model.kernel_) if "WhiteNoise" in str(t)]
    assert len(noise_term) == 1
    variances = model.noise_variance_ + noise_term[0].diag(x) * model._y_train_std**2
    np.testing.assert_allclose(parts.noise_variance_range, (variances.min(), variances.max()), rtol=1e-8)
    np.testing.assert_allclose(parts.noise_variance, variances.mean(), rtol=1e-8)
    # the fitted spread follows the truth (0.3 to 3.0 from the smallest to the largest x) within a factor 2
    low, high = np.sqrt(parts.noise_variance_range)
    assert 0.15 < low < 0.6 and 1.5 < high < 6.0
    text = describe(model)
    assert "changes with the inputs" in text and "noise variance is at its lower bound" not in text


def test_the_target_is_called_by_the_name_of_the_series_it_was_fitted_on(tmp_path):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"speed": rng.uniform(0, 5, 40)})
    power = pd.Series(np.sin(frame["speed"].to_numpy()) + 0.1 * rng.normal(size=40), name="power")
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, random_state=0).fit(frame, power)
    assert model.target_name_ == "power"
    text = model.describe()
    assert "variance of power" in text and "variance of the target" not in text
    # a name given by the caller wins
    assert "variance of output" in model.describe(target_name="output")
    if importlib.util.find_spec("matplotlib") is not None:
        assert plot_fit(model).axes[0].get_ylabel() == "power"
    report = write_report(model, frame, power, tmp_path / "report.html", compare=False)
    assert "variance of power" in report.read_text(encoding="utf-8")
    # a refit on plain arrays forgets the name; an unnamed Series has none either
    model.fit(frame.to_numpy(), power.to_numpy())
    assert model.target_name_ is None and "variance of the target" in model.describe()
    classifier = CompositionalGPClassifier(base_kernels=("SE",), max_depth=1, random_state=0)
    classifier.fit(frame, pd.Series(power.to_numpy() > 0, name="positive"))
    assert classifier.target_name_ == "positive"


def test_the_comparison_table_keeps_a_name_with_a_pipe_in_its_cell():
    from skgpsearch.inspection import comparison_table

    comparison = {"metrics": ["RMSE", "R²"], "rows": [
        {"method": 'GP SE("a|b", c)', "RMSE": 0.5, "RMSE std": 0.1, "R²": 0.9, "R² std": 0.01, "seconds": 1.0},
        {"method": "RandomForest (500 trees)", "RMSE": 0.7, "RMSE std": 0.2, "R² std": 0.02, "R²": 0.8,
         "seconds": 2.0}]}
    header, _, gp_row, forest_row = comparison_table(comparison).splitlines()
    # the row's cells split on unescaped pipes only: as many as the header's (the name had made five of four)
    cells = [len(re.split(r"(?<!\\)\|", line)) for line in (header, gp_row, forest_row)]
    assert cells == [cells[0]] * 3 and '"a\\|b"' in gp_row


def test_the_forecast_table_keeps_a_name_with_a_pipe_in_its_cell():
    forecast = {"rows": [{"method": 'GP SE("t|months")', "RMSE": 0.33, "MNLP": 0.93, "coverage": 1.0},
                         {"method": "RandomForest (500 trees)", "RMSE": 0.7, "MNLP": np.nan, "coverage": np.nan}]}
    header, _, gp_row, forest_row = forecast_table(forecast).splitlines()
    cells = [len(re.split(r"(?<!\\)\|", line)) for line in (header, gp_row, forest_row)]
    assert cells == [cells[0]] * 3 and '"t\\|months"' in gp_row and "| 100 % |" in gp_row
    assert forest_row.endswith("| - | - |")


def test_a_robust_classifier_is_described_on_the_probit_scale_with_its_rate_of_wrong_labels():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(100, 1))
    y = (X[:, 0] > 0).astype(int)
    flipped = rng.random(100) < 0.15
    y[flipped] = 1 - y[flipped]
    model = CompositionalGPClassifier(likelihood="robust", max_depth=1, random_state=0).fit(X, y)
    text = model.describe()
    rate = model.outlier_rate_
    assert rate > 0.05  # (a rate at its bound of 1e-4 reads "under 0.01 %")
    # p(y | f) = ε/2 + (1 - ε) Φ(y f): ε of the labels are coin flips, half of them wrong ("robust scale" and
    # "12 % ... label noise (outliers)" had named neither the link nor the rate of wrong labels)
    assert "on the probit scale" in text and "is the probit link of the latent function (mixed with" in text
    assert "robust scale" not in text and "robust link" not in text
    assert re.search(r"treated as random \(label noise, outliers\): about [0-9.]+ % on the wrong class", text)
    stated = float(re.search(r"about ([0-9.]+) % on the wrong class", text).group(1))
    assert stated == pytest.approx(100 * rate / 2, rel=0.06)
