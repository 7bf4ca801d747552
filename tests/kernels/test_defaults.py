"""Tests of the data-aware defaults (skgpsearch.kernels._defaults)."""

import numpy as np
import pytest

from skgpsearch.kernels import DataSummary, default_hyperparameters, looks_like_time_index, unit_amplitude

KINDS = ["SE", "RQ", "PER", "CPER", "LIN", "M12", "M32", "M52", "C", "WN"]
EXPECTED_KEYS = {
    "SE": {"variance", "lengthscale"},
    "M12": {"variance", "lengthscale"},
    "M32": {"variance", "lengthscale"},
    "M52": {"variance", "lengthscale"},
    "RQ": {"variance", "lengthscale", "alpha"},
    "PER": {"variance", "lengthscale", "period"},
    "CPER": {"variance", "lengthscale", "period"},
    "LIN": {"variance", "offset"},
    "C": {"variance"},
    "WN": {"variance"},
}
NO_COLUMNS = {"C", "WN"}

# col 0: [0, 1, 3, 3, 7]: mean 2.8, population std 2.4, gaps 1, 2, 4; col 1 constant.
X_KNOWN = np.array([[0.0, 5.0], [1.0, 5.0], [3.0, 5.0], [3.0, 5.0], [7.0, 5.0]])
Y_KNOWN = np.array([1.0, 2.0, 3.0, 4.0, 5.0])  # population variance 2


# --------------------------------------------------------------------------
# DataSummary
# --------------------------------------------------------------------------


def test_from_data_known_values():
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    np.testing.assert_allclose(s.mean, [2.8, 5.0])
    np.testing.assert_allclose(s.std, [2.4, 0.0], atol=1e-15)
    np.testing.assert_array_equal(s.minimum, [0.0, 5.0])
    np.testing.assert_array_equal(s.maximum, [7.0, 5.0])
    assert s.min_gap[0] == 1.0
    assert np.isnan(s.min_gap[1])  # a single distinct value has no gap
    assert s.target_variance == pytest.approx(2.0)
    assert s.n_features == 2


def test_from_data_matches_numpy_on_random_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * [1.0, 10.0, 0.01]
    y = rng.normal(size=40) * 3
    s = DataSummary.from_data(X, y)
    np.testing.assert_allclose(s.mean, X.mean(0))
    np.testing.assert_allclose(s.std, X.std(0))
    np.testing.assert_allclose(s.minimum, X.min(0))
    np.testing.assert_allclose(s.maximum, X.max(0))
    for j in range(3):
        xs = np.sort(X[:, j])
        assert s.min_gap[j] == pytest.approx(np.min(xs[1:] - xs[:-1]))
    assert s.target_variance == pytest.approx(np.var(y))


def test_from_data_target_variance_fallbacks():
    assert DataSummary.from_data(X_KNOWN).target_variance == 1.0
    assert DataSummary.from_data(X_KNOWN, np.full(5, 3.0)).target_variance == 1.0
    assert DataSummary.from_data(X_KNOWN[:1], [2.0]).target_variance == 1.0


def test_from_data_one_dimensional_X_is_one_column():
    s = DataSummary.from_data(np.array([3.0, 1.0, 2.0]))
    assert s.n_features == 1
    np.testing.assert_allclose(s.mean, [2.0])
    np.testing.assert_allclose(s.min_gap, [1.0])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_from_data_non_finite_X_raises(bad):
    X = X_KNOWN.copy()
    X[2, 0] = bad
    with pytest.raises(ValueError, match="NaN"):
        DataSummary.from_data(X, Y_KNOWN)


def test_from_data_non_finite_y_raises():
    with pytest.raises(ValueError, match="NaN"):
        DataSummary.from_data(X_KNOWN, [1.0, np.nan, 3.0, 4.0, 5.0])


@pytest.mark.parametrize("X", [np.empty((0, 2)), np.empty((3, 0)), np.zeros((2, 2, 2))])
def test_from_data_bad_shape_raises(X):
    with pytest.raises(ValueError):
        DataSummary.from_data(X)


def test_unit_summary():
    s = DataSummary.unit(3)
    assert s.n_features == 3
    np.testing.assert_array_equal(s.mean, 0.0)
    np.testing.assert_array_equal(s.std, 1.0)
    assert s.target_variance == 1.0


# --------------------------------------------------------------------------
# default_hyperparameters: every initial value strictly inside its bounds
# --------------------------------------------------------------------------


def _summaries():
    rng = np.random.default_rng(1)
    skewed = np.zeros((200, 1))
    skewed[-1] = 1.0  # std ~0.07 but smallest gap 1
    return {
        "regular": DataSummary.from_data(rng.uniform(0, 10, (25, 2)), rng.normal(size=25)),
        "grid": DataSummary.from_data(np.column_stack([np.arange(20.0), np.arange(20.0) ** 2])),
        "constant-column": DataSummary.from_data(X_KNOWN, Y_KNOWN),
        "all-constant": DataSummary.from_data(np.full((6, 2), -4.0), np.full(6, 2.0)),
        "n=1": DataSummary.from_data(np.array([[0.3, -2.0]]), [1.5]),
        "n=2": DataSummary.from_data(np.array([[0.0, 1.0], [1.0, 1.0]]), [0.0, 1.0]),
        "n=3-regular": DataSummary.from_data(np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 7.0]])),  # 2 x gap == range
        "n=3-duplicates": DataSummary.from_data(np.array([[2.0, 0.0], [2.0, 0.0], [2.5, 0.0]]), [1.0, 1.0, 2.0]),
        "skewed": DataSummary.from_data(np.column_stack([skewed[:, 0], np.linspace(0, 1, 200)])),
        "huge-scale": DataSummary.from_data(rng.normal(size=(10, 2)) * 1e6, rng.normal(size=10) * 1e4),
        "tiny-scale": DataSummary.from_data(rng.normal(size=(10, 2)) * 1e-6, rng.normal(size=10) * 1e-4),
        "unit": DataSummary.unit(2),
    }


SUMMARIES = _summaries()


def _column_sets(kind):
    if kind in NO_COLUMNS:
        return [()]
    if kind == "PER":
        return [(0,), (1,)]
    return [(0,), (1,), (0, 1)]


@pytest.mark.parametrize("summary_id", list(SUMMARIES))
@pytest.mark.parametrize("kind", KINDS)
def test_initial_values_strictly_inside_bounds(kind, summary_id):
    summary = SUMMARIES[summary_id]
    for columns in _column_sets(kind):
        out = default_hyperparameters(kind, columns, summary)
        assert set(out) == EXPECTED_KEYS[kind]
        for name, (init, (low, high)) in out.items():
            init, low, high = (np.asarray(a, float) for a in (init, low, high))
            assert np.all(np.isfinite([init, low, high])), (name, columns)
            assert np.all(low < init) and np.all(init < high), (name, columns, init, low, high)
            if name != "offset":  # log-space hyperparameters must be positive
                assert np.all(low > 0), (name, columns, low)
            else:
                assert init.shape == low.shape == high.shape == (len(columns),)


def test_variance_defaults():
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)  # target variance 2
    for kind in ("SE", "RQ", "PER", "M12", "M32", "M52", "C"):
        init, (low, high) = default_hyperparameters(kind, () if kind == "C" else (0,), s)["variance"]
        assert init == pytest.approx(2.0)
        assert (low, high) == pytest.approx((2e-6, 2e4))
    init, (low, high) = default_hyperparameters("WN", (), s)["variance"]
    assert init == pytest.approx(0.2)
    assert (low, high) == pytest.approx((2e-6, 20.0))


def test_lengthscale_defaults():
    # Documented bounds: [half the smallest gap, 100 x range], widened only if the
    # initial value would not lie strictly inside. Column 0: std 2.4, smallest gap 1,
    # range 7, so 0.5 < 2.4 < 700 needs no widening.
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    for kind in ("SE", "RQ", "M12", "M32", "M52"):
        init, bounds = default_hyperparameters(kind, (0,), s)["lengthscale"]
        assert init == pytest.approx(2.4)
        assert bounds == pytest.approx((0.5, 700.0))


def test_lengthscale_on_two_columns_uses_euclidean_norms():
    X = np.column_stack([np.arange(6.0), 2 * np.arange(6.0)])  # std s and 2s, gaps 1 and 2, ranges 5 and 10
    s = DataSummary.from_data(X)
    init, bounds = default_hyperparameters("SE", (0, 1), s)["lengthscale"]
    assert init == pytest.approx(np.sqrt(X[:, 0].var() + X[:, 1].var()))
    assert bounds[1] == pytest.approx(100 * np.sqrt(5.0**2 + 10.0**2))  # 100 x Euclidean range
    assert bounds[0] <= 0.5  # at most half the smallest gap of the two columns


def test_rq_alpha_default():
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    initial, (low, high) = default_hyperparameters("RQ", (0,), s)["alpha"]
    assert initial == 1.0 and high == 1e3
    # at its heaviest-tailed the RQ still forgets: with alpha -> 0 it tends to a constant kernel (a
    # trend that never reverts in the data and reverts at once beyond them, measured on co2)
    at_bound = (1 + 10.0**2 / (2 * low)) ** -low  # correlation 10 lengthscales apart
    assert 0.4 < at_bound < 0.6


def test_periodic_period_bounds_nyquist_to_range():
    x = np.arange(0.0, 10.0, 0.5)  # sampling interval 0.5, range 9.5
    s = DataSummary.from_data(x[:, None], np.sin(x))
    init, (low, high) = default_hyperparameters("PER", (0,), s)["period"]
    assert low == pytest.approx(1.0)
    assert high == pytest.approx(9.5)
    assert init == pytest.approx(np.sqrt(9.5))
    assert default_hyperparameters("PER", (0,), s)["lengthscale"] == (1.0, (0.05, 50.0))

    # Irregular sampling: the median interval counts (gaps 1, 2, 4), not the smallest one, which
    # would admit periods short enough to fit noise (three gaps are too few to show a grid).
    s = DataSummary.from_data(X_KNOWN)
    _, (low, high) = default_hyperparameters("PER", (0,), s)["period"]
    assert (low, high) == pytest.approx((4.0, 7.0))
    # two cycles asked of the data: at most half the range
    s = DataSummary.from_data(x[:, None], np.sin(x), min_cycles=2.0)
    init, (low, high) = default_hyperparameters("PER", (0,), s)["period"]
    assert (low, high) == pytest.approx((1.0, 4.75)) and init == pytest.approx(np.sqrt(4.75))


def _period_low(x):
    return default_hyperparameters("PER", (0,), DataSummary.from_data(np.asarray(x)[:, None]))["period"][1][0]


def test_days_sampled_at_random_admit_periods_down_to_two_days():
    # a quarter of the days of four years, in years as the shared births series has them: the median gap
    # is about 4 days, but a weekly cycle shows, as the values lie on a grid of one day
    rng = np.random.default_rng(0)
    days = np.sort(rng.choice(4 * 365, size=365, replace=False))
    assert np.median(np.diff(days)) >= 3
    assert _period_low(1977 + days / 365.0) == pytest.approx(2 / 365.0)
    assert _period_low(days.astype(float)) == pytest.approx(2.0)
    # in decimal years with each year's own length (365 or 366 days): a day is 0.27 % longer in one
    # year than in the next, which drifts over a gap of weeks but keeps the grid
    dates = np.datetime64("1979-01-01") + days
    years = dates.astype("datetime64[Y]")
    length = ((years + 1).astype("datetime64[D]") - years.astype("datetime64[D]")).astype(float)
    decimal = 1970 + years.astype(float) + (dates - years.astype("datetime64[D]")).astype(float) / length
    assert set(length) == {365.0, 366.0} and np.diff(days).max() >= 20
    assert _period_low(decimal) == pytest.approx(2 / 365.0, rel=0.01)


def test_the_median_spacing_bounds_the_period_without_a_grid():
    rng = np.random.default_rng(1)
    # irregular times: no grid, whatever the smallest gap
    times = np.sort(rng.uniform(0, 100, size=200))
    assert _period_low(times) == pytest.approx(2 * np.median(np.diff(times)))
    # the first days of calendar months, in days (gaps of 28-31 days): not whole multiples of the shortest
    months = (np.datetime64("1990-01", "M") + np.arange(120)).astype("datetime64[D]").astype(float)
    gaps = np.diff(months)
    assert gaps.min() == 28 and np.median(gaps) == 31
    assert _period_low(months) == pytest.approx(62.0)
    # a regular series with one stray close pair: one short gap is not a grid
    hours = np.append(np.arange(500.0), 250.25)
    assert _period_low(hours) == pytest.approx(2.0)
    # whole multiples but the one-step gap rare (under 5 % of the gaps): the median counts
    sparse = np.cumsum(np.where(np.arange(400) % 40 == 0, 1.0, 5.0))
    assert _period_low(sparse) == pytest.approx(10.0)


def test_linear_defaults_one_column():
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    out = default_hyperparameters("LIN", (0,), s)
    init, (low, high) = out["offset"]
    np.testing.assert_allclose(init, [2.8])  # column mean
    np.testing.assert_allclose(low, [0.0 - 7.0])  # min - range
    np.testing.assert_allclose(high, [7.0 + 7.0])  # max + range
    v_init, v_bounds = out["variance"]
    assert v_init == pytest.approx(np.var(Y_KNOWN) / np.var(X_KNOWN[:, 0]))  # 2 / 5.76
    assert v_bounds == pytest.approx((1e-6 * v_init, 1e4 * v_init))


def test_linear_defaults_two_columns():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(15, 3)) * [1.0, 3.0, 0.5] + [0.0, -4.0, 2.0]
    y = rng.normal(size=15)
    s = DataSummary.from_data(X, y)
    out = default_hyperparameters("LIN", (2, 1), s)
    init, (low, high) = out["offset"]
    np.testing.assert_allclose(init, X[:, [2, 1]].mean(0))
    span = X[:, [2, 1]].max(0) - X[:, [2, 1]].min(0)
    np.testing.assert_allclose(low, X[:, [2, 1]].min(0) - span)
    np.testing.assert_allclose(high, X[:, [2, 1]].max(0) + span)
    # The linear term starts with prior variance var(y) on the data.
    assert out["variance"][0] == pytest.approx(np.var(y) / (X[:, 2].var() + X[:, 1].var()))


def test_linear_constant_column_falls_back_to_unit_scale():
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    out = default_hyperparameters("LIN", (1,), s)
    assert out["variance"][0] == pytest.approx(2.0)
    init, (low, high) = out["offset"]
    np.testing.assert_allclose([init[0], low[0], high[0]], [5.0, 4.0, 6.0])


def test_unit_amplitude():
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    assert unit_amplitude("LIN", (0,), s) == pytest.approx(1 / 5.76)
    assert unit_amplitude("LIN", (1,), s) == 1.0  # constant column
    for kind in ("SE", "RQ", "PER", "M12", "M32", "M52"):
        assert unit_amplitude(kind, (0,), s) == 1.0
    assert unit_amplitude("C", (), s) == 1.0


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in NO_COLUMNS])
def test_column_out_of_range_raises(kind):
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    with pytest.raises(ValueError, match="column 2"):
        default_hyperparameters(kind, (2,), s)
    with pytest.raises(ValueError, match="column"):
        default_hyperparameters(kind, (0, 5), s)


def test_unit_amplitude_column_out_of_range_raises():
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    with pytest.raises(ValueError, match="column"):
        unit_amplitude("LIN", (2,), s)


@pytest.mark.parametrize("kind", ["SE", "LIN"])
def test_negative_column_raises(kind):
    # A negative index would silently wrap around to the last column.
    s = DataSummary.from_data(X_KNOWN, Y_KNOWN)
    with pytest.raises(ValueError, match="column"):
        default_hyperparameters(kind, (-1,), s)


def test_a_series_looks_like_a_time_index():
    rng = np.random.default_rng(2)
    # months in decimal years, with a few missing
    months = 1949 + np.delete(np.arange(240), [17, 90, 91]) / 12.0
    # calendar months in days (28-31 days: no grid, but every gap near the median's whole multiples)
    calendar = (np.datetime64("1990-01", "M") + np.arange(120)).astype("datetime64[D]").astype(float)
    # a quarter of the days of four years (the shared births series): irregular gaps, on a grid of one day
    days = np.sort(rng.choice(4 * 365, size=365, replace=False)).astype(float)
    # hourly readings with a time recorded twice at 8 of 900 hours (the shared internet series: 0.9 %)
    hours = np.sort(np.append(np.arange(900.0), rng.choice(900, size=8, replace=False)))
    for values in (months, calendar, days, hours, np.array([3.0, 1.0, 2.0])):
        assert looks_like_time_index(values)
    assert looks_like_time_index(rng.permutation(months))  # the rows' order does not matter


def test_a_covariate_does_not_look_like_a_time_index():
    rng = np.random.default_rng(3)
    # incomes or doses drawn as they come: irregular gaps
    assert not looks_like_time_index(rng.lognormal(7.0, 0.5, size=235))
    assert not looks_like_time_index(rng.uniform(0, 10, size=300))
    # rounded to a grid, but repeated (a value shared by several measurements): 13 % of the values here
    rounded = np.round(rng.uniform(0, 10, size=300), 2)
    assert 1 - np.unique(rounded).size / rounded.size > 0.05
    assert not looks_like_time_index(rounded)
    # repeated runs of one experiment on a common clock (mcycle's crash tests): 3 runs of 50 times
    assert not looks_like_time_index(np.tile(np.arange(50.0), 3))
    # one value, or a series with a time recorded twice in 6 % of its rows
    assert not looks_like_time_index(np.ones(20))
    assert not looks_like_time_index(np.append(np.arange(100.0), np.arange(0.0, 100.0, 16.0)))
