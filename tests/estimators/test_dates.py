"""Date columns: measured in decimal years by the estimators, the inspection tools and the command line."""

import datetime as dt
import pickle
import re
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from conftest import estimator_checks
from skgpsearch import CompositionalGPClassifier, CompositionalGPRegressor, DecimalYears
from skgpsearch.datasets._dates import date_rule, decimal_years, with_decimal_years
from skgpsearch.inspection import describe, forecast_holdout


def _by_hand(moment):
    """Decimal years of a datetime by Python's own calendar: 1970 + days since 1970 / 365.25."""
    return 1970 + (moment - dt.datetime(1970, 1, 1)) / dt.timedelta(days=365.25)


def test_dates_are_decimal_years_by_the_calendar():
    rng = np.random.default_rng(0)
    seconds = rng.integers(0, 60 * 365 * 86400, size=200)
    moments = [dt.datetime(1960, 1, 1) + dt.timedelta(seconds=int(s)) for s in seconds]
    dates = np.array(moments, dtype="datetime64[us]")
    assert date_rule(dates) == "years"
    assert np.allclose(decimal_years(dates, "years"), [_by_hand(m) for m in moments], rtol=0, atol=1e-9)
    # one rate: a week is 7 / 365.25 in a leap year and in another, and a new year is within 18 hours of its integer
    weeks = decimal_years(np.array(["2016-02-25", "2016-03-03", "2017-02-25", "2017-03-04"], dtype="datetime64[D]"),
                          "years")
    assert np.allclose(np.diff(weeks)[[0, 2]], 7 / 365.25, rtol=0, atol=1e-12)
    new_years = decimal_years(np.arange("1950", "2030", dtype="datetime64[Y]").astype("datetime64[D]"), "years")
    assert np.max(np.abs(new_years - np.arange(1950, 2030))) <= 0.75 / 365.25 + 1e-12
    # the first of every month: the exact monthly grid; between, the elapsed share of the month
    months = np.array(pd.date_range("1999-11-01", periods=30, freq="MS"))
    assert date_rule(months) == "months"
    assert np.allclose(np.diff(decimal_years(months, "months")), 1 / 12, rtol=0, atol=1e-12)
    assert decimal_years(months, "months")[0] == pytest.approx(1999 + 10 / 12)
    mid = np.array(["2016-02-15T12:00"], dtype="datetime64[us]")
    assert decimal_years(mid, "months")[0] == pytest.approx(2016 + (1 + 14.5 / 29) / 12)
    assert date_rule(np.array(pd.date_range("1999-11-15", periods=3, freq="MS") + pd.Timedelta(days=14))) == "years"
    assert decimal_years(np.array(["1958-03-01"], dtype="datetime64[D]"), "months")[0] == pytest.approx(1958 + 2 / 12)
    # pandas periods by their start
    periods = pd.DataFrame({"quarter": pd.period_range("1969Q3", periods=4, freq="Q")})
    assert np.allclose(with_decimal_years(SimpleNamespace(), periods, reset=True)["quarter"],
                       [1969.5, 1969.75, 1970.0, 1970.25])
    assert np.isnan(decimal_years(np.array(["NaT", "2000-01-01"], dtype="datetime64[D]"), "years")[0])


def _monthly_series(n=48, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    frame = pd.DataFrame({"month": pd.date_range("2010-01-01", periods=n, freq="MS"), "other": rng.normal(size=n)})
    y = 0.05 * t + np.sin(2 * np.pi * t / 12) + 0.1 * rng.normal(size=n)
    return frame, y


def test_a_regressor_fitted_on_dates_measures_them_in_years():
    frame, y = _monthly_series()
    model = CompositionalGPRegressor(base_kernels=("SE", "PER", "LIN"), max_depth=2, change_operators=None,
                                     random_state=0).fit(frame[["month"]], y)
    assert model.date_columns_ == {0: "months"}
    assert np.allclose(model.X_train_[:, 0], 2010 + np.arange(48) / 12)
    period = next(leaf.params["period"] for leaf in model.structure_.leaves if leaf.name == "PER")
    assert period == pytest.approx(1.0, rel=0.05)  # a yearly cycle, in years
    future = pd.DataFrame({"month": pd.date_range("2014-01-01", periods=6, freq="MS")})
    # dates and the decimal years they stand for predict the same
    assert np.allclose(model.predict(future), model.predict(pd.DataFrame({"month": 2014 + np.arange(6) / 12})))
    text = describe(model)
    assert "`month` holds dates, measured in decimal years" in text
    assert re.search(r"period ≈ (1 year|0\.99\d years|1\.0\d years)", text)  # a duration, not a bare number
    for copy in (pickle.loads(pickle.dumps(model)),):
        assert np.allclose(copy.predict(future), model.predict(future))
    assert not hasattr(clone(model), "date_columns_")
    # a hold-out forecast orders the rows by their dates
    result = forecast_holdout(model, frame[["month"]], y, n_estimators=10)
    assert np.allclose(result["X_train"], 2010 + np.arange(result["n_train"]) / 12)
    assert result["axis_label"] == "month (decimal years)" and result["column"] == "month"


def test_dates_where_the_fit_saw_numbers_are_refused():
    frame, y = _monthly_series(24)
    numbers = pd.DataFrame({"month": 2010 + np.arange(24) / 12})
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, random_state=0).fit(numbers, y)
    assert model.date_columns_ == {}
    with pytest.raises(ValueError, match="'month' hold dates, which the model was fitted on as numbers"):
        model.predict(frame[["month"]])


def test_a_classifier_takes_time_zone_aware_dates_and_other_columns():
    frame, y = _monthly_series(60, seed=1)
    frame["month"] = frame["month"].dt.tz_localize("Europe/Zurich")
    labels = (y > np.median(y)).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CompositionalGPClassifier(max_depth=1, random_state=0).fit(frame, labels)
    # midnight in Zurich is 23:00 or 22:00 UTC of the day before: not one time of the month, so "years"
    assert model.date_columns_ == {0: "years"}
    # the dates stand for their decimal years in UTC, by Python's calendar
    utc = frame["month"].dt.tz_convert("UTC").dt.tz_localize(None)
    numbers = frame.assign(month=[_by_hand(moment.to_pydatetime()) for moment in utc])
    assert np.allclose(model.predict_proba(frame), model.predict_proba(numbers))
    converted = with_decimal_years(SimpleNamespace(), frame, reset=True)
    assert np.allclose(converted["month"], numbers["month"], rtol=0, atol=1e-9)
    assert converted["other"].equals(frame["other"])


@pytest.mark.parametrize("make", [CompositionalGPRegressor, CompositionalGPClassifier], ids=lambda m: m.__name__)
def test_reordered_columns_with_dates_get_scikit_learns_error_about_the_order(make):
    # (the date check ran first and said the dates had been fitted as numbers, which they had not)
    frame, y = _monthly_series(40)
    target = y if make is CompositionalGPRegressor else (y > np.median(y)).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make(max_depth=1, random_state=0).fit(frame, target)
    with pytest.raises(ValueError, match="Feature names must be in the same order as they were in fit"):
        model.predict(frame[["other", "month"]])
    numbers = frame.assign(month=2010 + np.arange(40) / 12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_numbers = make(max_depth=1, random_state=0).fit(numbers, target)
    with pytest.raises(ValueError, match="Feature names must be in the same order as they were in fit"):
        on_numbers.predict(frame[["other", "month"]])


def test_dates_as_python_objects_get_a_clear_error():
    X = np.array([[dt.date(2020, 1, day)] for day in range(1, 11)], dtype=object)
    with pytest.raises(ValueError, match="Column 0 of X holds dates as Python objects .* datetime64"):
        CompositionalGPRegressor(max_depth=1).fit(X, np.arange(10.0))


def test_dates_as_text_get_a_clear_error():
    frame, y = _monthly_series(24)
    text = frame[["month"]].astype(str)
    # numpy's "could not convert" had become advice to one-hot encode them
    with pytest.raises(ValueError, match=r"'month' of X holds text that reads as a date \('2010-01-01'\).*to_datetime"):
        CompositionalGPRegressor(max_depth=1).fit(text, y)
    model = CompositionalGPRegressor(base_kernels=("SE",), max_depth=1, random_state=0).fit(frame[["month"]], y)
    with pytest.raises(ValueError, match="reads as a date"):
        model.predict(pd.DataFrame({"month": ["2015-01"]}))
    with pytest.raises(ValueError, match="reads as a date"):
        DecimalYears().fit(frame[["month"]]).transform(pd.DataFrame({"month": ["2015-01-01 12:00"]}))
    # other text is still a column to encode
    with pytest.raises(ValueError, match="OneHotEncoder"):
        CompositionalGPRegressor(max_depth=1).fit(pd.DataFrame({"colour": ["red", "blue"] * 12}), y)


@pytest.mark.parametrize("make", [lambda d: pd.Series(d), lambda d: pd.DatetimeIndex(d), lambda d: d.to_numpy()],
                         ids=["Series", "DatetimeIndex", "array"])
@pytest.mark.parametrize("estimator", [CompositionalGPRegressor(), DecimalYears()], ids=lambda e: type(e).__name__)
def test_one_dimensional_dates_get_a_clear_error(make, estimator):
    # (a Series had raised pandas' "Too many indexers" from deep inside; an index, sklearn's 2-D error about the
    # decimal years it had become)
    dates = pd.date_range("2020-01-01", periods=30, freq="MS")
    with pytest.raises(ValueError, match=r"one-dimensional dates.*to_frame\(\)"):
        clone(estimator).fit(make(dates), np.arange(30.0))


def test_time_differences_get_a_clear_error():
    frame, y = _monthly_series(24)
    elapsed = pd.DataFrame({"elapsed": frame["month"] - frame["month"].iloc[0]})
    # they had been read as nanoseconds (lengthscales of 1e15)
    for X in (elapsed, elapsed.to_numpy()):
        with pytest.raises(ValueError, match=r"'elapsed' hold time differences|0 hold time differences"):
            CompositionalGPRegressor(max_depth=1).fit(X, y)
    with pytest.raises(ValueError, match="total_seconds"):
        DecimalYears().fit(elapsed)


def test_periods_and_lengthscales_on_dates_are_described_as_durations():
    from skgpsearch.grammar import Base
    from skgpsearch.inspection._describe import describe_term

    weekly = Base("PER", 0, {"variance": 1.0, "lengthscale": 1.0, "period": 7 / 365.25})
    smooth = Base("SE", 0, {"variance": 1.0, "lengthscale": 0.5})
    assert "period ≈ 7 days" in describe_term(weekly, ["day"], dates={0})
    assert "period ≈ 0.0192" in describe_term(weekly, ["day"])  # a number column keeps its own units
    assert "lengthscale ≈ 6 months" in describe_term(smooth, ["day"], dates={0})
    text = describe_term(weekly * Base("SE", 0, {"variance": 1.0, "lengthscale": 2.0}), ["day"], dates={0})
    assert "period ≈ 7 days" in text and "over ≈ 2 years" in text and "in units of" not in text


def test_periods_on_a_date_column_the_gp_saw_standardised_are_still_durations_in_years():
    # (with warped inputs the period of the standardised column, 0.577, had been read as years: "6.92 months")
    frame, _ = _monthly_series()
    y = np.sin(2 * np.pi * np.arange(48) / 12) + 0.1 * np.random.default_rng(0).normal(size=48)
    model = CompositionalGPRegressor(base_kernels=("PER",), max_depth=1, change_operators=None, warp_inputs=True,
                                     baseline_models=False, random_state=0).fit(frame[["month"]], y)
    transformer = model.input_transformer_
    assert transformer.lambdas_[0] == 1.0 and transformer.spread_[0] * transformer.scale_[0] != pytest.approx(1.0)
    period = next(leaf.params["period"] for leaf in model.structure_.leaves if leaf.name == "PER")
    in_years = period * transformer.spread_[0] * transformer.scale_[0]
    assert in_years == pytest.approx(1.0, rel=0.05)  # the planted yearly cycle
    text = describe(model)
    assert re.search(r"period ≈ (1 year|0\.9\d+ years|1\.0\d* years)", text)
    assert "(`structure_`, `kernel_`) are on it as the GP saw it, standardised" in text
    assert "(but on dates: see Dates)" in text


def test_lengths_on_a_power_transformed_date_column_stay_in_its_warped_units():
    from skgpsearch.inspection._describe import _date_lines, _dates

    transformer = SimpleNamespace(spread_=np.array([2.0, 3.0]), scale_=np.array([0.5, 4.0]),
                                  lambdas_=np.array([1.0, 0.4]))
    model = SimpleNamespace(date_columns_={0: "months", 1: "years"}, input_transformer_=transformer)
    assert _dates(model) == {0: 1.0}  # the standardised column: 2 x 0.5 years per unit; the warped one: none
    line = _date_lines(model, ["start", "end"])[0]
    assert "on `start` are given as durations, on the others in their warped units" in line
    assert _dates(SimpleNamespace(date_columns_={0: "months"})) == {0: 1.0}


@pytest.mark.parametrize("estimator", [CompositionalGPRegressor(max_depth=1), CompositionalGPClassifier(max_depth=1)],
                         ids=lambda e: type(e).__name__)
def test_missing_dates_get_an_error_naming_their_column(estimator):
    # (they had become NaN, and the error spoke of a NaN the user never gave)
    frame, y = _monthly_series(30)
    frame.loc[5, "month"] = pd.NaT
    target = y if isinstance(estimator, CompositionalGPRegressor) else (y > np.median(y)).astype(int)
    with pytest.raises(ValueError, match=r"missing dates \(NaT\) in column\(s\) 'month' \(1\): drop those rows"):
        clone(estimator).fit(frame, target)
    # the transformer leaves them to a later step of a pipeline, as documented
    assert np.isnan(DecimalYears().fit_transform(frame)[5, 0])


@estimator_checks(fast=[DecimalYears()])
def test_decimal_years_passes_the_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_decimal_years_transformer_measures_dates_as_the_estimators_do():
    frame, y = _monthly_series(36, seed=2)
    frame["day"] = pd.date_range("2011-03-05", periods=36, freq="W")
    step = DecimalYears().fit(frame)
    assert step.date_columns_ == {0: "months", 2: "years"}
    out = step.transform(frame)
    assert out.dtype == np.float64 and out.shape == (36, 3)
    assert np.allclose(out[:, 0], 2010 + np.arange(36) / 12)
    assert np.allclose(out[:, 2], [_by_hand(moment.to_pydatetime()) for moment in frame["day"]], rtol=0, atol=1e-9)
    assert np.array_equal(out[:, 1], frame["other"].to_numpy())
    assert list(step.get_feature_names_out()) == ["month", "other", "day"]
    # the rules are the fit's: later dates in the middle of a month keep the monthly grid's rule
    later = frame.iloc[:1].assign(month=pd.Timestamp("2020-06-16"))
    assert step.transform(later)[0, 0] == pytest.approx(2020 + (5 + 15 / 30) / 12)
    with pytest.raises(ValueError, match="'other' hold dates, which the model was fitted on as numbers"):
        step.transform(frame.assign(other=frame["day"]))


def test_kernel_search_cv_asks_for_decimal_years_and_reads_periods_in_years_with_them():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.pipeline import make_pipeline

    from skgpsearch import KernelSearchCV

    frame, y = _monthly_series(48, seed=3)
    y = y - 0.05 * np.arange(48)  # the yearly cycle alone
    with pytest.raises(ValueError, match="'month' of X hold dates.*DecimalYears"):
        KernelSearchCV(GaussianProcessRegressor(), max_depth=1).fit(frame[["month"]], y)
    pipeline = make_pipeline(DecimalYears(), GaussianProcessRegressor(normalize_y=True))
    search = KernelSearchCV(pipeline, kernels=[_yearly_cycle()], kernel_param="gaussianprocessregressor__kernel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(frame[["month"]], y)
    period = search.best_kernel_.get_params()["k1__periodicity"]
    assert period == pytest.approx(1.0, abs=0.02)  # the yearly cycle, in years
    assert search.predict(frame[["month"]]).shape == (48,)


def _yearly_cycle():
    from sklearn.gaussian_process.kernels import ExpSineSquared, WhiteKernel

    return ExpSineSquared(length_scale=1.0, periodicity=1.1, periodicity_bounds=(0.5, 2.0)) + WhiteKernel(0.1)
