"""DecimalYears: date columns as decimal years, as a scikit-learn transformer for any estimator."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._validation import validate_numeric_data

__all__ = ["DecimalYears"]


class DecimalYears(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Measure date columns in decimal years; other columns pass through unchanged.

    :class:`CompositionalGPRegressor` and :class:`CompositionalGPClassifier`
    do this themselves. Put this step before any other estimator that should
    read dates in years, for example scikit-learn's Gaussian processes
    searched by :class:`KernelSearchCV` (scikit-learn's own validation would
    read a ``datetime64`` column as micro- or nanoseconds since 1970, where a
    yearly cycle has a period of about 3e13).

    The rule of each date column is chosen at ``fit`` and kept
    (``date_columns_``): when every date is the start of a month,
    year + (month - 1) / 12 (2015-03-01 is 2015.1667, the grid of the classic
    monthly series); otherwise 1970 + the time since 1970 in years of 365.25
    days. Time-zone-aware dates are measured in UTC, pandas periods by their
    start; missing dates (NaT) become NaN.

    Attributes
    ----------
    date_columns_ : dict of int to {"months", "years"}
        Each date column's index and rule.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    Examples
    --------
    >>> import pandas as pd
    >>> from skgpsearch import DecimalYears
    >>> X = pd.DataFrame({"month": pd.date_range("2015-01-01", periods=3, freq="MS"), "price": [1.0, 2.0, 3.0]})
    >>> DecimalYears().fit_transform(X).round(4).tolist()
    [[2015.0, 1.0], [2015.0833, 2.0], [2015.1667, 3.0]]
    """

    def fit(self, X: ArrayLike, y: Any = None) -> DecimalYears:
        """Choose each date column's rule.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : object
        """
        validate_numeric_data(self, X, ensure_all_finite="allow-nan")
        return self

    def transform(self, X: ArrayLike) -> np.ndarray:
        """``X`` as floats, its date columns in decimal years.

        After ``fit``, numbers in a date column are taken as decimal years
        already; dates in a column ``fit`` saw as numbers are a ``ValueError``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        X_years : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        return validate_numeric_data(self, X, ensure_all_finite="allow-nan", reset=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags
