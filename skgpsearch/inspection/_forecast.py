"""A time-ordered hold-out forecast: fit on the first part of a series, forecast the rest.

Shuffled cross-validation asks how well a model fills gaps; for a series the question is
how well it forecasts, and only a split in time answers it. :func:`forecast_holdout`
refits the chosen model on the earliest rows and scores its forecast of the latest rows
against a RandomForest, the last observed value, the naive forecast with drift and a straight line.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from sklearn.base import clone, is_classifier

from .._search._regression import forecast_split
from ..grammar import FixedStructureGrammar
from ._decompose import axis_label, check_rows, feature_names_of, label_input_axis, numeric_inputs, table_row
from ._views import check_fitted_search_estimator

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["forecast_holdout", "forecast_table", "naive_with_drift", "plot_forecast", "refit_copy"]

#: The fewest training rows a hold-out forecast fits on.
MIN_FORECAST_TRAINING_ROWS = 5
#: Two-sided 95 % quantile of the standard normal.
Z95 = float(stats.norm.ppf(0.975))


def refit_copy(estimator: Any, refit: str) -> Any:
    """An unfitted copy that refits the chosen structure (``"structure"``) or reruns the search (``"search"``)."""
    if refit not in ("structure", "search"):
        raise ValueError(f"refit must be 'structure' or 'search', got {refit!r}.")
    copy = clone(estimator)
    if refit == "search":
        return copy.set_params(verbose=0)
    # the estimator's own default base kernels: the fixed grammar brings the kernels, and no warning is due
    default_kernels = type(estimator)().get_params()["base_kernels"]
    return copy.set_params(grammar=FixedStructureGrammar(estimator.structure_), max_depth=1, verbose=0,
                           base_kernels=default_kernels)


def forecast_holdout(
    estimator: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    holdout: float = 0.2,
    refit: str = "structure",
    n_estimators: int = 500,
    random_state: int | np.random.RandomState | None = 0,
    n_jobs: int | None = None,
    feature_names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Fit on the earliest rows of a series, forecast the latest, and score the forecast.

    The rows are ordered by the single input column (a time index); the last
    ``holdout`` fraction is held out. The GP (the chosen structure refitted, or
    the whole search rerun), a RandomForest, the last observed value, the
    last value plus the mean step (the naive forecast with drift) and a
    least-squares straight line are fitted on the earlier rows and scored on
    the held-out ones.

    Parameters
    ----------
    estimator : fitted CompositionalGPRegressor with one input column
    X, y : array-like
        The series (normally the training data of ``estimator``), in any row order.
    holdout : float, default=0.2
        Fraction of the rows, the latest, to forecast (at least one row).
    refit : {"structure", "search"}, default="structure"
        As in :func:`compare_with_random_forest`: ``"structure"`` refits the
        chosen structure's hyperparameters on the earlier rows (the structure
        itself was chosen on all rows, which favours the GP slightly);
        ``"search"`` reruns the whole search on them.
    n_estimators : int, default=500
        Trees of the RandomForest.
    random_state : int, default=0
    n_jobs : int, optional
        Workers of the RandomForest.
    feature_names : sequence of str, optional
        The input column's name; by default ``feature_names_in_``.

    Returns
    -------
    dict
        ``"rows"``: one dict per method with ``"method"``, ``"RMSE"``, ``"MNLP"``
        (mean negative log predictive density; NaN for a method without a
        predictive distribution or with Student-t noise) and ``"coverage"`` (the
        fraction of held-out values inside the 95 % predictive interval; NaN
        likewise), and ``"seconds"``; ``"split_at"`` (the last training input),
        ``"n_train"``, ``"n_test"``, ``"refit"``, ``"column"``; and for plotting
        ``"X_train"``, ``"y_train"``, ``"X_test"``, ``"y_test"``, ``"mean"``,
        ``"std"`` (the GP's predictive standard deviation of a new observation)
        and ``"axis_label"`` (the column's name, with "(decimal years)" for dates).
    """
    check_fitted_search_estimator(estimator, "forecast_holdout")
    if is_classifier(estimator):
        raise ValueError("A hold-out forecast is for regression; this estimator is a classifier.")
    if estimator.n_features_in_ != 1:
        raise ValueError(f"A hold-out forecast needs one input column (a time index); the estimator has "
                         f"{estimator.n_features_in_}.")
    if not 0 < holdout < 1:
        raise ValueError(f"holdout must be a fraction between 0 and 1, got {holdout!r}.")
    check_rows(X, y, "forecast_holdout")
    names = feature_names_of(estimator, feature_names)
    frame = hasattr(X, "iloc")
    x = numeric_inputs(estimator, X).reshape(len(y), -1)[:, 0]
    y = np.asarray(y, dtype=float)
    train, test = forecast_split(x, holdout)
    n_test = test.size
    if train.size < MIN_FORECAST_TRAINING_ROWS:
        raise ValueError(f"A hold-out forecast needs at least {MIN_FORECAST_TRAINING_ROWS} training rows before "
                         f"the {n_test} held-out ones; the series has {len(y)} rows.")
    # the model's own inputs (dates stay dates): the refit measures them as the model does
    rows_of = (lambda idx: X.iloc[idx]) if frame else (lambda idx: np.asarray(X).reshape(len(y), -1)[idx])
    results = []

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the refit's own diagnostics belong to another model
        gp = refit_copy(estimator, refit).fit(rows_of(train), y[train])
    mean, std = gp.predict(rows_of(test), return_std=True)
    gaussian = getattr(gp, "degrees_of_freedom_", None) is None
    label = (f"GP {estimator.structure_.to_string(names)}" if refit == "structure" else "GP structure search")
    results.append(_scores(label, y[test], mean, std if gaussian else None, time.perf_counter() - start))

    from sklearn.ensemble import RandomForestRegressor  # heavy; most users never build a report

    start = time.perf_counter()
    forest = RandomForestRegressor(n_estimators=n_estimators, random_state=random_state, n_jobs=n_jobs)
    forest.fit(x[train, np.newaxis], y[train])
    results.append(_scores(f"RandomForest ({n_estimators} trees)", y[test], forest.predict(x[test, np.newaxis]),
                           None, time.perf_counter() - start))

    last = np.full(n_test, y[train][-1])
    steps = np.diff(y[train])
    # a random walk's h-step forecast spreads as sqrt(h) times the step's spread
    walk_sd = np.std(steps) * np.sqrt(np.arange(1, n_test + 1)) if len(steps) > 1 else None
    results.append(_scores("last observed value", y[test], last, walk_sd, 0.0))

    drift_mean, drift_sd = naive_with_drift(y[train], n_test)  # (MIN_FORECAST_TRAINING_ROWS values at least)
    results.append(_scores("last value plus the mean step (naive with drift)", y[test], drift_mean, drift_sd, 0.0))

    line_mean, line_scale, line_dof = straight_line_forecast(x[train], y[train], x[test])
    results.append(_scores("straight line (least squares)", y[test], line_mean, line_scale, 0.0, line_dof))
    return {
        "rows": results,
        "split_at": float(x[train][-1]),
        "n_train": len(train),
        "n_test": n_test,
        "refit": refit,
        "column": names[0],
        "axis_label": axis_label(estimator, names, 0),
        "X_train": x[train],
        "y_train": y[train],
        "X_test": x[test],
        "y_test": y[test],
        "mean": mean,
        "std": std,
    }


def naive_with_drift(y_train: np.ndarray, n_ahead: int) -> tuple[np.ndarray, np.ndarray]:
    """The naive forecast with drift of the next ``n_ahead`` values of a series, and its standard deviations.

    The last value plus h times the mean step; the steps' spread σ gives the h-step
    standard deviation σ √(h (1 + h / (T − 1))) of T training values: the walk's own
    h σ² plus the estimated drift's h² σ² / (T − 1) (Hyndman & Athanasopoulos,
    *Forecasting: Principles and Practice*, §5.5). At least three training values.
    """
    y_train = np.asarray(y_train, dtype=float)
    if y_train.size < 3:
        raise ValueError(f"The naive forecast with drift needs at least 3 values, got {y_train.size}.")
    steps = np.diff(y_train)
    horizon = np.arange(1, n_ahead + 1)
    mean = y_train[-1] + horizon * steps.mean()
    return mean, steps.std(ddof=1) * np.sqrt(horizon * (1.0 + horizon / steps.size))


def straight_line_forecast(x_train, y_train, x_new):
    """The least-squares line's forecast at ``x_new``: (means, scales, degrees of freedom) of its Student-t
    prediction intervals.

    The scale s √(1 + 1/T + (x − x̄)² / Sxx) counts the fitted intercept's and
    slope's uncertainty besides the noise's s (T − 2 degrees of freedom). With
    s alone and a normal quantile, a line fitted to 8 values of a true line covered
    76 % of its 95 % intervals.
    """
    x_train, y_train, x_new = (np.asarray(v, dtype=float) for v in (x_train, y_train, x_new))
    slope, intercept = np.polyfit(x_train, y_train, 1)
    dof = x_train.size - 2
    residual_sd = np.sqrt(np.sum((y_train - (slope * x_train + intercept)) ** 2) / dof)
    centre = x_train.mean()
    leverage = 1.0 / x_train.size + (x_new - centre) ** 2 / np.sum((x_train - centre) ** 2)
    return slope * x_new + intercept, residual_sd * np.sqrt(1.0 + leverage), dof


def _scores(method, truth, mean, std, seconds, dof=None):
    """RMSE, MNLP and the coverage of the 95 % interval of a forecast: normal with standard deviations ``std``, or
    Student-t with ``dof`` degrees of freedom and scales ``std``."""
    row = {"method": method, "RMSE": float(np.sqrt(np.mean((truth - mean) ** 2))), "MNLP": np.nan,
           "coverage": np.nan, "seconds": seconds}
    if std is not None and np.all(np.isfinite(std)) and np.all(std > 0):
        if dof is None:
            row["MNLP"] = float(-np.mean(stats.norm.logpdf(truth, mean, std)))
            row["coverage"] = float(np.mean(np.abs(truth - mean) <= Z95 * std))
        else:
            row["MNLP"] = float(-np.mean(stats.t.logpdf(truth, dof, mean, std)))
            row["coverage"] = float(np.mean(np.abs(truth - mean) <= stats.t.ppf(0.975, dof) * std))
    return row


def forecast_table(forecast: Mapping[str, Any]) -> str:
    """The hold-out forecast's scores as a markdown table."""
    lines = ["| method | forecast RMSE | MNLP | inside the 95 % interval |", "|---|---|---|---|"]
    for row in forecast["rows"]:
        mnlp = "-" if np.isnan(row["MNLP"]) else f"{row['MNLP']:.3g}"
        coverage = "-" if np.isnan(row["coverage"]) else f"{100 * row['coverage']:.0f} %"
        lines.append(table_row([row["method"], f"{row['RMSE']:.4g}", mnlp, coverage]))
    return "\n".join(lines)


def plot_forecast(forecast: Mapping[str, Any], *, target_name: str | None = None) -> Figure:
    """The hold-out forecast: the training part, the GP's forecast with its 95 % interval, and the held-out truth.

    Parameters
    ----------
    forecast : dict
        A result of :func:`forecast_holdout`.
    target_name : str, optional
        The target's name for the axis label.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ._plots import _figure

    fig = _figure()
    ax = fig.add_subplot()
    x, mean, half = forecast["X_test"], forecast["mean"], Z95 * forecast["std"]
    ax.scatter(forecast["X_train"], forecast["y_train"], s=5, c="k", label="training part")
    ax.fill_between(x, mean - half, mean + half, alpha=0.25, label="95 % predictive interval")
    ax.plot(x, mean, lw=1.5, label="GP forecast")
    ax.scatter(x, forecast["y_test"], s=8, c="C3", label="held out")
    ax.axvline(forecast["split_at"], c="0.5", lw=1, ls="--")
    label_input_axis(ax, "x", forecast.get("axis_label", forecast["column"]))
    ax.set_ylabel(target_name or "target")
    ax.legend(loc="best", fontsize="small")
    ax.set_title(f"Forecast of the last {forecast['n_test']} rows from the first {forecast['n_train']}",
                 fontsize="medium")
    return fig
