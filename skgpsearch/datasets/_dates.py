"""Date columns as numbers: decimal years, so that periods and lengthscales read in years.

A Gaussian process needs numbers, and scikit-learn's validation silently
turns a ``datetime64`` column into micro- or nanoseconds since 1970, in
which a yearly cycle has a period of about 3e13. The estimators instead
measure a date column in decimal years (2015.5 is the middle of 2015), by
one of two rules chosen when the model is fitted and kept for every later
call (``date_columns_``):

- ``"months"``: when every training date is the start of a month (monthly, quarterly
  or yearly data given as ``2015-03`` or ``2015-03-01``), year + (month − 1) / 12: an
  exact grid, as the classic monthly series (Mauna Loa, airline) are given; a later
  date within a month adds the elapsed share of that month, over 12;
- ``"years"``: otherwise, 1970 + the time since 1970 in years of 365.25 days
  (daily or irregular data). Time runs at one rate, so a weekly cycle has the
  same period, 7 / 365.25, in every year; calendar years of 365 and 366 days would
  bend the time axis at each new year and shift a sharp weekly pattern by up to a
  day. A new year falls within 18 hours of its integer.

Time-zone-aware dates are measured in UTC, and pandas periods (``2015-03``
as a monthly period) by their start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["column_labels", "date_columns", "date_rule", "decimal_years", "with_decimal_years"]

#: The year of the "years" rule: 365.25 days.
JULIAN_YEAR = np.timedelta64(365 * 86400 * 10**6 + 6 * 3600 * 10**6, "us")


def date_rule(dates: np.ndarray) -> str:
    """``"months"`` when all ``dates`` (datetime64) are starts of months, else ``"years"``."""
    dates = np.asarray(dates)
    dates = dates[~np.isnat(dates)].astype("datetime64[us]")
    return "months" if np.all(dates.astype("datetime64[M]").astype(dates.dtype) == dates) else "years"


def decimal_years(dates: np.ndarray, rule: str) -> np.ndarray:
    """``dates`` (datetime64) as decimal years under ``rule`` (see the module docstring); NaT gives NaN."""
    dates = np.asarray(dates)
    missing = np.isnat(dates)
    dates = np.where(missing, np.datetime64("1970-01-01"), dates).astype("datetime64[us]")
    if rule == "months":
        months = dates.astype("datetime64[M]")  # whole months since January 1970
        start = months.astype("datetime64[us]")
        elapsed = (dates - start) / ((months + 1).astype("datetime64[us]") - start)
        out = 1970 + (months.astype(np.int64) + elapsed) / 12.0
    else:
        out = 1970 + (dates - np.datetime64("1970-01-01", "us")) / JULIAN_YEAR
    return np.where(missing, np.nan, out.astype(np.float64))


def with_decimal_years(estimator: Any, X: Any, reset: bool, allow_missing: bool = False) -> Any:
    """``X`` with its date columns as decimal years; at fit (``reset``) their rules go to ``estimator.date_columns_``.

    A DataFrame keeps its other columns and its column names; a ``datetime64``
    array becomes a float array. Anything else is returned as it is (the
    estimator's validation then judges it). After fit, numbers in a date
    column are taken as decimal years already (the inspection tools predict on
    grids of them); dates in a column the fit saw as numbers are a ``ValueError``.
    A missing date (NaT) becomes NaN with ``allow_missing``, else it is a
    ``ValueError`` naming its column (the NaN would be reported as one the user never gave).
    """
    durations = _columns_where(X, _is_duration_dtype)
    if durations:
        raise ValueError(f"column(s) {column_labels(X, durations)} hold time differences (timedelta64), whose unit "
                         "the model cannot guess: convert them to numbers in the unit you mean, e.g. "
                         "column.dt.total_seconds() / 86400 for days, or pass the dates themselves (measured in "
                         "decimal years).")
    columns = date_columns(X)
    if columns and np.ndim(X) == 1:
        raise ValueError("X is one-dimensional dates; the estimator takes a table with one row per sample: pass "
                         "series.to_frame() for a pandas Series or index, or dates.reshape(-1, 1) for an array.")
    names = getattr(estimator, "feature_names_in_", None)
    if not reset and names is not None and hasattr(X, "columns") and [str(c) for c in X.columns] != list(names):
        return X  # other columns, or in another order: the estimator's validation says so, naming them
    if reset:
        estimator.date_columns_ = {index: date_rule(_column(X, index)) for index in columns}
    fitted = getattr(estimator, "date_columns_", None) or {}
    unknown = [index for index in columns if index not in fitted]
    # (with another number of columns the estimator's validation says what is wrong)
    if unknown and _n_columns(X) == getattr(estimator, "n_features_in_", None):
        raise ValueError(f"column(s) {column_labels(X, unknown)} hold dates, which the model was fitted on as numbers: "
                         "give them as they were given to fit (or fit on the dates).")
    columns = [index for index in columns if index in fitted]
    if not columns:
        return X
    missing = [(index, int(np.isnat(_column(X, index)).sum())) for index in columns] if not allow_missing else []
    missing = [(index, count) for index, count in missing if count]
    if missing:
        counts = ", ".join(f"{column_labels(X, [index])} ({count})" for index, count in missing)
        raise ValueError(f"X has missing dates (NaT) in column(s) {counts}: drop those rows or fill the dates in "
                         "(e.g. with pandas' interpolate), as a Gaussian process needs every input.")
    if hasattr(X, "columns"):
        converted = X.copy()
        for index in columns:
            converted.isetitem(index, decimal_years(_column(X, index), fitted[index]))
        return converted
    table = np.asarray(X)
    return np.column_stack([decimal_years(table[:, j], fitted[j]) for j in range(table.shape[1])]) \
        if table.ndim == 2 else decimal_years(table, fitted[0])


def date_columns(X):
    """Indices of the columns of ``X`` that hold dates (datetime64, or time-zone-aware dates in a DataFrame)."""
    return _columns_where(X, _is_date_dtype)


def _columns_where(X, holds):
    """Indices of the columns of ``X`` whose dtype ``holds(dtype)`` says yes to (an array's one dtype for all)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "columns"):
        return [j for j, dtype in enumerate(dtypes) if holds(dtype)]
    dtype = getattr(X, "dtype", None)
    if dtype is not None and holds(np.dtype(dtype)):
        return list(range(X.shape[1])) if np.ndim(X) == 2 else [0]
    return []


def _is_duration_dtype(dtype):
    return getattr(dtype, "kind", None) == "m"


def _is_date_dtype(dtype):
    if getattr(dtype, "kind", None) == "M":
        return True
    return type(dtype).__name__ in ("DatetimeTZDtype", "PeriodDtype")


def _column(X, index):
    """Column ``index`` of ``X`` as naive datetime64 (a time-zone-aware column in UTC)."""
    if hasattr(X, "iloc"):
        column = X.iloc[:, index]
        if type(column.dtype).__name__ == "PeriodDtype":
            column = column.dt.to_timestamp()  # a period by its start: 2015-03 is 1 March 2015
        if getattr(column.dtype, "tz", None) is not None:
            column = column.dt.tz_convert("UTC").dt.tz_localize(None)
        return column.to_numpy(dtype="datetime64[us]")
    table = np.asarray(X)
    return table[:, index] if table.ndim == 2 else table


def _n_columns(X):
    return X.shape[1] if np.ndim(X) == 2 else 1


def column_labels(X, indices):
    names = list(X.columns) if hasattr(X, "columns") else None
    return ", ".join(repr(names[j]) if names is not None else str(j) for j in indices)
