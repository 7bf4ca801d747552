"""Validation of estimator inputs: numeric columns, dates measured in decimal years, clear errors for the rest."""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
from sklearn.utils.validation import validate_data

from ..datasets._dates import with_decimal_years

__all__ = ["is_number", "validate_numeric_data"]


def validate_numeric_data(estimator: Any, X: Any, y: Any = "no_validation", **kwargs: Any) -> Any:
    """``validate_data`` whose error for a non-numeric column names the column and says to encode it.

    numpy's own message ("could not convert string to float: 'a'") does not
    say which column; the column is named as in a DataFrame, else by index.
    Date columns are measured in decimal years first (see ``_dates``), by the
    rules that fit chose (``date_columns_``).
    """
    X = with_decimal_years(estimator, X, reset=kwargs.get("reset", True),
                           allow_missing=kwargs.get("ensure_all_finite", True) == "allow-nan")
    try:
        validated = validate_data(estimator, X, y, dtype=np.float64, **kwargs)
    except (TypeError, ValueError) as error:
        # numpy's words for text it cannot read as a number (the last for a string dtype, e.g. a categorical
        # column beside a boolean one)
        if not any(words in str(error) for words in ("could not convert", "float() argument", "Cannot cast")):
            raise
        column, value = _first_non_numeric(X)
        if column is None:
            raise
        if isinstance(value, (datetime.date, np.datetime64)):
            raise ValueError(
                f"Column {column!r} of X holds dates as Python objects ({value!r}); give them as datetime64 "
                "(e.g. pandas.to_datetime), which the estimator measures in decimal years."
            ) from None
        if isinstance(error, TypeError):
            raise  # numpy's own error for an object that is no number (what scikit-learn's checks expect)
        if _reads_as_date(value):
            raise ValueError(
                f"Column {column!r} of X holds text that reads as a date ({value!r}); convert it to datetime64 "
                "(e.g. pandas.to_datetime), which the estimator measures in decimal years."
            ) from None
        raise ValueError(
            f"Column {column!r} of X is not numeric (it holds {value!r}); a Gaussian process needs numbers: "
            "encode it first, e.g. with sklearn.preprocessing.OneHotEncoder or OrdinalEncoder in a Pipeline."
        ) from None
    if kwargs.get("y_numeric") and not (isinstance(y, str) and y == "no_validation"):
        X_valid, y_valid = validated
        return X_valid, _numeric_targets(y_valid)
    return validated


def _numeric_targets(y: np.ndarray) -> np.ndarray:
    """Regression targets as floats; a clear error for text such as class labels.

    (``validate_data(y_numeric=True)`` converts object arrays only: an array of
    strings would fail later inside numpy's reductions.)"""
    if y.dtype.kind in "iuf":
        return y
    try:  # booleans become 0 and 1, as scikit-learn's regressors take them (numpy cannot subtract booleans)
        return y.astype(np.float64)
    except (TypeError, ValueError):
        example = next((value for value in y.ravel() if not is_number(value)), y.ravel()[0])
        raise ValueError(
            f"y holds values that are not numbers (such as {str(example)!r}); a regressor needs numeric targets: "
            "convert them, or use CompositionalGPClassifier for class labels."
        ) from None


def _reads_as_date(value: Any) -> bool:
    """Whether ``value`` is text in an ISO date form numpy reads (``2015-03-01``, ``2015-03``, with a time)."""
    if not isinstance(value, str) or "-" not in value:
        return False
    try:
        np.datetime64(value.strip())
    except ValueError:
        return False
    return True


def is_number(value: Any) -> bool:
    """Whether ``float(value)`` reads ``value`` as a number."""
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _first_non_numeric(X: Any) -> tuple[Any, Any]:
    """(name or index, value) of the first column with a value that is not a number; (None, None) if none."""
    names = list(X.columns) if hasattr(X, "columns") else None
    table = np.asarray(X, dtype=object)
    if table.ndim != 2:
        return None, None
    for j in range(table.shape[1]):
        try:
            table[:, j].astype(np.float64)
        except (TypeError, ValueError):
            # (the error path only: find the value to show)
            value = next((value for value in table[:, j] if not is_number(value)), None)
            if value is not None:
                return (names[j] if names is not None else j), value
    return None, None
