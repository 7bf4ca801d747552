"""Starting points of candidate fits: each start rule with a case it fixes."""

import math

import numpy as np
import pytest

from skgpsearch import CompositionalGPRegressor
from skgpsearch._search._records import CandidateRecord
from scipy.signal import lombscargle

from skgpsearch._engine._periodogram import (_frequency_grid, _grid, dominant_period, lomb_scargle_power,
                                               period_candidates, periodogram_peaks, smooth_trend)
from skgpsearch._engine._exact import GPPosterior, RegressionObjective
from skgpsearch._engine._optimizer import optimize_hyperparameters
from skgpsearch._search._starts import (
    NESTED_SHARE,
    RQ_ALPHAS,
    TAKE_OVER_SHARES,
    WIDENED_PRODUCT_FACTORS,
    StartHints,
    evaluate_starts,
    leaf_options,
    lengthscale_scales,
    profile_starts,
    select_raw_and_profiled,
    select_starts,
    start_pool,
)
from skgpsearch.criteria import get_criterion
from skgpsearch.grammar import CompositionalGrammar, parse
from skgpsearch.kernels import DataSummary, default_hyperparameters, to_kernel


def _fitter(X, y):
    fitter = CompositionalGPRegressor(random_state=0)._model_fitter(X, y, get_criterion("lml"))
    return fitter.y, fitter.summary, fitter.candidate_fitter


def _child(parent_structure, text, n_features=1):
    """The grammar's child of a fitted parent equal to ``text`` (carrying the parent's values)."""
    children = CompositionalGrammar().expand(parent_structure, n_features)
    return next(c for c in children if c == parse(text))


def _period(structure):
    return next(leaf.params["period"] for leaf in structure.leaves if leaf.name == "PER")


# -- periodogram ---------------------------------------------------------------------------


def test_periodogram_peaks_ranks_two_cycles_by_power():
    x = np.linspace(0, 30, 400)
    r = 2.0 * np.sin(2 * np.pi * x / 1.7) + 0.7 * np.sin(2 * np.pi * x / 5.0)
    peaks = periodogram_peaks(x, r, 0.2, 15.0, n_peaks=2)
    assert peaks[0] == pytest.approx(1.7, rel=0.02)
    assert peaks[1] == pytest.approx(5.0, rel=0.03)
    assert periodogram_peaks(x, np.ones_like(x), 0.2, 15.0) == []


def _decimal_days(first_year, n_days):
    """Days as decimal years of calendar years of 365 and 366 days, rounded to 6 decimals as in a CSV file."""
    years, days = [], []
    year = first_year
    while len(days) < n_days:
        length = 366 if year % 4 == 0 else 365
        days += [year + d / length for d in range(length)]
        year += 1
    return np.round(np.array(days[:n_days]), 6)


GRIDS = {
    "regular": np.arange(300) / 12.0 + 1949.0,
    "rounded months": np.round(1949 + (np.arange(300) + 0.5) / 12.0, 6),
    "gaps and a repeat": np.concatenate([np.delete(np.arange(400.0), [5, 6, 100, 250]), [50.0]]),
    "days of leap years": _decimal_days(1981, 900),
    "hours with gaps": np.delete(2004.9 + np.arange(1000) / (24 * 365.25), np.arange(300, 330)),
}


@pytest.mark.parametrize("name", list(GRIDS))
def test_the_periodogram_on_a_grid_is_scipys(name):
    # chirp-z transforms over the grid (with a series in the offsets from it) against scipy's sum over every point
    x = GRIDS[name]
    rng = np.random.default_rng(0)
    span = np.ptp(x)
    r = np.sin(2 * np.pi * x / (span / 7.3)) + 0.5 * np.cos(2 * np.pi * x / (span / 31.7)) + 0.3 * rng.normal(size=x.size)
    assert _grid(x) is not None
    step = np.diff(np.unique(x)).min()
    for low, high, most in ((3 * step, span / 2, 4000), (2.5 * step, span, 257)):
        freqs = _frequency_grid(x, low, high, most)
        expected = lombscargle(x, r - r.mean(), 2 * np.pi * freqs)
        power = lomb_scargle_power(x, r - r.mean(), freqs)
        assert np.max(np.abs(power - expected)) < 1e-9 * expected.max()


def test_the_periodogram_off_a_grid_is_scipys_own():
    x = np.sort(np.random.default_rng(1).uniform(0, 10, 200))
    r = np.sin(2 * np.pi * x / 1.3)
    assert _grid(x) is None  # its smallest gap would need more than 8 slots per input
    freqs = _frequency_grid(x, 0.1, 5.0, 4000)
    assert np.array_equal(lomb_scargle_power(x, r, freqs), lombscargle(x, r, 2 * np.pi * freqs))


def test_smooth_trend_keeps_the_trend_and_removes_a_short_cycle():
    x = np.arange(240) / 12.0
    trend = 0.005 * (x - 10) ** 3
    cycle = np.sin(2 * np.pi * x)
    smooth = smooth_trend(x, trend + cycle, bandwidth=np.ptp(x) / 20)
    interior = slice(24, -24)  # the smoother is biased at the ends
    assert np.max(np.abs(smooth - trend)[interior]) < 0.1
    assert np.std((trend + cycle - smooth)[interior] - cycle[interior]) < 0.1  # cycle sd: 0.71


CURVED = np.arange(240) / 12.0  # 20 years of monthly data


def _curved_trend_with_cycle(seed=0):
    rng = np.random.default_rng(seed)
    x = CURVED
    trend = 0.005 * (x - 10) ** 3 + 2.0 * np.sin(x / 3.0)
    return x, trend + 0.5 * np.sin(2 * np.pi * x) + 0.1 * rng.normal(size=x.size)


def test_period_candidates_find_a_cycle_that_a_curved_trend_hides_from_a_linear_detrend():
    x, y = _curved_trend_with_cycle()
    centred = x - x.mean()
    line = y.mean() + centred * (centred @ (y - y.mean())) / (centred @ centred)
    # the failure mode: a straight line leaves the curvature, whose leakage dominates
    assert dominant_period(x, y - line, 2 / 12, 20.0) > 3.0
    candidates = period_candidates(x, y, y, 2 / 12, 20.0, typical_gap=1 / 12)
    assert any(abs(p - 1.0) < 0.02 for p in candidates[:5])
    assert all(2 / 12 <= p <= 20.0 for p in candidates)
    # no near-duplicates
    ordered = np.sort(candidates)
    assert np.all(np.diff(ordered) / ordered[:-1] > 0.03)


def test_period_candidates_include_harmonics_and_a_grid():
    x = np.linspace(0, 20, 300)
    y = np.sin(2 * np.pi * x / 2.0)
    candidates = period_candidates(x, y, y, 0.1, 20.0, typical_gap=x[1] - x[0])
    for expected in (2.0, 1.0, 4.0, 6.0):
        assert any(abs(p - expected) < 0.05 * expected for p in candidates)
    # the grid reaches from 2 x the spacing to half the range
    assert min(candidates) == pytest.approx(2 * (x[1] - x[0]), rel=0.05)
    assert max(candidates) == pytest.approx(10.0, rel=0.05)


# -- start pool ------------------------------------------------------------------------------


def test_lengthscale_options_cover_short_medium_long_and_rq_alpha_small_and_large():
    x = np.arange(240) / 12.0
    summary = DataSummary.from_data(x[:, None], np.sin(x))
    medium, short, shortest, long = lengthscale_scales((0,), summary)
    assert medium == pytest.approx(np.std(x))
    assert short == pytest.approx(np.std(x) / 8)
    assert shortest == pytest.approx(2 / 12)  # two spacings
    assert long == pytest.approx(2 * np.ptp(x))
    # starts closer than a factor 2 are one start
    dense = DataSummary.from_data(np.linspace(0, 1, 5)[:, None])
    assert len(lengthscale_scales((0,), dense)) == 3
    options = leaf_options(parse("RQ(0)"), summary)
    assert {round(o["lengthscale"], 6) for o in options} == {round(v, 6) for v in (medium, short, shortest, long)}
    alphas = {o["alpha"] for o in options}
    assert min(alphas) < 1 < max(alphas) and alphas == set(RQ_ALPHAS)
    # every option is a complete set of values, the default first
    defaults = {k: v for k, (v, _) in default_hyperparameters("RQ", (0,), summary).items()}
    assert options[0] == defaults


def test_a_product_over_many_columns_also_starts_with_lengthscales_widened_to_correlate_like_one_factor():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 24))
    summary = DataSummary.from_data(X, rng.normal(size=200))
    product = parse(" * ".join(f"SE({j})" for j in range(24)))

    def median_correlation(expr):
        K = to_kernel(expr, summary=summary)(X)
        return float(np.median(K[np.triu_indices(len(X), 1)]) / K[0, 0])

    cold = [start.expr for start in start_pool(product, summary) if start.kind == "cold"]
    defaults = [leaf.params["lengthscale"] for leaf in cold[0].leaves]
    widened = [expr for expr in cold
               if np.allclose([leaf.params["lengthscale"] for leaf in expr.leaves], np.sqrt(24) * np.array(defaults))]
    assert len(widened) == 1
    # two typical points of 24 standard normal columns: e^-24 at the columns' spreads, e^-1 widened
    assert max(median_correlation(expr) for expr in cold if expr is not widened[0]) < 1e-6
    assert 0.2 < median_correlation(widened[0]) < 0.6
    # fewer factors than WIDENED_PRODUCT_FACTORS, or a sum, have no widened start
    for text in (" * ".join(f"SE({j})" for j in range(WIDENED_PRODUCT_FACTORS - 1)), "SE(0) + SE(1) + SE(2)"):
        expr = parse(text)
        cold = [start.expr for start in start_pool(expr, summary) if start.kind == "cold"]
        first = np.array([leaf.params["lengthscale"] for leaf in cold[0].leaves])
        assert not any(np.allclose([leaf.params["lengthscale"] for leaf in e.leaves], math.sqrt(len(first)) * first)
                       for e in cold)
    # in a sum, each large product is widened by its own size; the lone term is not
    mixed = parse("SE(23) + " + " * ".join(f"SE({j})" for j in range(20)))
    cold = [start.expr for start in start_pool(mixed, summary) if start.kind == "cold"]
    lengthscales = np.array([[leaf.params["lengthscale"] for leaf in e.leaves] for e in cold])
    lone = [i for i, leaf in enumerate(cold[0].leaves) if leaf.columns == (23,)]
    ratios = lengthscales[-1] / lengthscales[0]
    assert np.allclose(np.delete(ratios, lone), math.sqrt(20)) and np.allclose(ratios[lone], 1.0)


def test_new_additive_term_starts_with_shares_of_the_residual_variance():
    x = np.linspace(0, 10, 50)
    summary = DataSummary.from_data(x[:, None], np.sin(x))
    parent = parse("SE(0)").map_leaves(lambda leaf: leaf.with_params({"variance": 0.8, "lengthscale": 2.0}))
    child = _child(parent, "SE(0) + PER(0)")
    hints = StartHints(periods={0: [1.5, 3.0]}, residual_variance=0.3)
    pool = start_pool(child, summary, hints)

    def per_leaf(start):
        return next(leaf for leaf in start.expr.leaves if leaf.name == "PER")

    def se_leaf(start):
        return next(leaf for leaf in start.expr.leaves if leaf.name == "SE")

    nested = [s for s in pool if s.kind == "nested"]
    assert len(nested) == 1
    assert per_leaf(nested[0]).params["variance"] == pytest.approx(NESTED_SHARE * 0.3)
    warm = [s for s in pool if s.kind == "warm"]
    # every candidate period at every take-over share, the parent's kernel unchanged
    assert {(round(per_leaf(s).params["period"], 6), round(per_leaf(s).params["variance"], 6)) for s in warm} == {
        (p, round(share * 0.3, 6)) for p in (1.5, 3.0) for share in TAKE_OVER_SHARES
    }
    assert all(se_leaf(s).params == {"variance": 0.8, "lengthscale": 2.0} for s in warm)
    assert sorted({round(s.noise_factor, 6) for s in warm}) == sorted(round(1 - s, 6) for s in TAKE_OVER_SHARES)
    # cold starts: data-aware values for the parent's kernel too, varied one kernel at a time
    cold = [s for s in pool if s.kind == "cold"]
    assert {round(per_leaf(s).params["period"], 6) for s in cold} == {1.5, 3.0}
    scales = {round(v, 6) for v in lengthscale_scales((0,), summary)}
    assert {round(se_leaf(s).params["lengthscale"], 6) for s in cold} == scales
    assert all(se_leaf(s).params["variance"] == pytest.approx(summary.target_variance) for s in cold)


def test_a_pool_without_cold_starts_is_the_full_pools_other_starts_in_order():
    x = np.linspace(0, 10, 80)
    summary = DataSummary.from_data(x[:, None], np.sin(x))
    parent = parse("SE(0) + PER(0)").map_leaves(
        lambda leaf: leaf.with_params({"variance": 0.8, "lengthscale": 2.0} if leaf.name == "SE"
                                      else {"variance": 0.5, "lengthscale": 1.0, "period": 3.0}))
    hints = StartHints(periods={0: [1.5, 3.0]}, residual_variance=0.3, changes={0: [4.0]})
    children = CompositionalGrammar(change_operators=("CP", "CW")).expand(parent, 1)
    with_changes = [c for c in children if c.changes]
    assert with_changes and len(children) > len(with_changes)
    for child in children[:6] + with_changes[:6] + [parse("SE(0) * PER(0)"), parent]:
        full = start_pool(child, summary, hints)
        without_cold = start_pool(child, summary, hints, cold=False)
        expected = [s for s in full if s.kind != "cold"]
        assert len(expected) > 0 if child.has_values else expected == []
        assert [(s.expr, s.kind, s.noise_factor, s.priority) for s in without_cold] == \
            [(s.expr, s.kind, s.noise_factor, s.priority) for s in expected]
        assert [[leaf.params for leaf in s.expr.leaves] for s in without_cold] == \
            [[leaf.params for leaf in s.expr.leaves] for s in expected]
        assert [[node.params for node in s.expr.changes] for s in without_cold] == \
            [[node.params for node in s.expr.changes] for s in expected]


def test_a_structure_with_every_value_fitted_starts_from_its_own_values():
    X = np.linspace(0, 5, 50)[:, None]
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 0]
    y_fit, summary, fitter = _fitter(X, y)
    fitted = fitter(parse("SE(0) * LIN(0)"), X, y_fit, 0).structure
    pool = start_pool(fitted, summary)
    assert pool[0].kind == "warm" and pool[0].expr == fitted
    assert [leaf.params for leaf in pool[0].expr.leaves] == [leaf.params for leaf in fitted.leaves]
    # refitting on other rows from those values reaches at least what the values give there
    rows = np.arange(0, 50, 2)
    objective = RegressionObjective(to_kernel(fitted, summary=summary), X[rows], y_fit[rows], fitter.noise_bounds)
    at_values = objective(np.append(objective.kernel.theta, math.log(fitter.default_noise())))
    refit = fitter(fitted, X[rows], y_fit[rows], 0)
    assert refit.log_marginal_likelihood + rows.size * math.log(fitter.y_std) >= at_values - 1e-6


def test_an_interpolating_parent_still_leaves_variance_for_a_new_term():
    # a noise-free smooth kernel interpolates a cycle: its training residuals vanish, but what
    # it fails to predict of each point from the others (leave-one-out) does not
    x = np.linspace(0, 10, 120)
    y = np.sin(2 * np.pi * x / 0.9) + 0.2 * x
    X = x[:, None]
    y_fit, summary, fitter = _fitter(X, y)
    structure = parse("SE(0)").map_leaves(lambda leaf: leaf.with_params({"variance": 1.0, "lengthscale": 0.3}))
    parent = CandidateRecord(structure, noise_variance=1e-6)
    training = y_fit - GPPosterior(to_kernel(structure, summary=summary), 1e-6, X, y_fit).predict(X)[0]
    assert np.mean(training**2) < 1e-4
    hints = fitter.start_hints(parent, X, y_fit, [0])
    assert hints.residual_variance > 100 * np.mean(training**2)
    # the cycle is among the first candidate periods (from the smoothly detrended data)
    assert any(period == pytest.approx(0.9, rel=0.05) for period in hints.periods[0][:2])


def test_select_starts_keeps_nested_and_best_warm_and_cold():
    kinds = ["nested", "warm", "warm", "warm", "cold", "cold", "cold"]

    class S:
        def __init__(self, kind, priority=False):
            self.kind = kind
            self.priority = priority

    pool = [S(k) for k in kinds]
    values = [1.0, 5.0, -np.inf, 7.0, 0.0, 3.0, 2.0]
    assert select_starts(pool, values) == [0, 3, 1, 5, 6]
    # priority starts (top candidate periods) are optimised whatever their start value
    pool[4].priority = True
    assert select_starts(pool, values) == [0, 3, 1, 5, 6, 4]
    # without warm starts the best cold ones fill their places
    assert select_starts([S("cold")] * 4, [1.0, 4.0, 3.0, 2.0]) == [1, 2, 3, 0]


@pytest.mark.parametrize("text", ["SE(0) * PER(0) + LIN(1)", "RQ(0) + SE(0) * SE(1)", "LIN(0) * LIN(0) + M32(1)"])
def test_amplitude_profile_is_the_best_overall_scale(text):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 5, size=(60, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=60)
    summary = DataSummary.from_data(X, y)
    objective = RegressionObjective(to_kernel(parse(text), summary=summary), X, y, (1e-6, 10.0))
    theta = np.append(objective.kernel.theta, math.log(0.05))
    # shifting the amplitudes and the noise by log s multiplies the whole covariance by s
    shifted = theta.copy()
    shifted[objective.amplitudes] += math.log(3.0)
    shifted[-1] += math.log(3.0)
    np.testing.assert_allclose(objective.covariance(shifted), 3.0 * objective.covariance(theta), rtol=1e-10)

    scaled, scaled_value, value = objective.profile_amplitude(theta)
    assert value == pytest.approx(objective(theta), rel=1e-10)
    assert scaled_value == pytest.approx(objective(scaled), rel=1e-10)
    # brute force along the scale line: no other overall scale is better
    steps = np.linspace(-4.0, 4.0, 161)
    values = []
    for step in steps:
        candidate = theta.copy()
        candidate[objective.amplitudes] += step
        candidate[-1] += step
        values.append(objective(candidate))
    assert max(values) <= scaled_value + 1e-9
    assert scaled_value >= value


def test_profiled_starts_and_the_union_of_both_rankings():
    class S:
        def __init__(self, kind, priority=False):
            self.kind = kind
            self.priority = priority

    pool = [S("nested"), S("warm"), S("warm"), S("cold"), S("cold", priority=True), S("cold")]
    thetas = [np.full(2, float(i)) for i in range(6)]
    profiled = [t + 10.0 for t in thetas]
    values = [0.0, 1.0, 5.0, 3.0, -1.0, 2.0]
    profiled_values = [9.0, 6.0, 1.0, 0.0, -1.0, 8.0]
    starts = select_raw_and_profiled(pool, thetas, values, profiled, profiled_values)
    # raw ranking: nested, best warm (2), best cold (3), the priority start (4); profiled: best
    # warm (1), best cold (5), the priority start (4), never the nested one
    expected = [thetas[0], thetas[2], thetas[3], thetas[4], profiled[1], profiled[5], profiled[4]]
    assert len(starts) == len(expected)
    for got, want in zip(starts, expected):
        np.testing.assert_array_equal(got, want)
    # a start chosen by both rankings at the same point is optimised once
    same = select_raw_and_profiled(pool, thetas, values, thetas, values)
    assert len(same) == len({tuple(t) for t in same})

    # profile_starts on a real objective: the value at the start and at its rescaled point
    X = np.linspace(0, 1, 20)[:, None]
    y = np.sin(6 * X[:, 0])
    objective = RegressionObjective(to_kernel(parse("SE(0)"), summary=DataSummary.from_data(X, y)), X, y, (1e-6, 10.0))
    good = np.array([0.0, math.log(0.3), math.log(0.01)])
    raw, prof, points = profile_starts(objective, [good])
    assert raw[0] == pytest.approx(objective(good))
    assert prof[0] == pytest.approx(objective(points[0])) and prof[0] >= raw[0]
    # past a deadline only the first start is evaluated (each costs a Cholesky of all rows; a pool of them had run
    # a time-budgeted fit seconds past its deadline)
    other = good + 0.5
    raw, prof, points = profile_starts(objective, [good, other], deadline=0.0)
    assert raw[0] == pytest.approx(objective(good)) and raw[1] == prof[1] == -math.inf
    assert evaluate_starts(objective, [good, other], deadline=0.0) == [pytest.approx(objective(good)), -math.inf]
    assert evaluate_starts(objective, [good, other])[1] == pytest.approx(objective(other))


# -- fits that the start rules fix -------------------------------------------------------------


def test_periodic_term_is_found_where_rq_absorbed_the_cycle():
    x, y = _curved_trend_with_cycle()
    X = x[:, None]
    y_fit, _, fitter = _fitter(X, y)
    parent = fitter(parse("RQ(0)"), X, y_fit, 0)
    child = _child(parent.structure, "RQ(0) + PER(0)")
    hints = fitter.start_hints(parent, X, y_fit, [0])
    record = fitter(child, X, y_fit, 0, parent.noise_variance, hints)
    assert record.status == "ok"
    assert _period(record.structure) == pytest.approx(1.0, rel=0.01)
    # a clear margin: the cycle is worth far more than any complexity penalty
    assert record.log_marginal_likelihood > parent.log_marginal_likelihood + 50


def test_periodic_fit_with_irregular_inputs_and_near_duplicates():
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 12, 150))
    x[10] = x[9] + 1e-4  # a smallest gap far below the typical spacing
    y = np.sin(2 * np.pi * x / 1.3) + 0.1 * rng.normal(size=x.size)
    X = x[:, None]
    y_fit, summary, fitter = _fitter(X, y)
    low, _ = default_hyperparameters("PER", (0,), summary)["period"][1]
    assert low == pytest.approx(2 * np.median(np.diff(np.unique(x))))
    record = fitter(parse("PER(0)"), X, y_fit, 0)
    assert _period(record.structure) == pytest.approx(1.3, rel=0.01)


def test_smooth_term_takes_over_variance_from_a_periodic_parent():
    rng = np.random.default_rng(1)
    x = np.linspace(0, 12, 200)
    y = np.sin(2 * np.pi * x / 1.5) + 1.5 * np.sin(x / 2.0) + 0.05 * rng.normal(size=x.size)
    X = x[:, None]
    y_fit, summary, fitter = _fitter(X, y)
    parent = fitter(parse("PER(0)"), X, y_fit, 0)
    child = _child(parent.structure, "SE(0) + PER(0)")
    record = fitter(child, X, y_fit, 0, parent.noise_variance, fitter.start_hints(parent, X, y_fit, [0]))
    assert _period(record.structure) == pytest.approx(1.5, rel=0.01)
    assert record.log_marginal_likelihood > parent.log_marginal_likelihood + 50
    # independent check: no start of a plain multi-start loop does better
    kernel = to_kernel(parse("SE(0) + PER(0)"), summary=summary)
    objective = RegressionObjective(kernel, X, y_fit, fitter.noise_bounds)
    rng = np.random.default_rng(0)
    best = -np.inf
    for _ in range(10):
        theta0 = rng.uniform(objective.bounds[:, 0], objective.bounds[:, 1])
        _, value, _ = optimize_hyperparameters(objective, [theta0])
        best = max(best, value)
    record_fit_scale = record.log_marginal_likelihood  # y_std is 1-ish; compare on the fit scale
    shift = len(y) * math.log(np.std(y))
    assert record_fit_scale + shift >= best - 0.1


def test_child_never_ends_below_its_parent():
    rng = np.random.default_rng(2)
    x = np.linspace(0, 10, 120)
    y = np.sin(x) + 0.2 * rng.normal(size=x.size)
    X = x[:, None]
    y_fit, _, fitter = _fitter(X, y)
    parent = fitter(parse("SE(0)"), X, y_fit, 0)
    hints = fitter.start_hints(parent, X, y_fit, [0])
    # every child S + B of the grammar (the existing test_regressor check covers two of them)
    additive = [c for c in CompositionalGrammar(["SE", "PER", "LIN"]).expand(parent.structure, 1) if c.n_terms > 1]
    assert len(additive) >= 3
    for child in additive:
        record = fitter(child, X, y_fit, 0, parent.noise_variance, hints)
        assert record.status == "ok"
        assert record.log_marginal_likelihood >= parent.log_marginal_likelihood - 1e-3
